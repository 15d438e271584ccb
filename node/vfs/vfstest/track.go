package vfstest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/smbcluster/smbcluster/node/vfs"
)

// Tracker counts the files opened through its FS that are not yet closed.
type Tracker struct {
	fs vfs.FS // immutable

	mu    sync.Mutex
	open  map[*trackedFile]string // open file → name
	syncs int                     // Sync calls on its files
}

// TrackOpens wraps fsys; open files through Tracker.FS.
func TrackOpens(fsys vfs.FS) *Tracker {
	return &Tracker{fs: fsys, open: make(map[*trackedFile]string)}
}

// FS returns the wrapping FS. It implements vfs.StreamOpener when the
// wrapped FS implements vfs.StreamFS (its stream methods then fail with
// errors.ErrUnsupported unless the wrapped FS is a vfs.StreamOpener), and
// its files implement vfs.FdFile when the wrapped ones do. Files always
// implement vfs.SecurityFile, vfs.NameReader and vfs.EAFile, failing with
// errors.ErrUnsupported when the wrapped file does not.
func (t *Tracker) FS() vfs.FS {
	if _, ok := t.fs.(vfs.StreamFS); ok {
		return trackedStreamFS{trackedFS{t}}
	}
	return trackedFS{t}
}

// Syncs returns how often a file was synced (vfs.File.Sync).
func (t *Tracker) Syncs() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.syncs
}

// Open returns how many files are open.
func (t *Tracker) Open() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.open)
}

// OpenNames returns the names of the open files, sorted, for diagnostics.
func (t *Tracker) OpenNames() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var names []string
	for _, name := range t.open {
		names = append(names, fmt.Sprintf("%q", name))
	}
	slices.Sort(names)
	return names
}

// Check fails tb when files remain open.
func (t *Tracker) Check(tb testing.TB) {
	tb.Helper()
	if n := t.Open(); n != 0 {
		tb.Errorf("vfstest: %d file(s) left open: %v", n, t.OpenNames())
	}
}

type trackedFS struct{ t *Tracker }

type trackedStreamFS struct{ trackedFS }

func (s trackedStreamFS) Streams(name string) ([]vfs.StreamInfo, error) {
	return s.t.fs.(vfs.StreamFS).Streams(name)
}

// OpenStream, RemoveStream and RenameStream forward to the wrapped FS, or
// fail with errors.ErrUnsupported when it is not a vfs.StreamOpener.
func (s trackedStreamFS) OpenStream(name, stream string, o vfs.OpenOptions) (vfs.File, bool, error) {
	so, ok := s.t.fs.(vfs.StreamOpener)
	if !ok {
		return nil, false, errors.ErrUnsupported
	}
	f, created, err := so.OpenStream(name, stream, o)
	if err != nil {
		return f, created, err
	}
	return s.track(f, name+":"+stream), created, nil
}

func (s trackedStreamFS) RemoveStream(name, stream string) error {
	if so, ok := s.t.fs.(vfs.StreamOpener); ok {
		return so.RemoveStream(name, stream)
	}
	return errors.ErrUnsupported
}

func (s trackedStreamFS) RenameStream(name, oldStream, newStream string, replace bool) error {
	if so, ok := s.t.fs.(vfs.StreamOpener); ok {
		return so.RenameStream(name, oldStream, newStream, replace)
	}
	return errors.ErrUnsupported
}

func (w trackedFS) Open(name string, o vfs.OpenOptions) (vfs.File, bool, error) {
	f, created, err := w.t.fs.Open(name, o)
	if err != nil {
		return f, created, err
	}
	return w.track(f, name), created, nil
}

// track records f as open under name and wraps it.
func (w trackedFS) track(f vfs.File, name string) vfs.File {
	tf := &trackedFile{File: f, t: w.t}
	w.t.mu.Lock()
	w.t.open[tf] = name
	w.t.mu.Unlock()
	if fd, ok := f.(vfs.FdFile); ok {
		return trackedFdFile{tf, fd}
	}
	return tf
}

func (w trackedFS) Stat(name string) (vfs.FileInfo, error) { return w.t.fs.Stat(name) }
func (w trackedFS) Remove(name string) error               { return w.t.fs.Remove(name) }
func (w trackedFS) Rename(o, n string, replace bool) error { return w.t.fs.Rename(o, n, replace) }
func (w trackedFS) StatFS() (vfs.FSInfo, error)            { return w.t.fs.StatFS() }

type trackedFile struct {
	vfs.File
	t *Tracker
}

// Close closes the file and forgets it (once, however often it is called).
func (f *trackedFile) Close() error {
	f.t.mu.Lock()
	delete(f.t.open, f)
	f.t.mu.Unlock()
	return f.File.Close()
}

// Sync syncs the file and counts it.
func (f *trackedFile) Sync() error {
	f.t.mu.Lock()
	f.t.syncs++
	f.t.mu.Unlock()
	return f.File.Sync()
}

// Security, SetSecurity, ReadDirNames, EAs and SetEA forward to the wrapped file, or
// fail with errors.ErrUnsupported when it lacks them.
func (f *trackedFile) Security() ([]byte, error) {
	if sf, ok := f.File.(vfs.SecurityFile); ok {
		return sf.Security()
	}
	return nil, errors.ErrUnsupported
}

func (f *trackedFile) SetSecurity(sd []byte) error {
	if sf, ok := f.File.(vfs.SecurityFile); ok {
		return sf.SetSecurity(sd)
	}
	return errors.ErrUnsupported
}

func (f *trackedFile) ReadDirNames() ([]string, error) {
	if nr, ok := f.File.(vfs.NameReader); ok {
		return nr.ReadDirNames()
	}
	return nil, errors.ErrUnsupported
}

func (f *trackedFile) EAs() ([]vfs.EA, error) {
	if ef, ok := f.File.(vfs.EAFile); ok {
		return ef.EAs()
	}
	return nil, errors.ErrUnsupported
}

func (f *trackedFile) SetEA(name string, value []byte) error {
	if ef, ok := f.File.(vfs.EAFile); ok {
		return ef.SetEA(name, value)
	}
	return errors.ErrUnsupported
}

type trackedFdFile struct {
	*trackedFile
	fd vfs.FdFile
}

func (f trackedFdFile) Fd() uintptr { return f.fd.Fd() }

// PunchHole and AllocatedRanges forward to the wrapped file, or fail
// with errors.ErrUnsupported when it lacks them.
func (f *trackedFile) PunchHole(off, n int64) error {
	if sf, ok := f.File.(vfs.SparseFile); ok {
		return sf.PunchHole(off, n)
	}
	return errors.ErrUnsupported
}

func (f *trackedFile) AllocatedRanges(off, end int64, limit int) ([]vfs.Range, error) {
	if sf, ok := f.File.(vfs.SparseFile); ok {
		return sf.AllocatedRanges(off, end, limit)
	}
	return nil, errors.ErrUnsupported
}
