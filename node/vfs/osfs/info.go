package osfs

import (
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/smbcluster/smbcluster/node/vfs"
)

// statInfo is a FileInfo plus whether it describes a symbolic link.
type statInfo struct {
	vfs.FileInfo
	isLink bool
}

// info runs statx(dirfd, path, flags) and reads the dosattrib record of the
// same file. target says the path names a followed file (an O_PATH
// descriptor with AT_EMPTY_PATH), not a directory entry.
func (fsys *FS) info(dirfd int, path string, flags int, name string, target bool) (statInfo, error) {
	var st unix.Statx_t
	if err := unix.Statx(dirfd, path, flags, unix.STATX_BASIC_STATS|unix.STATX_BTIME, &st); err != nil {
		return statInfo{}, err
	}
	var rec dosAttrib
	isLink := st.Mode&unix.S_IFMT == unix.S_IFLNK
	if !isLink && !fsys.noXattr.Load() {
		rec = fsys.readDOSAt(dirfd, path, flags, target)
	}
	return statInfo{FileInfo: toInfo(name, &st, &rec), isLink: isLink}, nil
}

// toInfo builds a FileInfo from statx and the dosattrib record.
func toInfo(name string, st *unix.Statx_t, rec *dosAttrib) vfs.FileInfo {
	fi := vfs.FileInfo{
		Name:           name,
		IsDir:          st.Mode&unix.S_IFMT == unix.S_IFDIR,
		LastAccessTime: ts(st.Atime),
		LastWriteTime:  ts(st.Mtime),
		ChangeTime:     ts(st.Ctime),
		FileID:         st.Ino,
		NumLinks:       st.Nlink,
	}
	if !fi.IsDir {
		fi.Size = int64(st.Size)
		fi.AllocationSize = dataAllocation(int64(st.Blocks)*512, fi.Size)
	}
	if rec.HasChange && rec.ChangeMtime.Equal(fi.LastWriteTime) {
		fi.ChangeTime = rec.Change
	}
	switch {
	case rec.HasCreation:
		fi.CreationTime = rec.Creation
	case st.Mask&unix.STATX_BTIME != 0:
		fi.CreationTime = ts(st.Btime)
	default:
		fi.CreationTime = fi.LastWriteTime
		if fi.ChangeTime.Before(fi.CreationTime) {
			fi.CreationTime = fi.ChangeTime
		}
	}
	fi.Attributes = deriveAttrs(fi.IsDir, rec)
	return fi
}

// deriveAttrs returns the DOS attributes: the stored ones when present,
// else AttrArchive for a file (Windows sets it on new files); AttrDirectory
// for a directory, AttrNormal for a file with no other bit.
func deriveAttrs(isDir bool, rec *dosAttrib) uint32 {
	a := vfs.AttrArchive
	if rec.HasAttrs {
		a = rec.Attrs & vfs.StoredAttrs
	}
	if isDir {
		if !rec.HasAttrs {
			a = 0
		}
		return a | vfs.AttrDirectory
	}
	if a == 0 {
		a = vfs.AttrNormal
	}
	return a
}

func ts(t unix.StatxTimestamp) time.Time { return time.Unix(t.Sec, int64(t.Nsec)) }

// readDOSAt reads the dosattrib record of the file named like statx names
// it. Any failure reads as "no record".
func (fsys *FS) readDOSAt(dirfd int, path string, flags int, target bool) dosAttrib {
	var b [64]byte
	n, err := getxattrAt(dirfd, path, flags, b[:], target)
	var rec dosAttrib
	if err != nil {
		if isNoXattrSupport(err) {
			fsys.noXattr.Store(true)
		}
		return rec
	}
	_ = rec.Decode(b[:n])
	return rec
}

// readDOSFd reads the dosattrib record of an open (non-O_PATH) descriptor.
func (fsys *FS) readDOSFd(fd int) dosAttrib {
	var rec dosAttrib
	if fsys.noXattr.Load() {
		return rec
	}
	var b [64]byte
	n, err := unix.Fgetxattr(fd, xattrDOS, b[:])
	if err != nil {
		if isNoXattrSupport(err) {
			fsys.noXattr.Store(true)
		}
		return rec
	}
	_ = rec.Decode(b[:n])
	return rec
}

// writeDOSFd stores rec on an open descriptor. A filesystem without user
// xattrs drops it silently.
func (fsys *FS) writeDOSFd(fd int, rec *dosAttrib) error {
	if fsys.noXattr.Load() {
		return nil
	}
	var b [dosRecordSize]byte
	rec.Encode(b[:])
	err := unix.Fsetxattr(fd, xattrDOS, b[:], 0)
	if isNoXattrSupport(err) {
		fsys.noXattr.Store(true)
		return nil
	}
	return err
}

// noGetxattrat is set once the kernel lacks getxattrat (Linux < 6.13).
var noGetxattrat atomic.Bool

// xattrArgs is struct xattr_args of getxattrat(2).
type xattrArgs struct {
	value uint64
	size  uint32
	flags uint32
}

// getxattrAt reads xattrDOS of path relative to dirfd. It uses
// getxattrat(2) when the kernel has it, else the /proc/self/fd path of
// dirfd: a single component below a descriptor that is already beneath
// the root, never a joined share path.
func getxattrAt(dirfd int, path string, flags int, b []byte, target bool) (int, error) {
	if !noGetxattrat.Load() && !target {
		n, err := getxattrat(dirfd, path, flags, b)
		if err != unix.ENOSYS {
			return n, err
		}
		noGetxattrat.Store(true)
	}
	p := "/proc/self/fd/" + strconv.Itoa(dirfd)
	if path != "" {
		p += "/" + path
	}
	if target || flags&unix.AT_SYMLINK_NOFOLLOW == 0 {
		return unix.Getxattr(p, xattrDOS, b)
	}
	return unix.Lgetxattr(p, xattrDOS, b)
}

func getxattrat(dirfd int, path string, flags int, b []byte) (int, error) {
	p, err := unix.BytePtrFromString(path)
	if err != nil {
		return 0, err
	}
	a, err := unix.BytePtrFromString(xattrDOS)
	if err != nil {
		return 0, err
	}
	// The value buffer's address travels inside a struct, so it must be a
	// heap object (heap objects never move); the pool guarantees that.
	buf := xattrBufs.Get().(*[xattrBufSize]byte)
	defer xattrBufs.Put(buf)
	args := &xattrArgs{value: uint64(uintptr(unsafe.Pointer(buf))), size: uint32(min(len(b), xattrBufSize))}
	r, _, e := unix.Syscall6(unix.SYS_GETXATTRAT, uintptr(dirfd), uintptr(unsafe.Pointer(p)),
		uintptr(flags), uintptr(unsafe.Pointer(a)), uintptr(unsafe.Pointer(args)), unsafe.Sizeof(*args))
	runtime.KeepAlive(buf)
	if e != 0 {
		return 0, e
	}
	return copy(b, buf[:r]), nil
}

const xattrBufSize = 64

var xattrBufs = sync.Pool{New: func() any { return new([xattrBufSize]byte) }}

// dataAllocation is the allocation reported for a regular file: the
// blocks it occupies, but no more than its size rounded up to 4 KiB.
// st_blocks also counts the block ext4 gives extended attributes that do
// not fit in the inode (ours: streams, descriptors, EAs) and space
// reserved beyond the end of file, neither of which is the data's
// allocation as Windows reports it ([MS-FSCC] 2.4.41: AllocationSize).
// Directories report 0, as Samba and Windows do for an empty one.
func dataAllocation(blocks, size int64) int64 {
	return min(blocks, (size+4095)&^4095)
}
