package osfs

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/smbcluster/smbcluster/node/vfs"
)

// PunchHole deallocates [off, off+n) with fallocate(PUNCH_HOLE|KEEP_SIZE).
func (f *file) PunchHole(off, n int64) error {
	switch {
	case f.isDir:
		return f.pathErr("punch", syscall.EISDIR)
	case !f.write:
		return f.pathErr("punch", syscall.EBADF)
	case off < 0 || n < 0:
		return f.pathErr("punch", syscall.EINVAL)
	case n == 0:
		return nil
	}
	err := f.control(func(fd int) error {
		return ignoreEINTR(func() error {
			return unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
		})
	})
	if err == unix.EOPNOTSUPP || err == unix.ENOSYS {
		err = errors.ErrUnsupported
	}
	return f.pathErr("punch", err)
}

// AllocatedRanges walks the data extents of [off, end) with
// lseek(SEEK_DATA / SEEK_HOLE); a filesystem without them reports all
// of the range as data.
func (f *file) AllocatedRanges(off, end int64, limit int) ([]vfs.Range, error) {
	if f.isDir {
		return nil, f.pathErr("seek", syscall.EISDIR)
	}
	var out []vfs.Range
	err := f.control(func(fd int) error {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return err
		}
		end = min(end, st.Size)
		for off < end && len(out) < limit {
			data, err := unix.Seek(fd, off, unix.SEEK_DATA)
			if err == unix.ENXIO {
				return nil // no data at or after off
			}
			if err == unix.EINVAL || err == unix.EOPNOTSUPP {
				out = append(out, vfs.Range{Off: off, Len: end - off})
				return nil
			}
			if err != nil || data >= end {
				return err
			}
			hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
			if err != nil {
				return err
			}
			if hole <= data { // the file changed under us
				hole = end
			}
			out = append(out, vfs.Range{Off: data, Len: min(hole, end) - data})
			off = hole
		}
		return nil
	})
	return out, f.pathErr("seek", err)
}
