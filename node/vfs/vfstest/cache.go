package vfstest

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// DropCache writes path back and drops its pages from the page cache
// (posix_fadvise DONTNEED), for tests of reads that must not wait for the
// disk. It reports whether the pages are gone: not on tmpfs, which keeps
// them, nor on kernels without cachestat(2) to tell.
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
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		tb.Fatal(err)
	}
	fi, err := f.Stat()
	if err != nil {
		tb.Fatal(err)
	}
	var st unix.Cachestat_t
	if err := unix.Cachestat(uint(f.Fd()), &unix.CachestatRange{Len: uint64(fi.Size())}, &st, 0); err != nil {
		return false
	}
	return st.Cache == 0
}
