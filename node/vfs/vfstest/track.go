package vfstest

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/smbcluster/smbcluster/node/vfs"
)

// Tracker counts the files opened through its FS that are not yet closed.
type Tracker struct {
	fs vfs.FS // immutable

	mu   sync.Mutex
	open map[*trackedFile]string // open file → name
}

// TrackOpens wraps fsys; open files through Tracker.FS.
func TrackOpens(fsys vfs.FS) *Tracker {
	return &Tracker{fs: fsys, open: make(map[*trackedFile]string)}
}

// FS returns the wrapping FS. It implements vfs.StreamFS when the wrapped
// FS does, and its files implement vfs.FdFile when the wrapped ones do.
func (t *Tracker) FS() vfs.FS {
	if _, ok := t.fs.(vfs.StreamFS); ok {
		return trackedStreamFS{trackedFS{t}}
	}
	return trackedFS{t}
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

func (w trackedFS) Open(name string, o vfs.OpenOptions) (vfs.File, bool, error) {
	f, created, err := w.t.fs.Open(name, o)
	if err != nil {
		return f, created, err
	}
	tf := &trackedFile{File: f, t: w.t}
	w.t.mu.Lock()
	w.t.open[tf] = name
	w.t.mu.Unlock()
	if fd, ok := f.(vfs.FdFile); ok {
		return trackedFdFile{tf, fd}, created, nil
	}
	return tf, created, nil
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

type trackedFdFile struct {
	*trackedFile
	fd vfs.FdFile
}

func (f trackedFdFile) Fd() uintptr { return f.fd.Fd() }
