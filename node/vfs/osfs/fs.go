package osfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/smbcluster/smbcluster/node/vfs"
)

// resolveFlags keep every lookup beneath the root descriptor.
const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS

// FS is a share rooted at a directory. It is safe for concurrent use.
type FS struct {
	// Immutable after New.
	root     int // O_PATH|O_DIRECTORY descriptor of the share root
	rootPath string
	btime    bool   // the filesystem reports birth times
	inMemory bool   // tmpfs or ramfs: reads never wait for a disk (nowait.go)
	hidden   string // lower case: root entries beginning with it are hidden (Hide)

	noXattr   atomic.Bool // user xattrs are unsupported here
	closeOnce sync.Once
	streamMu  sync.Mutex              // serializes stream read-modify-writes (stream.go)
	streams   map[streamID]*streamRef // open streams, under streamMu (stream.go)
}

var (
	_ vfs.FS           = (*FS)(nil)
	_ vfs.FdFile       = (*file)(nil)
	_ vfs.SecurityFile = (*file)(nil)
	_ vfs.NameReader   = (*file)(nil)
)

// New opens the share rooted at the existing directory root.
func New(root string) (*FS, error) {
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("osfs: share root %q: %w", root, &fs.PathError{Op: "open", Path: root, Err: err})
	}
	fsys := &FS{root: fd, rootPath: root}
	var st unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_BASIC_STATS|unix.STATX_BTIME, &st); err == nil {
		fsys.btime = st.Mask&unix.STATX_BTIME != 0
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err == nil {
		fsys.inMemory = sfs.Type == unix.TMPFS_MAGIC || sfs.Type == unix.RAMFS_MAGIC
	}
	fsys.probeXattr()
	return fsys, nil
}

// probeXattr records whether the root's filesystem keeps user xattrs.
func (fsys *FS) probeXattr() {
	dfd, err := unix.Openat(fsys.root, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(dfd)
	var b [dosRecordSize]byte
	if _, err := unix.Fgetxattr(dfd, xattrDOS, b[:]); isNoXattrSupport(err) {
		fsys.noXattr.Store(true)
	}
}

// Close releases the root descriptor. Files already open stay usable.
func (fsys *FS) Close() error {
	var err error
	fsys.closeOnce.Do(func() { err = unix.Close(fsys.root) })
	return err
}

// Root returns the directory the share was opened at.
func (fsys *FS) Root() string { return fsys.rootPath }

// XattrsSupported reports whether DOS attributes and creation times set
// through SetInfo persist (the filesystem keeps user xattrs).
func (fsys *FS) XattrsSupported() bool { return !fsys.noXattr.Load() }

// Hide keeps the entries of the share's root whose names begin with
// prefix (in any case) from clients: ReadDir of the root leaves them out
// and they and every name beneath them are refused (EACCES). The cluster
// keeps its storage probes there. Call it before serving.
func (fsys *FS) Hide(prefix string) { fsys.hidden = strings.ToLower(prefix) }

// isHidden reports whether the root entry name is hidden (Hide).
func (fsys *FS) isHidden(name string) bool {
	return fsys.hidden != "" && strings.HasPrefix(strings.ToLower(name), fsys.hidden)
}

// checkName validates a share-relative name (see the package doc).
func (fsys *FS) checkName(op, name string) error {
	if name == "" {
		return nil
	}
	if strings.IndexByte(name, 0) >= 0 || name[0] == '/' {
		return &fs.PathError{Op: op, Path: name, Err: syscall.EINVAL}
	}
	if fsys.hidden != "" {
		first, _, _ := strings.Cut(name, "/")
		if fsys.isHidden(first) {
			return &fs.PathError{Op: op, Path: name, Err: syscall.EACCES}
		}
	}
	for elem := range strings.SplitSeq(name, "/") {
		switch elem {
		case "", ".":
			return &fs.PathError{Op: op, Path: name, Err: syscall.EINVAL}
		case "..":
			return &fs.PathError{Op: op, Path: name, Err: syscall.EACCES}
		}
	}
	return nil
}

// split returns the directory and base of a valid non-root name.
func split(name string) (dir, base string) {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return "", name
	}
	return name[:i], name[i+1:]
}

// openat resolves name beneath dirfd. An escape (EXDEV) becomes EACCES.
func openat(dirfd int, name string, flags uint64, mode uint64) (int, error) {
	how := unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Mode: mode, Resolve: resolveFlags}
	for i := 0; ; i++ {
		fd, err := unix.Openat2(dirfd, name, &how)
		switch {
		case err == nil:
			return fd, nil
		case err == unix.EINTR, err == unix.EAGAIN && i < 16: // EAGAIN: a racing rename
			continue
		case err == unix.EXDEV:
			return -1, syscall.EACCES
		default:
			return -1, err
		}
	}
}

// parent opens the directory holding name (a valid non-root name) and
// returns its descriptor, the base name and a release function.
func (fsys *FS) parent(name string) (int, string, func(), error) {
	dir, base := split(name)
	if dir == "" {
		return fsys.root, base, func() {}, nil
	}
	fd, err := openat(fsys.root, dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, "", nil, err
	}
	return fd, base, func() { unix.Close(fd) }, nil
}

// Stat describes name, following a final symbolic link only while it stays
// beneath the root.
func (fsys *FS) Stat(name string) (vfs.FileInfo, error) {
	if err := fsys.checkName("stat", name); err != nil {
		return vfs.FileInfo{}, err
	}
	if name == "" {
		fi, err := fsys.info(fsys.root, "", unix.AT_EMPTY_PATH, "", true)
		if err != nil {
			return vfs.FileInfo{}, &fs.PathError{Op: "stat", Path: name, Err: err}
		}
		return fi.FileInfo, nil
	}
	pfd, base, done, err := fsys.parent(name)
	if err != nil {
		return vfs.FileInfo{}, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	defer done()
	fi, err := fsys.entryInfo(pfd, base, name)
	if err != nil {
		return vfs.FileInfo{}, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	return fi, nil
}

// entryInfo describes base in directory dirfd; full is its share-relative
// name, used to resolve a symbolic link from the root.
func (fsys *FS) entryInfo(dirfd int, base, full string) (vfs.FileInfo, error) {
	fi, err := fsys.info(dirfd, base, unix.AT_SYMLINK_NOFOLLOW, base, false)
	if err != nil || !fi.isLink {
		return fi.FileInfo, err
	}
	fd, err := openat(fsys.root, full, unix.O_PATH, 0)
	if err != nil {
		return fi.FileInfo, nil // dangling or escaping: describe the link itself
	}
	defer unix.Close(fd)
	target, err := fsys.info(fd, "", unix.AT_EMPTY_PATH, base, true)
	return target.FileInfo, err
}

// Remove deletes a file or an empty directory.
func (fsys *FS) Remove(name string) error {
	if err := fsys.checkName("remove", name); err != nil {
		return err
	}
	if name == "" {
		return &fs.PathError{Op: "remove", Path: name, Err: syscall.EACCES}
	}
	pfd, base, done, err := fsys.parent(name)
	if err != nil {
		return &fs.PathError{Op: "remove", Path: name, Err: err}
	}
	defer done()
	err = unix.Unlinkat(pfd, base, 0)
	if err == unix.EISDIR {
		err = unix.Unlinkat(pfd, base, unix.AT_REMOVEDIR)
		if err == unix.EEXIST {
			err = syscall.ENOTEMPTY
		}
	}
	if err != nil {
		return &fs.PathError{Op: "remove", Path: name, Err: err}
	}
	return nil
}

// Rename moves oldname to newname. With replace an existing file is
// replaced, but an existing directory never is (EACCES).
func (fsys *FS) Rename(oldname, newname string, replace bool) error {
	if err := fsys.rename(oldname, newname, replace); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	return nil
}

func (fsys *FS) rename(oldname, newname string, replace bool) error {
	if err := fsys.checkName("rename", oldname); err != nil {
		return err.(*fs.PathError).Err
	}
	if err := fsys.checkName("rename", newname); err != nil {
		return err.(*fs.PathError).Err
	}
	if oldname == "" || newname == "" {
		return syscall.EACCES
	}
	ofd, obase, odone, err := fsys.parent(oldname)
	if err != nil {
		return err
	}
	defer odone()
	nfd, nbase, ndone, err := fsys.parent(newname)
	if err != nil {
		return err
	}
	defer ndone()
	var st unix.Stat_t
	targetErr := unix.Fstatat(nfd, nbase, &st, unix.AT_SYMLINK_NOFOLLOW)
	if targetErr == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		if !replace {
			return syscall.EEXIST
		}
		return syscall.EACCES
	}
	if replace {
		return unix.Renameat(ofd, obase, nfd, nbase)
	}
	err = unix.Renameat2(ofd, obase, nfd, nbase, unix.RENAME_NOREPLACE)
	if err == unix.EINVAL || err == unix.ENOSYS {
		// The filesystem may lack RENAME_NOREPLACE: check, then rename.
		if targetErr == nil {
			return syscall.EEXIST
		}
		err = unix.Renameat(ofd, obase, nfd, nbase)
	}
	return err
}

// StatFS describes the filesystem holding the share. FSName is "NTFS":
// Windows clients enable features (ACL editing, streams, sparse files,
// larger I/O) by file system name, and the server answers FSCTLs the way
// an NTFS volume would ([MS-FSCC] 2.5.1).
func (fsys *FS) StatFS() (vfs.FSInfo, error) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(fsys.root, &st); err != nil {
		return vfs.FSInfo{}, &fs.PathError{Op: "statfs", Path: fsys.rootPath, Err: err}
	}
	bs := st.Frsize
	if bs <= 0 {
		bs = st.Bsize
	}
	serial := uint32(st.Fsid.Val[0]) ^ uint32(st.Fsid.Val[1])
	var mount string
	var s unix.Stat_t
	if unix.Fstat(fsys.root, &s) == nil {
		if serial == 0 {
			serial = uint32(s.Dev) ^ uint32(s.Dev>>32)
		}
		if id := bootID(); id != "" {
			mount = fmt.Sprintf("%s/%d", id, s.Dev)
		}
	}
	return vfs.FSInfo{
		TotalBytes:    int64(st.Blocks) * bs,
		FreeBytes:     int64(st.Bfree) * bs,
		AvailBytes:    int64(st.Bavail) * bs,
		BlockSize:     uint32(bs),
		MaxNameLen:    255,
		SerialNumber:  serial,
		FSName:        "NTFS",
		CaseSensitive: true,
		Mount:         mount,
	}, nil
}

// bootID identifies this boot of the kernel: a device number names a
// mount only within it.
var bootID = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
})

// isNoXattrSupport reports an error meaning "this filesystem keeps no user
// xattrs".
func isNoXattrSupport(err error) bool {
	return errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EOPNOTSUPP)
}
