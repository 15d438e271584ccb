package vfstest

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/smbcluster/smbcluster/node/vfs"
)

// badNames must never be accepted: they are malformed or climb out.
var badNames = []string{
	"..", "../x", "a/..", "a/../../x", "a/../a/../../x", "/", "/etc/passwd", "//x",
	".", "./a", "a//b", "a/", "x\x00y", "\x00", "a/\x00/b",
}

func testBadNames(t *testing.T, fsys vfs.FS) {
	open(t, fsys, "a", mkdir)
	writeFile(t, fsys, "src", "s")
	out := NewSentinel(t, fsys)
	for _, name := range badNames {
		if _, err := fsys.Stat(name); err == nil {
			t.Errorf("Stat(%q) succeeded", name)
		}
		for _, o := range []vfs.OpenOptions{rdOnly, rw, mkdir, {Write: true, Create: vfs.CreateExclusive}} {
			if f, _, err := fsys.Open(name, o); err == nil {
				f.Close()
				t.Errorf("Open(%q, %+v) succeeded", name, o)
			}
		}
		if err := fsys.Remove(name); err == nil {
			t.Errorf("Remove(%q) succeeded", name)
		}
		for _, replace := range []bool{false, true} {
			if err := fsys.Rename(name, "z", replace); err == nil {
				t.Errorf("Rename(%q, z) succeeded", name)
			}
			if err := fsys.Rename("src", name, replace); err == nil {
				t.Errorf("Rename(src, %q) succeeded", name)
			}
		}
	}
	for _, name := range []string{"..", "../x", "a/../../x"} {
		_, err := fsys.Stat(name)
		if !errors.Is(err, fs.ErrPermission) && !errors.Is(err, syscall.EINVAL) {
			t.Errorf("Stat(%q): %v, want permission or invalid", name, err)
		}
	}
	list, err := open(t, fsys, "", rdOnly).ReadDir()
	if err != nil || !slices.Equal(names(list), []string{"a", "src"}) {
		t.Errorf("root after bad names: %v, %v", names(list), err)
	}
	out.Check(t)
}

// Sentinel is the state outside a Rooted share's root that must survive.
type Sentinel struct {
	dir, root string // parent of the root, and the root
	content   map[string]string
}

// NewSentinel plants files next to a Rooted FS's root (in its parent
// directory, which must be private to the test); for other backends it
// returns nil, whose Check does nothing.
func NewSentinel(t testing.TB, fsys vfs.FS) *Sentinel {
	r, ok := fsys.(Rooted)
	if !ok {
		return nil
	}
	s := &Sentinel{dir: filepath.Dir(r.Root()), root: filepath.Clean(r.Root())}
	for _, p := range []string{"sentinel", "outside/secret", "x", "z", "src"} {
		full := filepath.Join(s.dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("keep:"+p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s.content = s.snapshot(t)
	return s
}

// snapshot maps every path below dir, except inside the root, to its
// content (or its type for non-regular files).
func (s *Sentinel) snapshot(t testing.TB) map[string]string {
	m := map[string]string{}
	err := filepath.WalkDir(s.dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == s.root {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(s.dir, p)
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			m[rel] = string(b)
		} else {
			m[rel] = d.Type().String()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Check fails t if anything outside the root changed.
func (s *Sentinel) Check(t testing.TB) {
	t.Helper()
	if s == nil {
		return
	}
	now := s.snapshot(t)
	for k, v := range s.content {
		if now[k] != v {
			t.Errorf("outside the root: %q was %q, now %q", k, v, now[k])
		}
	}
	for k, v := range now {
		if _, ok := s.content[k]; !ok {
			t.Errorf("outside the root: %q appeared (%q)", k, v)
		}
	}
}
