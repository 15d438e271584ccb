package osfs

import (
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/smbcluster/smbcluster/node/clock"
	"github.com/smbcluster/smbcluster/node/vfs"
)

// Open opens or creates name; see vfs.FS.
func (fsys *FS) Open(name string, o vfs.OpenOptions) (vfs.File, bool, error) {
	if err := fsys.checkName("open", name); err != nil {
		return nil, false, err
	}
	f, created, err := fsys.open(name, o)
	if err != nil {
		return nil, false, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return f, created, nil
}

func (fsys *FS) open(name string, o vfs.OpenOptions) (*file, bool, error) {
	if o.Create == vfs.OpenExisting || name == "" {
		if name == "" && o.Create == vfs.CreateExclusive {
			return nil, false, syscall.EEXIST
		}
		f, err := fsys.openExisting(name, o)
		return f, false, err
	}
	if o.Kind == vfs.DirOnly {
		return fsys.createDir(name, o)
	}
	for range 8 {
		f, err := fsys.createFile(name, o)
		if err != syscall.EEXIST || o.Create == vfs.CreateExclusive {
			return f, err == nil, err
		}
		f, err = fsys.openExisting(name, o)
		if err != syscall.ENOENT {
			return f, false, err
		}
		// Removed between the two opens: try creating again.
	}
	return nil, false, syscall.ENOENT
}

// accessFlags returns the O_ access mode for o.
func accessFlags(o vfs.OpenOptions) uint64 {
	w := o.Write || o.Truncate
	switch {
	case w && o.Read:
		return unix.O_RDWR
	case w:
		return unix.O_WRONLY
	}
	return unix.O_RDONLY
}

// openExisting opens an existing file or directory.
func (fsys *FS) openExisting(name string, o vfs.OpenOptions) (*file, error) {
	path := name
	if path == "" {
		path = "."
	}
	flags := accessFlags(o) | unix.O_NONBLOCK
	if o.Kind == vfs.DirOnly {
		flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NONBLOCK
	} else if o.Truncate {
		flags |= unix.O_TRUNC
	}
	fd, err := openat(fsys.root, path, flags, 0)
	if err == unix.EISDIR && o.Kind != vfs.RegularOnly {
		// A directory opened for writing (attributes): open it read-only.
		fd, err = openat(fsys.root, path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK, 0)
	}
	if err != nil {
		return nil, err
	}
	return fsys.newFile(fd, name, o)
}

// createFile creates a regular file exclusively (never through a link).
func (fsys *FS) createFile(name string, o vfs.OpenOptions) (*file, error) {
	fd, err := openat(fsys.root, name, accessFlags(o)|unix.O_CREAT|unix.O_EXCL, 0o666)
	if err != nil {
		return nil, err
	}
	f, err := fsys.newFile(fd, name, o)
	if err != nil {
		return nil, err
	}
	if a := o.Attributes & vfs.StoredAttrs; a != 0 {
		f.initAttrs(a | vfs.AttrArchive) // Windows sets archive on new files
	} else {
		f.initAttrs(0)
	}
	return f, nil
}

// createDir makes directory name (CreateIfAbsent or CreateExclusive) and
// opens it.
func (fsys *FS) createDir(name string, o vfs.OpenOptions) (*file, bool, error) {
	pfd, base, done, err := fsys.parent(name)
	if err != nil {
		return nil, false, err
	}
	defer done()
	err = unix.Mkdirat(pfd, base, 0o777)
	if err == unix.EEXIST && o.Create == vfs.CreateIfAbsent {
		f, err := fsys.openExisting(name, o)
		return f, false, err
	}
	if err != nil {
		return nil, false, err
	}
	fd, err := openat(pfd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, false, err
	}
	f, err := fsys.newFile(fd, name, o)
	if err != nil {
		return nil, false, err
	}
	f.initAttrs(o.Attributes)
	return f, true, nil
}

// newFile wraps a freshly opened descriptor, refusing anything but regular
// files and directories and checking o.Kind. It owns fd.
func (fsys *FS) newFile(fd int, name string, o vfs.OpenOptions) (*file, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, err
	}
	var isDir bool
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		isDir = true
	case unix.S_IFREG:
	default:
		unix.Close(fd)
		return nil, syscall.EACCES
	}
	switch {
	case isDir && o.Kind == vfs.RegularOnly:
		unix.Close(fd)
		return nil, syscall.EISDIR
	case !isDir && o.Kind == vfs.DirOnly:
		unix.Close(fd)
		return nil, syscall.ENOTDIR
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, err
	}
	osf := os.NewFile(uintptr(fd), name)
	rc, err := osf.SyscallConn()
	if err != nil {
		osf.Close()
		return nil, err
	}
	return &file{
		fs: fsys, f: osf, rc: rc, name: name, isDir: isDir,
		read: o.Read || isDir, write: o.Write && !isDir,
	}, nil
}

// initAttrs stores the attributes of a newly created file and, when the
// filesystem has no birth time, its creation time. Failure is ignored: the
// file exists and its attributes then read as derived.
func (f *file) initAttrs(attrs uint32) {
	rec := dosAttrib{HasAttrs: attrs&vfs.StoredAttrs != 0, Attrs: attrs & vfs.StoredAttrs}
	if !f.fs.btime {
		rec.HasCreation, rec.Creation = true, clock.Now()
	}
	if !rec.HasAttrs && !rec.HasCreation {
		return
	}
	_ = f.control(func(fd int) error { return f.fs.writeDOSFd(fd, &rec) })
}
