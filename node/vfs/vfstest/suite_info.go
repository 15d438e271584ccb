package vfstest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/node/vfs"
)

// persistsAttrs reports whether fsys keeps attributes and creation times.
func persistsAttrs(fsys vfs.FS) bool {
	x, ok := fsys.(XattrReporter)
	return !ok || x.XattrsSupported()
}

func testSetInfo(t *testing.T, fsys vfs.FS) {
	writeFile(t, fsys, "f", "x")
	open(t, fsys, "d", mkdir)
	access := time.Date(2001, 2, 3, 4, 5, 6, 7000, time.UTC)
	write := time.Date(2002, 3, 4, 5, 6, 7, 8000, time.UTC)
	creation := time.Date(1999, 12, 31, 23, 59, 59, 100, time.UTC)
	f := open(t, fsys, "f", vfs.OpenOptions{Read: true, Write: true})
	if err := f.SetInfo(time.Time{}, access, write, time.Time{}, nil); err != nil {
		t.Fatalf("SetInfo times: %v", err)
	}
	fi := mustStat(t, fsys, "f")
	if !fi.LastAccessTime.Equal(access) || !fi.LastWriteTime.Equal(write) {
		t.Errorf("times: access %v write %v, want %v %v", fi.LastAccessTime, fi.LastWriteTime, access, write)
	}
	// Zero times leave the others alone.
	later := write.Add(time.Hour)
	if err := f.SetInfo(time.Time{}, time.Time{}, later, time.Time{}, nil); err != nil {
		t.Fatal(err)
	}
	if fi := mustStat(t, fsys, "f"); !fi.LastAccessTime.Equal(access) || !fi.LastWriteTime.Equal(later) {
		t.Errorf("partial SetInfo: access %v write %v", fi.LastAccessTime, fi.LastWriteTime)
	}
	if !persistsAttrs(fsys) {
		t.Log("filesystem keeps no user xattrs: attribute persistence not checked")
		return
	}
	attrs := vfs.AttrHidden | vfs.AttrReadOnly | vfs.AttrDirectory // directory bit is not stored
	if err := f.SetInfo(creation, time.Time{}, time.Time{}, time.Time{}, &attrs); err != nil {
		t.Fatalf("SetInfo creation+attrs: %v", err)
	}
	f.Close()
	fi = mustStat(t, fsys, "f")
	if !fi.CreationTime.Equal(creation) || fi.Attributes != vfs.AttrHidden|vfs.AttrReadOnly {
		t.Errorf("after reopen: creation %v attrs %#x", fi.CreationTime, fi.Attributes)
	}
	g := open(t, fsys, "f", rdOnly)
	if fi, _ := g.Stat(); !fi.CreationTime.Equal(creation) || fi.Attributes != vfs.AttrHidden|vfs.AttrReadOnly {
		t.Errorf("File.Stat: creation %v attrs %#x", fi.CreationTime, fi.Attributes)
	}
	zero := uint32(0)
	if err := g.SetInfo(time.Time{}, time.Time{}, time.Time{}, time.Time{}, &zero); err != nil {
		t.Fatal(err)
	}
	if fi := mustStat(t, fsys, "f"); fi.Attributes != vfs.AttrNormal || !fi.CreationTime.Equal(creation) {
		t.Errorf("cleared attrs: %#x (want AttrNormal), creation %v", fi.Attributes, fi.CreationTime)
	}
	hidden := vfs.AttrHidden
	d := open(t, fsys, "d", vfs.OpenOptions{Write: true})
	if err := d.SetInfo(time.Time{}, time.Time{}, time.Time{}, time.Time{}, &hidden); err != nil {
		t.Fatal(err)
	}
	if fi := mustStat(t, fsys, "d"); fi.Attributes != vfs.AttrDirectory|vfs.AttrHidden {
		t.Errorf("dir attrs %#x", fi.Attributes)
	}
}

func testCreateAttributes(t *testing.T, fsys vfs.FS) {
	writeFile(t, fsys, "plain", "")
	if fi := mustStat(t, fsys, "plain"); fi.Attributes != vfs.AttrArchive {
		t.Errorf("new file attrs %#x, want archive", fi.Attributes)
	}
	open(t, fsys, "dir", mkdir)
	if fi := mustStat(t, fsys, "dir"); fi.Attributes != vfs.AttrDirectory {
		t.Errorf("new dir attrs %#x, want directory", fi.Attributes)
	}
	if fi := mustStat(t, fsys, "plain"); fi.CreationTime.IsZero() || fi.LastWriteTime.IsZero() || fi.ChangeTime.IsZero() {
		t.Errorf("zero times: %+v", fi)
	}
	if !persistsAttrs(fsys) {
		return
	}
	open(t, fsys, "h", vfs.OpenOptions{Write: true, Create: vfs.CreateExclusive, Attributes: vfs.AttrHidden})
	if fi := mustStat(t, fsys, "h"); fi.Attributes != vfs.AttrHidden|vfs.AttrArchive {
		t.Errorf("created hidden file attrs %#x", fi.Attributes)
	}
	open(t, fsys, "hd", vfs.OpenOptions{Create: vfs.CreateExclusive, Kind: vfs.DirOnly, Attributes: vfs.AttrHidden})
	if fi := mustStat(t, fsys, "hd"); fi.Attributes != vfs.AttrHidden|vfs.AttrDirectory {
		t.Errorf("created hidden dir attrs %#x", fi.Attributes)
	}
}

func testFileIDStable(t *testing.T, fsys vfs.FS) {
	writeFile(t, fsys, "a", "x")
	writeFile(t, fsys, "b", "y")
	open(t, fsys, "d", mkdir)
	a, b, d := mustStat(t, fsys, "a").FileID, mustStat(t, fsys, "b").FileID, mustStat(t, fsys, "d").FileID
	if a == b || a == d || b == d {
		t.Errorf("FileIDs not distinct: %d %d %d", a, b, d)
	}
	if err := fsys.Rename("a", "d/a2", false); err != nil {
		t.Fatal(err)
	}
	if got := mustStat(t, fsys, "d/a2").FileID; got != a {
		t.Errorf("FileID changed across rename: %d -> %d", a, got)
	}
	if err := fsys.Rename("d", "d2", false); err != nil {
		t.Fatal(err)
	}
	if got := mustStat(t, fsys, "d2").FileID; got != d {
		t.Errorf("dir FileID changed across rename: %d -> %d", d, got)
	}
	f := open(t, fsys, "d2/a2", rdOnly)
	if fi, _ := f.Stat(); fi.FileID != a {
		t.Errorf("File.Stat FileID %d, want %d", fi.FileID, a)
	}
}

func testClosedFile(t *testing.T, fsys vfs.FS) {
	f, _, err := fsys.Open("f", rw)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("x"), 0); err == nil {
		t.Error("WriteAt after Close succeeded")
	}
	if _, err := f.ReadAt(make([]byte, 1), 0); err == nil {
		t.Error("ReadAt after Close succeeded")
	}
	if _, err := f.Stat(); err == nil {
		t.Error("Stat after Close succeeded")
	}
	if err := f.Close(); err == nil {
		t.Error("second Close succeeded")
	}
}

func testStatFS(t *testing.T, fsys vfs.FS) {
	st, err := fsys.StatFS()
	if err != nil {
		t.Fatal(err)
	}
	if st.TotalBytes <= 0 || st.BlockSize == 0 || st.MaxNameLen == 0 || st.FSName == "" || st.AvailBytes > st.TotalBytes {
		t.Errorf("StatFS: %+v", st)
	}
}

// testCreateRace: of many concurrent CreateIfAbsent opens exactly one
// reports created.
func testCreateRace(t *testing.T, fsys vfs.FS) {
	const n = 16
	var wg sync.WaitGroup
	var created atomic.Int32
	for _, o := range []vfs.OpenOptions{rw, {Create: vfs.CreateIfAbsent, Kind: vfs.DirOnly}} {
		created.Store(0)
		name := fmt.Sprintf("race-%d", o.Kind)
		for range n {
			wg.Go(func() {
				f, c, err := fsys.Open(name, o)
				if err != nil {
					t.Errorf("Open(%q): %v", name, err)
					return
				}
				f.Close()
				if c {
					created.Add(1)
				}
			})
		}
		wg.Wait()
		if got := created.Load(); got != 1 {
			t.Errorf("%q: %d opens reported created, want 1", name, got)
		}
	}
}
