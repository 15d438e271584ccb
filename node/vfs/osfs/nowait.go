package osfs

import (
	"io"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/smbcluster/smbcluster/node/vfs"
)

// ReadAtNoWait reads with preadv2(RWF_NOWAIT), which fails with EAGAIN
// instead of waiting for the disk. A short count is either the end of the
// file or the first uncached page: a second call tells which. On tmpfs and
// ramfs, which never wait for a disk, it reads with plain preadv2, and on
// filesystems without RWF_NOWAIT (the file remembers it) as ReadAt does.
//
// Its calls cannot wait for a disk, so they are made with RawSyscall: the
// caller is the server's read loop, and the runtime's syscall bookkeeping
// would wake its sysmon thread (see node/sockio).
func (f *file) ReadAtNoWait(p []byte, off int64) (int, error) {
	if f.isDir || !f.read || off < 0 || f.noWait.Load() {
		return f.ReadAt(p, off)
	}
	flags := unix.RWF_NOWAIT
	if f.fs.inMemory {
		flags = 0
	}
	fd := f.f.Fd() // the share layer holds the open until the call returns
	n := 0
	for n < len(p) {
		m, err := preadRaw(fd, p[n:], off+int64(n), flags)
		switch {
		case err == unix.EAGAIN:
			return 0, vfs.ErrWouldBlock
		case err == unix.EOPNOTSUPP || err == unix.EINVAL:
			f.noWait.Store(true) // no RWF_NOWAIT here: do not ask again
			return f.ReadAt(p, off)
		case err == unix.EINTR:
			continue
		case err != nil:
			return n, f.pathErr("read", err)
		case m == 0:
			if n == 0 && len(p) > 0 {
				return 0, io.EOF
			}
			return n, nil
		}
		n += m
	}
	return n, nil
}

// preadRaw is one preadv2(fd, {p}, off, flags) without the allocation of
// unix.Preadv2's iovec slice.
func preadRaw(fd uintptr, p []byte, off int64, flags int) (int, error) {
	iov := unix.Iovec{Base: unsafe.SliceData(p)}
	iov.SetLen(len(p))
	// On 64-bit Linux the offset is pos_l; pos_h is ignored.
	n, _, e := syscall.RawSyscall6(unix.SYS_PREADV2, fd, uintptr(unsafe.Pointer(&iov)), 1, uintptr(off), 0, uintptr(flags))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// Cached reports whether the pages holding the n bytes at off are in the
// page cache (cachestat(2), Linux 6.5); without cachestat it answers true.
func (f *file) Cached(off int64, n int) bool {
	if n <= 0 || off < 0 || f.fs.inMemory {
		return true
	}
	page := int64(pageSize)
	first := off &^ (page - 1)
	r := unix.CachestatRange{Off: uint64(first), Len: uint64(off + int64(n) - first)}
	var st unix.Cachestat_t
	// Raw: cachestat(2) does not wait (see ReadAtNoWait).
	if _, _, e := syscall.RawSyscall6(unix.SYS_CACHESTAT, f.f.Fd(), uintptr(unsafe.Pointer(&r)), uintptr(unsafe.Pointer(&st)), 0, 0, 0); e != 0 {
		return true
	}
	pages := (r.Len + uint64(page) - 1) / uint64(page)
	return st.Cache >= pages
}

var pageSize = unix.Getpagesize()
