package memfs

import (
	"io"
	"io/fs"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/smbcluster/smbcluster/node/vfs"
)

// Named streams are nodes kept in their file's streams map; they hold data
// only. Unlike osfs there is no size limit.

var (
	_ vfs.StreamOpener = (*FS)(nil)
	_ vfs.SecurityFile = (*file)(nil)
	_ vfs.NameReader   = (*file)(nil)
	_ vfs.EAFile       = (*file)(nil)
)

func checkStream(stream string) error {
	if stream == "" || strings.ContainsAny(stream, "\x00/") {
		return syscall.EINVAL
	}
	return nil
}

// Streams lists the named streams of name.
func (fsys *FS) Streams(name string) ([]vfs.StreamInfo, error) {
	if err := checkName(name); err != nil {
		return nil, &fs.PathError{Op: "streams", Path: name, Err: err}
	}
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	n, err := fsys.lookup(name)
	if err != nil {
		return nil, &fs.PathError{Op: "streams", Path: name, Err: err}
	}
	var out []vfs.StreamInfo
	for s, sn := range n.streams {
		out = append(out, vfs.StreamInfo{Name: s, Size: int64(len(sn.data))})
	}
	return out, nil
}

// OpenStream opens or creates a named stream of name.
func (fsys *FS) OpenStream(name, stream string, o vfs.OpenOptions) (vfs.File, bool, error) {
	f, created, err := fsys.openStream(name, stream, o)
	if err != nil {
		return nil, false, &fs.PathError{Op: "openstream", Path: name + ":" + stream, Err: err}
	}
	return f, created, nil
}

func (fsys *FS) openStream(name, stream string, o vfs.OpenOptions) (*streamFile, bool, error) {
	if err := checkName(name); err != nil {
		return nil, false, err
	}
	if err := checkStream(stream); err != nil {
		return nil, false, err
	}
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	n, err := fsys.lookup(name)
	if err != nil {
		return nil, false, err
	}
	sn, ok := n.streams[stream]
	created := false
	switch {
	case ok && o.Create == vfs.CreateExclusive:
		return nil, false, syscall.EEXIST
	case ok && o.Truncate:
		sn.data = nil
	case !ok && o.Create == vfs.OpenExisting:
		return nil, false, syscall.ENOENT
	case !ok:
		if n.streams == nil {
			n.streams = map[string]*node{}
		}
		sn = &node{nlink: 1}
		n.streams[stream] = sn
		created = true
	}
	base := &file{fs: fsys, n: n, name: name, read: true}
	return &streamFile{base: base, s: sn, read: o.Read, write: o.Write || o.Truncate}, created, nil
}

// RemoveStream deletes a named stream of name.
func (fsys *FS) RemoveStream(name, stream string) error {
	err := fsys.streamOp(name, stream, func(n *node) error {
		if _, ok := n.streams[stream]; !ok {
			return syscall.ENOENT
		}
		delete(n.streams, stream)
		return nil
	})
	if err != nil {
		return &fs.PathError{Op: "removestream", Path: name + ":" + stream, Err: err}
	}
	return nil
}

// RenameStream renames a named stream of name; see vfs.StreamOpener.
// Open files hold the stream's node, so they follow it.
func (fsys *FS) RenameStream(name, oldStream, newStream string, replace bool) error {
	err := fsys.streamOp(name, oldStream, func(n *node) error {
		sn, ok := n.streams[oldStream]
		switch {
		case !ok:
			return syscall.ENOENT
		case newStream == "":
			return fsys.renameToData(n, oldStream, replace)
		case oldStream == newStream:
			return nil
		}
		if err := checkStream(newStream); err != nil {
			return err
		}
		if _, exists := n.streams[newStream]; exists && !replace {
			return syscall.EEXIST
		}
		delete(n.streams, oldStream)
		n.streams[newStream] = sn
		return nil
	})
	if err != nil {
		return &fs.PathError{Op: "renamestream", Path: name + ":" + oldStream, Err: err}
	}
	return nil
}

// renameToData moves the named stream of n onto its unnamed data
// stream, replacing the file's data; the stream's open files now reach
// the file's data. Called under mu.
func (fsys *FS) renameToData(n *node, stream string, replace bool) error {
	switch {
	case n.dir:
		return syscall.EISDIR // a directory has no unnamed data stream
	case !replace:
		return syscall.EEXIST // which always exists
	}
	sn := n.streams[stream]
	n.data, sn.data = sn.data, nil
	sn.dataOf = n
	delete(n.streams, stream)
	fsys.touch(n)
	return nil
}

// streamOp runs fn on the node of name under mu.
func (fsys *FS) streamOp(name, stream string, fn func(n *node) error) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := checkStream(stream); err != nil {
		return err
	}
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	n, err := fsys.lookup(name)
	if err != nil {
		return err
	}
	return fn(n)
}

// streamFile is an open named stream of base's node.
type streamFile struct {
	base        *file
	s           *node
	read, write bool
}

// data returns the node holding the stream's bytes: its own, or its
// file's once renamed onto the unnamed data stream. Called under mu.
func (f *streamFile) data() *node {
	if f.s.dataOf != nil {
		return f.s.dataOf
	}
	return f.s
}

func (f *streamFile) check(op string, write bool) error {
	var err error
	switch {
	case f.base.closed:
		err = fs.ErrClosed
	case write && !f.write, !write && !f.read:
		err = syscall.EBADF
	}
	return f.base.pathErr(op, err)
}

// ReadAt reads the stream at off.
func (f *streamFile) ReadAt(p []byte, off int64) (int, error) {
	f.base.fs.mu.Lock()
	defer f.base.fs.mu.Unlock()
	if err := f.check("read", false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, f.base.pathErr("read", syscall.EINVAL)
	}
	if off >= int64(len(f.data().data)) {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	return copy(p, f.data().data[off:]), nil
}

// WriteAt writes p at off, zero-filling any gap.
func (f *streamFile) WriteAt(p []byte, off int64) (int, error) {
	f.base.fs.mu.Lock()
	defer f.base.fs.mu.Unlock()
	if err := f.check("write", true); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, f.base.pathErr("write", syscall.EINVAL)
	}
	if end := off + int64(len(p)); end > int64(len(f.data().data)) {
		f.data().resize(end)
	}
	copy(f.data().data[off:], p)
	f.base.fs.touch(f.base.n)
	return len(p), nil
}

// Truncate sets the stream's size.
func (f *streamFile) Truncate(size int64) error {
	f.base.fs.mu.Lock()
	defer f.base.fs.mu.Unlock()
	if err := f.check("truncate", true); err != nil {
		return err
	}
	if size < 0 {
		return f.base.pathErr("truncate", syscall.EINVAL)
	}
	f.data().resize(size)
	return nil
}

// Stat describes the file with the stream's size.
func (f *streamFile) Stat() (vfs.FileInfo, error) {
	fi, err := f.base.Stat()
	if err != nil {
		return fi, err
	}
	f.base.fs.mu.Lock()
	fi.IsDir = false // a stream is data, even on a directory
	fi.Size = int64(len(f.data().data))
	f.base.fs.mu.Unlock()
	fi.AllocationSize = (fi.Size + 4095) &^ 4095
	return fi, nil
}

func (f *streamFile) Allocate(int64) error { return nil }
func (f *streamFile) Sync() error          { return nil }
func (f *streamFile) ReadDir() ([]vfs.FileInfo, error) {
	return nil, f.base.pathErr("readdir", syscall.ENOTDIR)
}
func (f *streamFile) SetInfo(creation, access, write, change time.Time, attrs *uint32) error {
	return f.base.SetInfo(creation, access, write, change, attrs)
}
func (f *streamFile) Security() ([]byte, error)   { return f.base.Security() }
func (f *streamFile) SetSecurity(sd []byte) error { return f.base.SetSecurity(sd) }
func (f *streamFile) Close() error                { return f.base.Close() }

// Security returns the stored descriptor, nil when none is.
func (f *file) Security() ([]byte, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("security", false, false); err != nil {
		return nil, err
	}
	return append([]byte(nil), f.n.sd...), nil
}

// SetSecurity stores a descriptor.
func (f *file) SetSecurity(sd []byte) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("setsecurity", false, false); err != nil {
		return err
	}
	f.n.sd = append([]byte(nil), sd...)
	return nil
}

// ReadDirNames lists a directory's names in order.
func (f *file) ReadDirNames() ([]string, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("readdir", false, false); err != nil {
		return nil, err
	}
	if !f.n.dir {
		return nil, f.pathErr("readdir", syscall.ENOTDIR)
	}
	return f.n.sortedNames(), nil
}

// EAs returns the file's extended attributes sorted by name.
func (f *file) EAs() ([]vfs.EA, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("eas", false, false); err != nil {
		return nil, err
	}
	var out []vfs.EA
	for n, v := range f.n.eas {
		out = append(out, vfs.EA{Name: n, Value: append([]byte(nil), v...)})
	}
	slices.SortFunc(out, func(a, b vfs.EA) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// SetEA stores or, with an empty value, removes an extended attribute.
func (f *file) SetEA(name string, value []byte) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("setea", false, false); err != nil {
		return err
	}
	if name == "" {
		return f.pathErr("setea", syscall.EINVAL)
	}
	if len(value) == 0 {
		delete(f.n.eas, name)
		return nil
	}
	if f.n.eas == nil {
		f.n.eas = map[string][]byte{}
	}
	f.n.eas[name] = append([]byte(nil), value...)
	return nil
}

func (f *streamFile) EAs() ([]vfs.EA, error)                { return f.base.EAs() }
func (f *streamFile) SetEA(name string, value []byte) error { return f.base.SetEA(name, value) }
