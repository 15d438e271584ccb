package osfs

import (
	"io"
	"io/fs"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/smbcluster/smbcluster/node/vfs"
)

// Alternate data streams and stored security descriptors live in extended
// attributes of the file they belong to, so they follow the inode through
// renames and disappear with it:
//
//	user.smbcluster.stream.<name>  the bytes of stream <name>
//	user.smbcluster.sd             the self-relative security descriptor
//	user.smbcluster.ea.<name>      the value of extended attribute <name>
//
// Limits: Linux caps an xattr value at 64 KiB (XATTR_SIZE_MAX) and its name
// at 255 bytes, so a stream holds at most maxStreamSize bytes and its name
// at most 232 bytes; ext4 without the ea_inode feature further requires all
// of a file's xattrs to fit in one filesystem block (4 KiB usually). Writes
// beyond what the filesystem accepts fail with syscall.ENOSPC (reported to
// clients as STATUS_DISK_FULL). Stream writes are read-modify-write of the
// whole value, serialized per FS: streams are for small metadata (Windows
// Zone.Identifier, Mac Finder info), not bulk data.
const (
	xattrStreamPrefix = "user.smbcluster.stream."
	xattrSD           = "user.smbcluster.sd"
	xattrEAPrefix     = "user.smbcluster.ea."
	maxStreamSize     = 64 << 10
)

var (
	_ vfs.StreamOpener = (*FS)(nil)
	_ vfs.EAFile       = (*file)(nil)
)

// streamAttr returns the xattr name of a stream, or an error for a name
// that cannot be one.
func streamAttr(stream string) (string, error) {
	switch {
	case stream == "", strings.IndexByte(stream, 0) >= 0, strings.IndexByte(stream, '/') >= 0:
		return "", syscall.EINVAL
	case len(xattrStreamPrefix)+len(stream) > 255:
		return "", syscall.ENAMETOOLONG
	}
	return xattrStreamPrefix + stream, nil
}

// getxattr returns the whole value of attr on fd.
func getxattr(fd int, attr string) ([]byte, error) {
	for {
		n, err := unix.Fgetxattr(fd, attr, nil)
		if err != nil {
			return nil, xattrErr(err)
		}
		b := make([]byte, n)
		m, err := unix.Fgetxattr(fd, attr, b)
		if err == unix.ERANGE {
			continue // grew in between
		}
		if err != nil {
			return nil, xattrErr(err)
		}
		return b[:m], nil
	}
}

// setxattr stores value, mapping "too large" to ENOSPC.
func setxattr(fd int, attr string, value []byte, flags int) error {
	if len(value) > maxStreamSize {
		return syscall.ENOSPC
	}
	return xattrErr(unix.Fsetxattr(fd, attr, value, flags))
}

// xattrErr maps xattr errors to the vfs conventions.
func xattrErr(err error) error {
	switch err {
	case nil:
		return nil
	case unix.ENODATA:
		return syscall.ENOENT
	case unix.E2BIG, unix.ERANGE, unix.ENOSPC:
		return syscall.ENOSPC
	}
	return err
}

// openBase opens the file or directory a stream belongs to.
func (fsys *FS) openBase(op, name string) (*file, error) {
	if err := fsys.checkName(op, name); err != nil {
		return nil, err
	}
	f, err := fsys.openExisting(name, vfs.OpenOptions{Read: true})
	if err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	return f, nil
}

// Streams lists the named streams of name.
func (fsys *FS) Streams(name string) ([]vfs.StreamInfo, error) {
	base, err := fsys.openBase("streams", name)
	if err != nil {
		return nil, err
	}
	defer base.Close()
	var out []vfs.StreamInfo
	err = base.control(func(fd int) error {
		names, err := listxattr(fd)
		if err != nil {
			return err
		}
		for _, a := range names {
			s, ok := strings.CutPrefix(a, xattrStreamPrefix)
			if !ok {
				continue
			}
			n, err := unix.Fgetxattr(fd, a, nil)
			if err != nil {
				continue // removed meanwhile
			}
			out = append(out, vfs.StreamInfo{Name: s, Size: int64(n)})
		}
		return nil
	})
	return out, base.pathErr("streams", err)
}

// listxattr returns the xattr names of fd.
func listxattr(fd int) ([]string, error) {
	for {
		n, err := unix.Flistxattr(fd, nil)
		if err != nil || n == 0 {
			if isNoXattrSupport(err) {
				return nil, nil
			}
			return nil, err
		}
		b := make([]byte, n)
		m, err := unix.Flistxattr(fd, b)
		if err == unix.ERANGE {
			continue
		}
		if err != nil {
			return nil, err
		}
		return strings.Split(strings.TrimRight(string(b[:m]), "\x00"), "\x00"), nil
	}
}

// OpenStream opens or creates a named stream of name; see vfs.StreamOpener.
func (fsys *FS) OpenStream(name, stream string, o vfs.OpenOptions) (vfs.File, bool, error) {
	attr, err := streamAttr(stream)
	if err != nil {
		return nil, false, &fs.PathError{Op: "openstream", Path: name + ":" + stream, Err: err}
	}
	base, err := fsys.openBase("openstream", name)
	if err != nil {
		return nil, false, err
	}
	created := false
	var ref *streamRef
	fsys.streamMu.Lock()
	err = base.control(func(fd int) error {
		var err error
		if created, err = openStreamAttr(fd, attr, o); err != nil {
			return err
		}
		id, err := streamIDOf(fd, attr)
		if err != nil {
			return err
		}
		ref = fsys.holdStream(id)
		return nil
	})
	fsys.streamMu.Unlock()
	if err != nil {
		base.Close()
		return nil, false, &fs.PathError{Op: "openstream", Path: name + ":" + stream, Err: err}
	}
	return &streamFile{base: base, ref: ref, read: o.Read, write: o.Write || o.Truncate}, created, nil
}

// openStreamAttr applies the disposition of o to the xattr attr of fd and
// reports whether it created it.
func openStreamAttr(fd int, attr string, o vfs.OpenOptions) (bool, error) {
	_, err := unix.Fgetxattr(fd, attr, nil)
	switch {
	case err == nil && o.Create == vfs.CreateExclusive:
		return false, syscall.EEXIST
	case err == nil && o.Truncate:
		return false, setxattr(fd, attr, nil, 0)
	case err == nil:
		return false, nil
	case err != unix.ENODATA:
		return false, xattrErr(err)
	case o.Create == vfs.OpenExisting:
		return false, syscall.ENOENT
	}
	return true, setxattr(fd, attr, nil, unix.XATTR_CREATE)
}

// RemoveStream deletes a named stream of name.
func (fsys *FS) RemoveStream(name, stream string) error {
	attr, err := streamAttr(stream)
	if err != nil {
		return &fs.PathError{Op: "removestream", Path: name + ":" + stream, Err: err}
	}
	base, err := fsys.openBase("removestream", name)
	if err != nil {
		return err
	}
	defer base.Close()
	return base.pathErr("removestream", base.control(func(fd int) error {
		return xattrErr(unix.Fremovexattr(fd, attr))
	}))
}

// RenameStream renames a named stream of name; see vfs.StreamOpener.
func (fsys *FS) RenameStream(name, oldStream, newStream string, replace bool) error {
	oldAttr, err := streamAttr(oldStream)
	if err != nil {
		return &fs.PathError{Op: "renamestream", Path: name + ":" + oldStream, Err: err}
	}
	if newStream == "" {
		return fsys.renameToData(name, oldAttr, replace)
	}
	newAttr, err := streamAttr(newStream)
	if err != nil {
		return &fs.PathError{Op: "renamestream", Path: name + ":" + newStream, Err: err}
	}
	base, err := fsys.openBase("renamestream", name)
	if err != nil {
		return err
	}
	defer base.Close()
	fsys.streamMu.Lock()
	defer fsys.streamMu.Unlock()
	return base.pathErr("renamestream", base.control(func(fd int) error {
		v, err := getxattr(fd, oldAttr)
		if err != nil {
			return err
		}
		if oldAttr == newAttr {
			return nil
		}
		flags := unix.XATTR_CREATE
		if replace {
			flags = 0
		}
		if err := setxattr(fd, newAttr, v, flags); err != nil {
			return err
		}
		if err := xattrErr(unix.Fremovexattr(fd, oldAttr)); err != nil {
			return err
		}
		_, err = fsys.movedStream(fd, oldAttr, newAttr, nil)
		return err
	}))
}

// renameToData moves the named stream attr of name onto its unnamed data
// stream, replacing the file's data; a directory has none.
func (fsys *FS) renameToData(name, attr string, replace bool) error {
	pathErr := func(err error) error { return &fs.PathError{Op: "renamestream", Path: name, Err: err} }
	if !replace {
		return pathErr(syscall.EEXIST) // the unnamed data stream always exists
	}
	if err := fsys.checkName("renamestream", name); err != nil {
		return err
	}
	data, err := fsys.openExisting(name, vfs.OpenOptions{Read: true, Write: true, Kind: vfs.RegularOnly})
	if err != nil {
		return pathErr(err)
	}
	fsys.streamMu.Lock()
	defer fsys.streamMu.Unlock()
	kept := false
	err = data.control(func(fd int) error {
		v, err := getxattr(fd, attr)
		if err != nil {
			return err
		}
		if err := ignoreEINTR(func() error { return unix.Ftruncate(fd, 0) }); err != nil {
			return err
		}
		for off := 0; off < len(v); {
			n, err := unix.Pwrite(fd, v[off:], int64(off))
			if err != nil && err != unix.EINTR {
				return err
			}
			off += max(n, 0)
		}
		if err := xattrErr(unix.Fremovexattr(fd, attr)); err != nil {
			return err
		}
		kept, err = fsys.movedStream(fd, attr, "", data)
		return err
	})
	if !kept {
		data.Close()
	}
	return data.pathErr("renamestream", err)
}

// streamID names one stream of one inode.
type streamID struct {
	dev, ino uint64
	attr     string // the stream's xattr; "" once renamed onto the unnamed data stream
}

// streamRef is where the open files of one stream find its data. A
// rename moves it, so open files follow their stream to its new name as
// Windows opens do ([MS-FSA] 2.1.5.15.12.1). Its fields are guarded by
// FS.streamMu.
type streamRef struct {
	id   streamID
	n    int   // open files holding it
	data *file // once renamed onto the unnamed data stream: the file, opened for writing
}

// streamIDOf names the stream attr of fd's inode.
func streamIDOf(fd int, attr string) (streamID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return streamID{}, err
	}
	return streamID{dev: st.Dev, ino: st.Ino, attr: attr}, nil
}

// holdStream returns the ref of id, held once more. Called under streamMu.
func (fsys *FS) holdStream(id streamID) *streamRef {
	r := fsys.streams[id]
	if r == nil {
		if fsys.streams == nil {
			fsys.streams = map[streamID]*streamRef{}
		}
		r = &streamRef{id: id}
		fsys.streams[id] = r
	}
	r.n++
	return r
}

// releaseStream drops one hold of r.
func (fsys *FS) releaseStream(r *streamRef) {
	fsys.streamMu.Lock()
	defer fsys.streamMu.Unlock()
	if r.n--; r.n > 0 {
		return
	}
	if fsys.streams[r.id] == r {
		delete(fsys.streams, r.id)
	}
	if r.data != nil {
		r.data.Close()
		r.data = nil
	}
}

// movedStream makes the open files of stream from of fd's inode follow it
// to stream to, or with to "" to the unnamed data stream written through
// data; it reports whether it kept data. Open files of a stream that to
// replaced keep the name, so they see the renamed data. Called under
// streamMu.
func (fsys *FS) movedStream(fd int, from, to string, data *file) (bool, error) {
	id, err := streamIDOf(fd, from)
	if err != nil {
		return false, err
	}
	r := fsys.streams[id]
	if r == nil {
		return false, nil
	}
	delete(fsys.streams, id)
	r.id.attr = to
	if to == "" {
		r.data = data
		return true, nil
	}
	fsys.streams[r.id] = r
	return false, nil
}

// streamFile is an open named stream: the data is the xattr ref.id.attr
// of base, or the file's own data once renamed onto it.
type streamFile struct {
	base        *file // the file or directory, opened read-only
	ref         *streamRef
	read, write bool
	closed      atomic.Bool // the ref is released once
}

// current returns the stream's xattr, or "" and the file holding its data.
func (s *streamFile) current() (string, *file) {
	s.base.fs.streamMu.Lock()
	defer s.base.fs.streamMu.Unlock()
	return s.ref.id.attr, s.ref.data
}

func (s *streamFile) value(attr string) ([]byte, error) {
	var v []byte
	err := s.base.control(func(fd int) (err error) {
		v, err = getxattr(fd, attr)
		return err
	})
	return v, err
}

// ReadAt reads the stream at off.
func (s *streamFile) ReadAt(p []byte, off int64) (int, error) {
	if !s.read {
		return 0, s.base.pathErr("read", syscall.EBADF)
	}
	if off < 0 {
		return 0, s.base.pathErr("read", syscall.EINVAL)
	}
	attr, data := s.current()
	if data != nil {
		return data.ReadAt(p, off)
	}
	v, err := s.value(attr)
	if err != nil {
		return 0, s.base.pathErr("read", err)
	}
	if off >= int64(len(v)) {
		return 0, io.EOF
	}
	return copy(p, v[off:]), nil
}

// modify replaces the stream's value with fn(value), serialized per FS.
func (s *streamFile) modify(op string, fn func(v []byte) ([]byte, error)) error {
	if !s.write {
		return s.base.pathErr(op, syscall.EBADF)
	}
	s.base.fs.streamMu.Lock()
	defer s.base.fs.streamMu.Unlock()
	attr := s.ref.id.attr
	if attr == "" {
		return s.base.pathErr(op, syscall.ENOENT) // renamed onto the data meanwhile
	}
	return s.base.pathErr(op, s.base.control(func(fd int) error {
		v, err := getxattr(fd, attr)
		if err != nil {
			return err
		}
		if v, err = fn(v); err != nil {
			return err
		}
		return setxattr(fd, attr, v, unix.XATTR_REPLACE)
	}))
}

// unnamed returns the file holding the stream's data once the stream was
// renamed onto the unnamed data stream, or nil.
func (s *streamFile) unnamed() *file {
	_, data := s.current()
	return data
}

// WriteAt writes p at off, growing the stream as needed.
func (s *streamFile) WriteAt(p []byte, off int64) (int, error) {
	if data := s.unnamed(); data != nil && s.write {
		return data.WriteAt(p, off)
	}
	if off < 0 {
		return 0, s.base.pathErr("write", syscall.EINVAL)
	}
	if off+int64(len(p)) > maxStreamSize {
		return 0, s.base.pathErr("write", syscall.ENOSPC)
	}
	err := s.modify("write", func(v []byte) ([]byte, error) {
		if end := int(off) + len(p); end > len(v) {
			v = append(v, make([]byte, end-len(v))...)
		}
		copy(v[off:], p)
		return v, nil
	})
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// Truncate sets the stream's size.
func (s *streamFile) Truncate(size int64) error {
	if data := s.unnamed(); data != nil && s.write {
		return data.Truncate(size)
	}
	if size < 0 {
		return s.base.pathErr("truncate", syscall.EINVAL)
	}
	if size > maxStreamSize {
		return s.base.pathErr("truncate", syscall.ENOSPC)
	}
	return s.modify("truncate", func(v []byte) ([]byte, error) {
		if int(size) <= len(v) {
			return v[:size], nil
		}
		return append(v, make([]byte, int(size)-len(v))...), nil
	})
}

// Stat describes the file the stream belongs to, with the stream's size.
func (s *streamFile) Stat() (vfs.FileInfo, error) {
	attr, data := s.current()
	if data != nil {
		return data.Stat()
	}
	fi, err := s.base.Stat()
	if err != nil {
		return fi, err
	}
	v, err := s.value(attr)
	if err != nil {
		return vfs.FileInfo{}, s.base.pathErr("stat", err)
	}
	fi.IsDir = false // a stream is data, even on a directory
	fi.Size = int64(len(v))
	fi.AllocationSize = (fi.Size + 4095) &^ 4095
	return fi, nil
}

// Allocate is a no-op: an xattr has no reserved space.
func (s *streamFile) Allocate(size int64) error {
	if data := s.unnamed(); data != nil && s.write {
		return data.Allocate(size)
	}
	return nil
}

// Sync flushes the file holding the stream.
func (s *streamFile) Sync() error { return s.base.Sync() }

// ReadDir fails: a stream is not a directory.
func (s *streamFile) ReadDir() ([]vfs.FileInfo, error) {
	return nil, s.base.pathErr("readdir", syscall.ENOTDIR)
}

// SetInfo changes the times and attributes of the file.
func (s *streamFile) SetInfo(creation, access, write, change time.Time, attrs *uint32) error {
	return s.base.SetInfo(creation, access, write, change, attrs)
}

// SetWriteTime sets the mtime of the file holding the stream.
func (s *streamFile) SetWriteTime(t time.Time) error { return s.base.SetWriteTime(t) }

// Security returns the file's stored descriptor.
func (s *streamFile) Security() ([]byte, error) { return s.base.Security() }

// SetSecurity stores the file's descriptor.
func (s *streamFile) SetSecurity(sd []byte) error { return s.base.SetSecurity(sd) }

// Close closes the file holding the stream.
func (s *streamFile) Close() error {
	if !s.closed.Swap(true) {
		s.base.fs.releaseStream(s.ref)
	}
	return s.base.Close()
}

// Security returns the stored security descriptor, nil when none is.
func (f *file) Security() ([]byte, error) {
	var v []byte
	err := f.control(func(fd int) (err error) {
		v, err = getxattr(fd, xattrSD)
		if err == syscall.ENOENT || isNoXattrSupport(err) {
			v, err = nil, nil
		}
		return err
	})
	return v, f.pathErr("security", err)
}

// SetSecurity stores a security descriptor.
func (f *file) SetSecurity(sd []byte) error {
	return f.pathErr("setsecurity", f.control(func(fd int) error {
		return setxattr(fd, xattrSD, sd, 0)
	}))
}

// ReadDirNames lists the names in a directory without describing them.
func (f *file) ReadDirNames() ([]string, error) {
	if !f.isDir {
		return nil, f.pathErr("readdir", syscall.ENOTDIR)
	}
	f.dirMu.Lock()
	defer f.dirMu.Unlock()
	var names []string
	err := f.control(func(fd int) (err error) {
		names, err = readNames(fd)
		return err
	})
	if f.name == "" && f.fs.hidden != "" {
		names = slices.DeleteFunc(names, func(n string) bool { return strings.EqualFold(n, f.fs.hidden) })
	}
	return names, f.pathErr("readdir", err)
}

// EAs returns the file's extended attributes, sorted by name.
func (f *file) EAs() ([]vfs.EA, error) {
	var out []vfs.EA
	err := f.control(func(fd int) error {
		names, err := listxattr(fd)
		if err != nil {
			return err
		}
		slices.Sort(names)
		for _, a := range names {
			n, ok := strings.CutPrefix(a, xattrEAPrefix)
			if !ok {
				continue
			}
			v, err := getxattr(fd, a)
			if err == syscall.ENOENT {
				continue
			}
			if err != nil {
				return err
			}
			out = append(out, vfs.EA{Name: n, Value: v})
		}
		return nil
	})
	return out, f.pathErr("eas", err)
}

// SetEA stores or, with an empty value, removes an extended attribute.
func (f *file) SetEA(name string, value []byte) error {
	if name == "" || strings.IndexByte(name, 0) >= 0 || len(xattrEAPrefix)+len(name) > 255 {
		return f.pathErr("setea", syscall.EINVAL)
	}
	return f.pathErr("setea", f.control(func(fd int) error {
		if len(value) == 0 {
			err := xattrErr(unix.Fremovexattr(fd, xattrEAPrefix+name))
			if err == syscall.ENOENT {
				err = nil
			}
			return err
		}
		return setxattr(fd, xattrEAPrefix+name, value, 0)
	}))
}

// EAs returns the file's extended attributes.
func (s *streamFile) EAs() ([]vfs.EA, error) { return s.base.EAs() }

// SetEA stores an extended attribute of the file.
func (s *streamFile) SetEA(name string, value []byte) error { return s.base.SetEA(name, value) }
