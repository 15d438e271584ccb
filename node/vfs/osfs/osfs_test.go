package osfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/smbcluster/smbcluster/node/vfs"
	"github.com/smbcluster/smbcluster/node/vfs/vfstest"
)

// newTestFS returns an FS rooted at <private dir>/share, so the suite can
// plant sentinels in the private parent.
func newTestFS(t testing.TB) *FS {
	t.Helper()
	root := filepath.Join(t.TempDir(), "share")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	fsys, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.Close() })
	return fsys
}

func TestConformance(t *testing.T) {
	vfstest.TestFS(t, func(t *testing.T) vfs.FS { return newTestFS(t) })
}

func TestNewErrors(t *testing.T) {
	if _, err := New(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("New(missing): %v", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(file); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("New(file): %v", err)
	}
}

func TestFdFile(t *testing.T) {
	fsys := newTestFS(t)
	f, _, err := fsys.Open("f", vfs.OpenOptions{Read: true, Write: true, Create: vfs.CreateIfAbsent})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd, ok := f.(vfs.FdFile)
	if !ok {
		t.Fatal("osfs file is not a vfs.FdFile")
	}
	if _, err := f.WriteAt([]byte("zero-copy"), 0); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 9)
	if n, err := syscall.Pread(int(fd.Fd()), b, 0); n != 9 || err != nil || string(b) != "zero-copy" {
		t.Errorf("pread on Fd(): %d %q %v", n, b, err)
	}
}

func TestSpecialFilesRefused(t *testing.T) {
	fsys := newTestFS(t)
	if err := syscall.Mkfifo(filepath.Join(fsys.Root(), "fifo"), 0o644); err != nil {
		t.Skip(err)
	}
	// O_NONBLOCK keeps this from hanging; the FIFO is refused.
	if _, _, err := fsys.Open("fifo", vfs.OpenOptions{Read: true}); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("Open(fifo): %v", err)
	}
}

func TestDOSAttribRoundTrip(t *testing.T) {
	for _, rec := range []dosAttrib{{}, {HasAttrs: true, Attrs: 0x27}, {HasCreation: true}, {HasAttrs: true, Attrs: 1, HasCreation: true}} {
		if rec.HasCreation {
			rec.Creation = rec.Creation.AddDate(2024, 0, 0)
		}
		b := make([]byte, rec.Size())
		rec.Encode(b)
		var got dosAttrib
		if err := got.Decode(b); err != nil || got.HasAttrs != rec.HasAttrs || got.Attrs != rec.Attrs ||
			got.HasCreation != rec.HasCreation || !got.Creation.Equal(rec.Creation) && rec.HasCreation {
			t.Errorf("round trip %+v -> %+v, %v", rec, got, err)
		}
		for i := range b {
			if err := got.Decode(b[:i]); err == nil {
				t.Errorf("truncated prefix of %d bytes decoded", i)
			}
		}
	}
}

func FuzzDOSAttrib(f *testing.F) {
	f.Add([]byte{1, 3, 0, 0, 0x20, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{2})
	f.Fuzz(func(t *testing.T, b []byte) {
		var rec dosAttrib
		if rec.Decode(b) != nil {
			return
		}
		out := make([]byte, rec.Size())
		rec.Encode(out)
		var again dosAttrib
		if err := again.Decode(out); err != nil || again.Attrs != rec.Attrs || again.HasCreation != rec.HasCreation {
			t.Fatalf("re-decode %+v: %+v %v", rec, again, err)
		}
	})
}
