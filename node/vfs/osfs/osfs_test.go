package osfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

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
	for _, rec := range []dosAttrib{{}, {HasAttrs: true, Attrs: 0x27}, {HasCreation: true}, {HasAttrs: true, Attrs: 1, HasCreation: true}, {HasChange: true}} {
		if rec.HasCreation {
			rec.Creation = rec.Creation.AddDate(2024, 0, 0)
		}
		if rec.HasChange {
			rec.Change, rec.ChangeMtime = time.Unix(1e9, 5), time.Unix(2e9, 7)
		}
		b := make([]byte, rec.Size())
		rec.Encode(b)
		var got dosAttrib
		if err := got.Decode(b); err != nil || got.HasAttrs != rec.HasAttrs || got.Attrs != rec.Attrs ||
			got.HasCreation != rec.HasCreation || !got.Creation.Equal(rec.Creation) && rec.HasCreation ||
			got.HasChange != rec.HasChange || !got.Change.Equal(rec.Change) || !got.ChangeMtime.Equal(rec.ChangeMtime) {
			t.Errorf("round trip %+v -> %+v, %v", rec, got, err)
		}
		// A prefix shorter than the original 16-byte record never decodes;
		// a 16-byte prefix is a record without the change-time extension.
		for i := range dosMinSize {
			if err := got.Decode(b[:i]); err == nil {
				t.Errorf("truncated prefix of %d bytes decoded", i)
			}
		}
		if err := got.Decode(b[:dosMinSize]); err != nil || got.HasChange {
			t.Errorf("16-byte record: %+v, %v", got, err)
		}
	}
	// Times past int64 nanoseconds (1678–2262), which SMB clients set
	// (smbtorture smb2.timestamps.time_t_15032385535), are kept exactly.
	for _, ts := range []time.Time{time.Unix(15032385535, 0), time.Unix(10000000000, 100), time.Date(1601, 1, 2, 0, 0, 0, 0, time.UTC), time.Unix(1e9, 5)} {
		rec := dosAttrib{HasCreation: true, Creation: ts, HasChange: true, Change: ts, ChangeMtime: time.Unix(2e9, 7)}
		b := make([]byte, rec.Size())
		rec.Encode(b)
		var got dosAttrib
		if err := got.Decode(b); err != nil || !got.Creation.Equal(ts) || !got.Change.Equal(ts) || !got.ChangeMtime.Equal(rec.ChangeMtime) && fitsUnixNano(ts) {
			t.Errorf("time %v: %+v, %v", ts, got, err)
		}
	}
}

// TestTimesBeyond2262: SetInfo keeps a creation and a write time past
// int64 nanoseconds, as Stat reads them back.
func TestTimesBeyond2262(t *testing.T) {
	fsys, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f, _, err := fsys.Open("f", vfs.OpenOptions{Create: vfs.CreateIfAbsent, Read: true, Write: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ts := time.Unix(10000000000, 0) // 2286
	if err := f.SetInfo(ts, time.Time{}, ts, time.Time{}, nil); err != nil {
		t.Fatal(err)
	}
	fi, err := f.Stat()
	if err != nil || !fi.CreationTime.Equal(ts) || !fi.LastWriteTime.Equal(ts) {
		t.Fatalf("creation %v, write %v (%v), want %v", fi.CreationTime, fi.LastWriteTime, err, ts)
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

// TestConformanceTmpfs runs the suite on /dev/shm when it is a tmpfs: it
// checks user xattr support (or its graceful absence) on a second kind of
// filesystem.
func TestConformanceTmpfs(t *testing.T) {
	var st syscall.Statfs_t
	if err := syscall.Statfs("/dev/shm", &st); err != nil || st.Type != 0x01021994 {
		t.Skip("/dev/shm is not a tmpfs")
	}
	vfstest.TestFS(t, func(t *testing.T) vfs.FS {
		dir, err := os.MkdirTemp("/dev/shm", "osfs-test-")
		if err != nil {
			t.Skip(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		root := filepath.Join(dir, "share")
		if err := os.Mkdir(root, 0o755); err != nil {
			t.Fatal(err)
		}
		fsys, err := New(root)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fsys.Close() })
		t.Logf("tmpfs: btime=%v xattrs=%v", fsys.btime, fsys.XattrsSupported())
		return fsys
	})
}

// TestWithoutXattrsOrBirthTime forces the degraded paths: no user xattrs
// (SetInfo's attributes are dropped without error) and no birth time (the
// creation time is recorded at create and stays put).
func TestWithoutXattrsOrBirthTime(t *testing.T) {
	t.Run("suite without xattrs", func(t *testing.T) {
		vfstest.TestFS(t, func(t *testing.T) vfs.FS {
			fsys := newTestFS(t)
			fsys.noXattr.Store(true)
			return fsys
		})
	})
	fsys := newTestFS(t)
	fsys.noXattr.Store(true)
	f, _, err := fsys.Open("f", vfs.OpenOptions{Write: true, Create: vfs.CreateExclusive, Attributes: vfs.AttrHidden})
	if err != nil {
		t.Fatal(err)
	}
	hidden := vfs.AttrHidden
	if err := f.SetInfo(time.Now(), time.Time{}, time.Time{}, time.Time{}, &hidden); err != nil {
		t.Errorf("SetInfo without xattrs: %v", err)
	}
	if fi, _ := f.Stat(); fi.Attributes != vfs.AttrArchive {
		t.Errorf("attrs without xattrs: %#x, want derived archive", fi.Attributes)
	}
	f.Close()

	fsys = newTestFS(t)
	fsys.btime = false
	f, _, err = fsys.Open("g", vfs.OpenOptions{Write: true, Create: vfs.CreateExclusive})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	before, _ := f.Stat()
	if err := f.SetInfo(time.Time{}, time.Time{}, before.CreationTime.Add(time.Hour), time.Time{}, nil); err != nil {
		t.Fatal(err)
	}
	after, _ := f.Stat()
	if !after.CreationTime.Equal(before.CreationTime) || before.CreationTime.IsZero() {
		t.Errorf("creation time moved from %v to %v", before.CreationTime, after.CreationTime)
	}
}

func BenchmarkReadDir10k(b *testing.B) {
	fsys := newTestFS(b)
	for i := range 10000 {
		if err := os.WriteFile(filepath.Join(fsys.Root(), fmt.Sprintf("f%05d", i)), nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	d, _, err := fsys.Open("", vfs.OpenOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	b.ReportAllocs()
	for b.Loop() {
		if l, err := d.ReadDir(); err != nil || len(l) != 10000 {
			b.Fatal(len(l), err)
		}
	}
}

// TestAllocationIsData: a file's AllocationSize leaves out the block ext4
// gives extended attributes that do not fit in the inode (a stored
// descriptor here) and space reserved beyond the end of file; a directory
// reports 0 (smbtorture smb2.setinfo, smb2.create.open).
func TestAllocationIsData(t *testing.T) {
	fsys := newTestFS(t)
	f, _, err := fsys.Open("f", vfs.OpenOptions{Read: true, Write: true, Create: vfs.CreateIfAbsent})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.(vfs.SecurityFile).SetSecurity(make([]byte, 3000)); err != nil {
		t.Skipf("no xattrs here: %v", err)
	}
	if err := f.Allocate(1 << 20); err != nil {
		t.Fatal(err)
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if fi.AllocationSize != 0 {
		t.Fatalf("empty file with an xattr and reserved space reports allocation %d", fi.AllocationSize)
	}
	if _, err := f.WriteAt([]byte("x"), 10000); err != nil {
		t.Fatal(err)
	}
	if fi, _ = f.Stat(); fi.AllocationSize > 12288 || fi.AllocationSize%4096 != 0 {
		t.Fatalf("10001-byte file reports allocation %d", fi.AllocationSize)
	}
	d, _, err := fsys.Open("d", vfs.OpenOptions{Read: true, Create: vfs.CreateExclusive, Kind: vfs.DirOnly})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if fi, err = fsys.Stat("d"); err != nil || fi.AllocationSize != 0 {
		t.Fatalf("directory allocation %d (%v)", fi.AllocationSize, err)
	}
}

func TestDataAllocation(t *testing.T) {
	for _, c := range []struct{ blocks, size, want int64 }{
		{0, 0, 0}, {4096, 0, 0}, {8192, 37, 4096}, {4096, 1 << 40, 4096}, {1 << 20, 1 << 20, 1 << 20},
	} {
		if got := dataAllocation(c.blocks, c.size); got != c.want {
			t.Errorf("dataAllocation(%d, %d) = %d, want %d", c.blocks, c.size, got, c.want)
		}
	}
}

// TestHide: a hidden root entry is neither listed nor reachable, by any
// case of its name, while the same name below the root is an ordinary one.
func TestHide(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{".smbcluster", "sub/.smbcluster"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fsys, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	fsys.Hide(".smbcluster")
	for _, name := range []string{".smbcluster", ".SMBCluster", ".smbcluster/probe", ".smbcluster/x/y"} {
		if _, err := fsys.Stat(name); !errors.Is(err, fs.ErrPermission) {
			t.Errorf("Stat(%q) = %v, want EACCES", name, err)
		}
		if _, _, err := fsys.Open(name, vfs.OpenOptions{Read: true}); !errors.Is(err, fs.ErrPermission) {
			t.Errorf("Open(%q) = %v, want EACCES", name, err)
		}
	}
	if err := fsys.Rename("sub", ".smbcluster/sub", false); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("Rename into the hidden entry = %v, want EACCES", err)
	}
	if err := fsys.Remove(".smbcluster"); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("Remove(hidden) = %v, want EACCES", err)
	}
	if _, err := fsys.Stat("sub/.smbcluster"); err != nil {
		t.Errorf("Stat below the root: %v", err)
	}
	d, _, err := fsys.Open("", vfs.OpenOptions{Read: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	list, err := d.ReadDir()
	if err != nil {
		t.Fatal(err)
	}
	names, err := d.(vfs.NameReader).ReadDirNames()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Name != "sub" || !slices.Equal(names, []string{"sub"}) {
		t.Errorf("root lists %v and %v, want only sub", list, names)
	}
}
