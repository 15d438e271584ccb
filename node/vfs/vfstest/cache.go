package vfstest

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// DropCache writes path back and drops its pages from the page cache
// (posix_fadvise DONTNEED), for tests of reads that must not wait for the
// disk. It reports whether the pages are gone: not on tmpfs, which keeps
// them, nor on kernels without cachestat(2) to tell. Pages still being
// read in (the readahead of an earlier read) are not dropped until their
// I/O completes, so it asks again until they are, for at most dropWait.
func DropCache(tb testing.TB, path string) bool {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		tb.Fatal(err)
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &sfs); err != nil || sfs.Type == unix.TMPFS_MAGIC || sfs.Type == unix.RAMFS_MAGIC {
		return false
	}
	fi, err := f.Stat()
	if err != nil {
		tb.Fatal(err)
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(dropWait)
	for {
		if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			tb.Fatal(err)
		}
		var st unix.Cachestat_t
		if err := unix.Cachestat(uint(f.Fd()), &unix.CachestatRange{Len: uint64(fi.Size())}, &st, 0); err != nil {
			return false
		}
		if st.Cache == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
}

// dropWait bounds DropCache's wait for pages under I/O.
const dropWait = 5 * time.Second
