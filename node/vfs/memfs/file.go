package memfs

import (
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/smbcluster/smbcluster/node/vfs"
)

// Open opens or creates name; see vfs.FS.
func (fsys *FS) Open(name string, o vfs.OpenOptions) (vfs.File, bool, error) {
	f, created, err := fsys.open(name, o)
	if err != nil {
		return nil, false, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return f, created, nil
}

func (fsys *FS) open(name string, o vfs.OpenOptions) (*file, bool, error) {
	if err := checkName(name); err != nil {
		return nil, false, err
	}
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	if name == "" {
		if o.Create == vfs.CreateExclusive {
			return nil, false, syscall.EEXIST
		}
		f, err := fsys.openNode(fsys.root, name, o)
		return f, false, err
	}
	p, base, err := fsys.lookupParent(name)
	if err != nil {
		return nil, false, err
	}
	if n, ok := p.children[base]; ok {
		if o.Create == vfs.CreateExclusive {
			return nil, false, syscall.EEXIST
		}
		f, err := fsys.openNode(n, name, o)
		return f, false, err
	}
	if o.Create == vfs.OpenExisting {
		return nil, false, syscall.ENOENT
	}
	n := fsys.newNode(o.Kind == vfs.DirOnly)
	n.parent = p
	if a := o.Attributes & vfs.StoredAttrs; a != 0 {
		n.hasAttrs = true
		n.attrs = a
		if !n.dir {
			n.attrs |= vfs.AttrArchive
		}
	}
	p.children[base] = n
	fsys.touch(p)
	return fsys.newFile(n, name, o), true, nil
}

// openNode opens an existing node, checking o.Kind. Callers hold mu.
func (fsys *FS) openNode(n *node, name string, o vfs.OpenOptions) (*file, error) {
	switch {
	case n.dir && o.Kind == vfs.RegularOnly:
		return nil, syscall.EISDIR
	case !n.dir && o.Kind == vfs.DirOnly:
		return nil, syscall.ENOTDIR
	}
	if o.Truncate && !n.dir {
		n.data = nil
		fsys.touch(n)
	}
	return fsys.newFile(n, name, o), nil
}

func (fsys *FS) newFile(n *node, name string, o vfs.OpenOptions) *file {
	return &file{fs: fsys, n: n, name: name, read: o.Read || n.dir, write: o.Write && !n.dir}
}

// file is an open node; it keeps the node alive after Remove.
type file struct {
	fs          *FS // immutable
	n           *node
	name        string
	read, write bool

	closed bool // guarded by fs.mu
}

// check returns the error for op on f, or nil. Callers hold mu.
func (f *file) check(op string, needData, needWrite bool) error {
	var err error
	switch {
	case f.closed:
		err = os.ErrClosed
	case needData && f.n.dir:
		err = syscall.EISDIR
	case needData && needWrite && !f.write, needData && !needWrite && !f.read:
		err = syscall.EBADF
	}
	return f.pathErr(op, err)
}

func (f *file) pathErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return &fs.PathError{Op: op, Path: f.name, Err: err}
}

// ReadAt copies from off; io.EOF only when nothing is left at off.
func (f *file) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("read", true, false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, f.pathErr("read", syscall.EINVAL)
	}
	if off >= int64(len(f.n.data)) {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	return copy(p, f.n.data[off:]), nil
}

// WriteAt writes p at off, zero-filling any gap.
func (f *file) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("write", true, true); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, f.pathErr("write", syscall.EINVAL)
	}
	if end := off + int64(len(p)); end > int64(len(f.n.data)) {
		f.n.resize(end)
	}
	copy(f.n.data[off:], p)
	f.fs.touch(f.n)
	return len(p), nil
}

// resize sets the data length, zero-filling growth.
func (n *node) resize(size int64) {
	if size <= int64(len(n.data)) {
		n.data = n.data[:size]
		return
	}
	if size <= int64(cap(n.data)) {
		old := len(n.data)
		n.data = n.data[:size]
		clear(n.data[old:])
		return
	}
	grown := make([]byte, size, max(size, int64(cap(n.data))*2))
	copy(grown, n.data)
	n.data = grown
}

// Stat describes the open node.
func (f *file) Stat() (vfs.FileInfo, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("stat", false, false); err != nil {
		return vfs.FileInfo{}, err
	}
	_, base := split(f.name)
	return f.n.info(base), nil
}

// Truncate sets the size.
func (f *file) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("truncate", true, true); err != nil {
		return err
	}
	if size < 0 {
		return f.pathErr("truncate", syscall.EINVAL)
	}
	f.n.resize(size)
	f.fs.touch(f.n)
	return nil
}

// Allocate is a no-op beyond the usual checks.
func (f *file) Allocate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	return f.check("allocate", true, true)
}

// Sync has nothing to flush.
func (f *file) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	return f.check("sync", false, false)
}

// SetInfo sets the non-zero times and the stored attributes; like osfs it
// cannot set the change time, which moves to now instead.
func (f *file) SetInfo(creation, access, write, change time.Time, attrs *uint32) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("setinfo", false, false); err != nil {
		return err
	}
	if !creation.IsZero() {
		f.n.btime = creation
	}
	if !access.IsZero() {
		f.n.atime = access
	}
	if !write.IsZero() {
		f.n.mtime = write
	}
	if attrs != nil {
		f.n.hasAttrs, f.n.attrs = true, *attrs&vfs.StoredAttrs
	}
	if !creation.IsZero() || !access.IsZero() || !write.IsZero() || attrs != nil {
		f.n.ctime = f.fs.now()
	}
	return nil
}

// ReadDir lists the directory sorted by name.
func (f *file) ReadDir() ([]vfs.FileInfo, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("readdir", false, false); err != nil {
		return nil, err
	}
	if !f.n.dir {
		return nil, f.pathErr("readdir", syscall.ENOTDIR)
	}
	names := f.n.sortedNames()
	out := make([]vfs.FileInfo, len(names))
	for i, name := range names {
		out[i] = f.n.children[name].info(name)
	}
	return out, nil
}

// Close releases the file; a second Close fails like os.File's.
func (f *file) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return f.pathErr("close", os.ErrClosed)
	}
	f.closed = true
	return nil
}
