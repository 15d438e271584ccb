package osfs

import (
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/smbcluster/smbcluster/node/vfs"
)

// file is an open regular file or directory. The os.File guards the
// descriptor: Close waits for no call in flight and later calls fail.
type file struct {
	// Immutable.
	fs          *FS
	f           *os.File
	rc          syscall.RawConn
	name        string // share-relative name at open time
	isDir       bool
	read, write bool

	dirMu sync.Mutex // serializes ReadDir (it moves the directory offset)
	// noWait: preadv2(RWF_NOWAIT) answered EOPNOTSUPP here (nowait.go).
	noWait atomic.Bool
}

// control runs fn with the descriptor, which stays open meanwhile.
func (f *file) control(fn func(fd int) error) error {
	var ferr error
	if err := f.rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

func (f *file) pathErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(*fs.PathError); ok {
		return err
	}
	return &fs.PathError{Op: op, Path: f.name, Err: err}
}

// Fd returns the descriptor, for sendfile; it stays owned by the file.
func (f *file) Fd() uintptr { return f.f.Fd() }

// ReadAt reads at off. A short count is not an error;
// io.EOF comes only when nothing is left at off.
func (f *file) ReadAt(p []byte, off int64) (int, error) {
	switch {
	case f.isDir:
		return 0, f.pathErr("read", syscall.EISDIR)
	case !f.read:
		return 0, f.pathErr("read", syscall.EBADF)
	case off < 0:
		return 0, f.pathErr("read", syscall.EINVAL)
	}
	// os.File.ReadAt preads until p is full, so a read that ends at EOF
	// costs a second pread that answers 0; it allocates nothing, where a
	// closure through RawConn.Control costs three allocations per read.
	n, err := f.f.ReadAt(p, off)
	switch {
	case err == io.EOF && n > 0:
		return n, nil
	case err == io.EOF:
		return 0, io.EOF
	case err != nil:
		return n, f.pathErr("read", err)
	}
	return n, nil
}

// WriteAt writes all of p at off (pwrite, looping on short writes).
func (f *file) WriteAt(p []byte, off int64) (int, error) {
	if err := f.writable(); err != nil {
		return 0, err
	}
	return f.f.WriteAt(p, off)
}

// writable refuses writes to directories and to opens without write access.
func (f *file) writable() error {
	switch {
	case f.isDir:
		return f.pathErr("write", syscall.EISDIR)
	case !f.write:
		return f.pathErr("write", syscall.EBADF)
	}
	return nil
}

// WriteFromPipe moves n bytes from the read end of a pipe into the file at
// off with splice(2): the engine's spliced WRITEs, copied once, into the
// page cache. It returns the bytes moved; io.ErrUnexpectedEOF if the pipe
// ended first.
func (f *file) WriteFromPipe(pipe int, off int64, n int) (int, error) {
	if err := f.writable(); err != nil {
		return 0, err
	}
	fd := int(f.f.Fd())
	done := 0
	for done < n {
		m, err := unix.Splice(pipe, nil, fd, &off, n-done, unix.SPLICE_F_MOVE)
		if m > 0 {
			done += int(m)
		}
		switch {
		case err == unix.EINTR:
		case err != nil:
			return done, f.pathErr("write", err)
		case m == 0:
			return done, io.ErrUnexpectedEOF
		}
	}
	return done, nil
}

// Stat describes the open file.
func (f *file) Stat() (vfs.FileInfo, error) {
	var st unix.Statx_t
	var rec dosAttrib
	err := f.control(func(fd int) error {
		if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_BASIC_STATS|unix.STATX_BTIME, &st); err != nil {
			return err
		}
		rec = f.fs.readDOSFd(fd)
		return nil
	})
	if err != nil {
		return vfs.FileInfo{}, f.pathErr("stat", err)
	}
	_, base := split(f.name)
	return toInfo(base, &st, &rec), nil
}

// Truncate sets the file size.
func (f *file) Truncate(size int64) error {
	switch {
	case f.isDir:
		return f.pathErr("truncate", syscall.EISDIR)
	case !f.write:
		return f.pathErr("truncate", syscall.EBADF)
	}
	return f.pathErr("truncate", f.control(func(fd int) error { return ignoreEINTR(func() error { return unix.Ftruncate(fd, size) }) }))
}

// Allocate reserves space up to size, keeping the size; unsupported
// filesystems make it a no-op.
func (f *file) Allocate(size int64) error {
	switch {
	case f.isDir:
		return f.pathErr("allocate", syscall.EISDIR)
	case !f.write:
		return f.pathErr("allocate", syscall.EBADF)
	case size <= 0:
		return nil
	}
	err := f.control(func(fd int) error {
		return ignoreEINTR(func() error { return unix.Fallocate(fd, unix.FALLOC_FL_KEEP_SIZE, 0, size) })
	})
	if err == unix.EOPNOTSUPP || err == unix.ENOSYS {
		return nil
	}
	return f.pathErr("allocate", err)
}

// Sync flushes the file to stable storage.
func (f *file) Sync() error {
	return f.pathErr("sync", f.control(func(fd int) error { return ignoreEINTR(func() error { return unix.Fsync(fd) }) }))
}

// Close closes the descriptor.
func (f *file) Close() error { return f.f.Close() }

// SetInfo sets access and write times (futimens), and the creation time
// and DOS attributes (dosattrib xattr). Linux cannot set a ctime, so a
// change time goes into the dosattrib record (see dosAttrib).
func (f *file) SetInfo(creation, access, write, change time.Time, attrs *uint32) error {
	err := f.control(func(fd int) error {
		if !access.IsZero() || !write.IsZero() {
			if err := futimens(fd, access, write); err != nil {
				return err
			}
		}
		if creation.IsZero() && attrs == nil && change.IsZero() {
			return nil
		}
		rec := f.fs.readDOSFd(fd)
		if !change.IsZero() {
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				return err
			}
			rec.HasChange, rec.Change = true, change
			rec.ChangeMtime = time.Unix(st.Mtim.Unix())
		}
		if !creation.IsZero() {
			rec.HasCreation, rec.Creation = true, creation
		}
		if attrs != nil {
			rec.HasAttrs, rec.Attrs = true, *attrs&vfs.StoredAttrs
		}
		return f.fs.writeDOSFd(fd, &rec)
	})
	return f.pathErr("setinfo", err)
}

// SetWriteTime sets the file's mtime (vfs.WriteTimeSetter): one
// utimensat on the descriptor, nothing allocated.
func (f *file) SetWriteTime(t time.Time) error {
	if err := futimens(int(f.f.Fd()), time.Time{}, t); err != nil {
		return f.pathErr("setinfo", err)
	}
	return nil
}

// futimens sets the times that are non-zero, leaving the others alone.
func futimens(fd int, atime, mtime time.Time) error {
	ts := [2]unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_OMIT}}
	if !atime.IsZero() {
		ts[0] = unix.Timespec{Sec: atime.Unix(), Nsec: int64(atime.Nanosecond())}
	}
	if !mtime.IsZero() {
		ts[1] = unix.Timespec{Sec: mtime.Unix(), Nsec: int64(mtime.Nanosecond())} // not UnixNano: a 64-bit time_t past 2262 is kept
	}
	// utimensat(fd, NULL, ts, 0) is futimens(3).
	_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// ReadDir lists the directory sorted by name, describing each entry like
// Stat. Entries removed while listing are skipped. A symbolic link entry is
// resolved from the root through the name the directory was opened by; if
// the directory was renamed since, the link may be described as itself.
func (f *file) ReadDir() ([]vfs.FileInfo, error) {
	if !f.isDir {
		return nil, f.pathErr("readdir", syscall.ENOTDIR)
	}
	f.dirMu.Lock()
	defer f.dirMu.Unlock()
	var out []vfs.FileInfo
	err := f.control(func(fd int) error {
		names, err := readNames(fd)
		if err != nil {
			return err
		}
		slices.Sort(names)
		out = make([]vfs.FileInfo, 0, len(names))
		for _, n := range names {
			full := n
			if f.name != "" {
				full = f.name + "/" + n
			} else if f.fs.hidden != "" && strings.EqualFold(n, f.fs.hidden) {
				continue
			}
			fi, err := f.fs.entryInfo(fd, n, full)
			if err == unix.ENOENT {
				continue
			}
			if err != nil {
				return err
			}
			out = append(out, fi)
		}
		return nil
	})
	if err != nil {
		return nil, f.pathErr("readdir", err)
	}
	return out, nil
}

// readNames returns the names in directory fd, without "." and "..".
func readNames(fd int) ([]string, error) {
	if _, err := unix.Seek(fd, 0, io.SeekStart); err != nil {
		return nil, err
	}
	buf := make([]byte, 64<<10)
	var names []string
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}

func ignoreEINTR(fn func() error) error {
	for {
		if err := fn(); err != unix.EINTR {
			return err
		}
	}
}
