package vfstest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"syscall"
	"testing"

	"github.com/smbcluster/smbcluster/node/vfs"
)

// Rooted is implemented by backends over a real directory (osfs). The
// suite then also plants symbolic links in the root and a sentinel file in
// the root's parent directory, which must be private to the test.
type Rooted interface {
	Root() string
}

// XattrReporter is implemented by backends whose attributes and creation
// times persist only when the filesystem supports it.
type XattrReporter interface {
	XattrsSupported() bool
}

// TestFS runs the conformance suite against fresh filesystems from newFS.
func TestFS(t *testing.T, newFS func(t *testing.T) vfs.FS) {
	tests := []struct {
		name string
		fn   func(t *testing.T, fsys vfs.FS)
	}{
		{"OpenDispositions", testOpenDispositions},
		{"OpenKinds", testOpenKinds},
		{"ReadWrite", testReadWrite},
		{"Truncate", testTruncate},
		{"Mkdir", testMkdir},
		{"ReadDir", testReadDir},
		{"ReadDirLarge", testReadDirLarge},
		{"Remove", testRemove},
		{"RemoveWhileOpen", testRemoveWhileOpen},
		{"Rename", testRename},
		{"RenameDir", testRenameDir},
		{"StatRoot", testStatRoot},
		{"SetInfo", testSetInfo},
		{"CreateAttributes", testCreateAttributes},
		{"CreateRace", testCreateRace},
		{"FileIDStable", testFileIDStable},
		{"ClosedFile", testClosedFile},
		{"BadNames", testBadNames},
		{"Symlinks", testSymlinks},
		{"StatFS", testStatFS},
		{"Streams", testStreams},
		{"StreamRenameFollows", testStreamRenameFollows},
		{"Security", testSecurity},
		{"ReadDirNames", testReadDirNames},
		{"EAs", testEAs},
		{"Sparse", testSparse},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newFS(t)) })
	}
}

var (
	rw     = vfs.OpenOptions{Read: true, Write: true, Create: vfs.CreateIfAbsent}
	rdOnly = vfs.OpenOptions{Read: true}
	mkdir  = vfs.OpenOptions{Create: vfs.CreateExclusive, Kind: vfs.DirOnly}
)

// open opens name or fails the test; the file is closed at cleanup.
func open(t *testing.T, fsys vfs.FS, name string, o vfs.OpenOptions) vfs.File {
	t.Helper()
	f, _, err := fsys.Open(name, o)
	if err != nil {
		t.Fatalf("Open(%q, %+v): %v", name, o, err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// writeFile creates name holding data.
func writeFile(t *testing.T, fsys vfs.FS, name string, data string) {
	t.Helper()
	f, _, err := fsys.Open(name, vfs.OpenOptions{Write: true, Create: vfs.CreateIfAbsent, Truncate: true})
	if err != nil {
		t.Fatalf("create %q: %v", name, err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte(data), 0); err != nil {
		t.Fatalf("write %q: %v", name, err)
	}
}

// readFile returns the contents of name.
func readFile(t *testing.T, fsys vfs.FS, name string) string {
	t.Helper()
	f, _, err := fsys.Open(name, rdOnly)
	if err != nil {
		t.Fatalf("open %q: %v", name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, fi.Size)
	if n, err := f.ReadAt(b, 0); n != len(b) || (err != nil && err != io.EOF) {
		t.Fatalf("read %q: %d, %v", name, n, err)
	}
	return string(b)
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: err = %v, want %v", what, err, target)
	}
}

func mustStat(t *testing.T, fsys vfs.FS, name string) vfs.FileInfo {
	t.Helper()
	fi, err := fsys.Stat(name)
	if err != nil {
		t.Fatalf("Stat(%q): %v", name, err)
	}
	return fi
}

func testOpenDispositions(t *testing.T, fsys vfs.FS) {
	_, _, err := fsys.Open("a", rdOnly)
	wantErr(t, "OpenExisting missing", err, fs.ErrNotExist)
	f, created, err := fsys.Open("a", rw)
	if err != nil || !created {
		t.Fatalf("CreateIfAbsent new: created=%v err=%v", created, err)
	}
	f.Close()
	f, created, err = fsys.Open("a", rw)
	if err != nil || created {
		t.Fatalf("CreateIfAbsent existing: created=%v err=%v", created, err)
	}
	f.Close()
	_, _, err = fsys.Open("a", vfs.OpenOptions{Write: true, Create: vfs.CreateExclusive})
	wantErr(t, "CreateExclusive existing", err, fs.ErrExist)
	f, created, err = fsys.Open("b", vfs.OpenOptions{Write: true, Create: vfs.CreateExclusive})
	if err != nil || !created {
		t.Fatalf("CreateExclusive new: created=%v err=%v", created, err)
	}
	f.Close()
	_, _, err = fsys.Open("missing/c", rw)
	wantErr(t, "create in missing dir", err, fs.ErrNotExist)
	_, _, err = fsys.Open("a/c", rw)
	wantErr(t, "create under a file", err, syscall.ENOTDIR)
	_, _, err = fsys.Open("", vfs.OpenOptions{Create: vfs.CreateExclusive, Kind: vfs.DirOnly})
	wantErr(t, "CreateExclusive root", err, fs.ErrExist)
	_, err = fsys.Stat("missing")
	wantErr(t, "Stat missing", err, fs.ErrNotExist)
	_, err = fsys.Stat("a/x")
	wantErr(t, "Stat under a file", err, syscall.ENOTDIR)
}

func testOpenKinds(t *testing.T, fsys vfs.FS) {
	writeFile(t, fsys, "f", "x")
	open(t, fsys, "d", mkdir)
	_, _, err := fsys.Open("d", vfs.OpenOptions{Read: true, Kind: vfs.RegularOnly})
	wantErr(t, "RegularOnly on dir", err, syscall.EISDIR)
	_, _, err = fsys.Open("d", vfs.OpenOptions{Write: true, Create: vfs.CreateIfAbsent, Kind: vfs.RegularOnly})
	wantErr(t, "RegularOnly create on dir", err, syscall.EISDIR)
	_, _, err = fsys.Open("f", vfs.OpenOptions{Read: true, Kind: vfs.DirOnly})
	wantErr(t, "DirOnly on file", err, syscall.ENOTDIR)
	_, _, err = fsys.Open("f", vfs.OpenOptions{Create: vfs.CreateIfAbsent, Kind: vfs.DirOnly})
	wantErr(t, "DirOnly create on file", err, syscall.ENOTDIR)
	// A directory opened for writing (SMB attribute access) opens read-only.
	d := open(t, fsys, "d", vfs.OpenOptions{Read: true, Write: true, Truncate: true})
	fi, err := d.Stat()
	if err != nil || !fi.IsDir {
		t.Fatalf("dir opened for write: %+v, %v", fi, err)
	}
	if _, err := d.WriteAt([]byte("x"), 0); err == nil {
		t.Error("WriteAt on a directory succeeded")
	}
	if _, err := d.ReadDir(); err != nil {
		t.Errorf("ReadDir on dir opened for write: %v", err)
	}
	root := open(t, fsys, "", vfs.OpenOptions{Write: true})
	if fi, err := root.Stat(); err != nil || !fi.IsDir {
		t.Errorf("root: %+v, %v", fi, err)
	}
	if _, err := open(t, fsys, "f", rdOnly).ReadDir(); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("ReadDir on a file: %v", err)
	}
}

func testReadWrite(t *testing.T, fsys vfs.FS) {
	f := open(t, fsys, "f", rw)
	if n, err := f.WriteAt([]byte("hello"), 0); n != 5 || err != nil {
		t.Fatalf("WriteAt: %d, %v", n, err)
	}
	if n, err := f.WriteAt([]byte("world"), 10); n != 5 || err != nil {
		t.Fatalf("WriteAt past EOF: %d, %v", n, err)
	}
	b := make([]byte, 15)
	if n, err := f.ReadAt(b, 0); n != 15 || err != nil {
		t.Fatalf("ReadAt: %d, %v", n, err)
	}
	if want := "hello\x00\x00\x00\x00\x00world"; string(b) != want {
		t.Errorf("content %q, want %q (sparse gap reads as zeros)", b, want)
	}
	if n, err := f.ReadAt(b, 12); n != 3 || err != nil || string(b[:3]) != "rld" {
		t.Errorf("short read at tail: %d %q, %v (want 3, nil)", n, b[:n], err)
	}
	for _, off := range []int64{15, 100} {
		if n, err := f.ReadAt(b, off); n != 0 || err != io.EOF {
			t.Errorf("ReadAt(%d) past EOF: %d, %v (want 0, io.EOF)", off, n, err)
		}
	}
	if fi, err := f.Stat(); err != nil || fi.Size != 15 || fi.IsDir {
		t.Errorf("Stat: %+v, %v", fi, err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<14) // 256 KiB
	if n, err := f.WriteAt(big, 1<<20); n != len(big) || err != nil {
		t.Fatalf("big WriteAt: %d, %v", n, err)
	}
	got := make([]byte, len(big))
	if n, err := f.ReadAt(got, 1<<20); n != len(big) || err != nil || !bytes.Equal(got, big) {
		t.Errorf("big ReadAt: %d, %v, equal=%v", n, err, bytes.Equal(got, big))
	}
	if err := f.Sync(); err != nil {
		t.Errorf("Sync: %v", err)
	}
	r := open(t, fsys, "f", rdOnly)
	if _, err := r.WriteAt([]byte("x"), 0); err == nil {
		t.Error("WriteAt on a read-only file succeeded")
	}
	w := open(t, fsys, "f", vfs.OpenOptions{Write: true})
	if _, err := w.ReadAt(b, 0); err == nil {
		t.Error("ReadAt on a write-only file succeeded")
	}
}

func testTruncate(t *testing.T, fsys vfs.FS) {
	writeFile(t, fsys, "f", "abcdef")
	f := open(t, fsys, "f", rw)
	if err := f.Truncate(100); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, fsys, "f"); got != "abcdef"+string(make([]byte, 94)) {
		t.Errorf("after grow: %q", got)
	}
	if err := f.Truncate(3); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, fsys, "f"); got != "abc" {
		t.Errorf("after shrink: %q", got)
	}
	if err := f.Allocate(1 << 20); err != nil {
		t.Errorf("Allocate: %v", err)
	}
	if fi, _ := f.Stat(); fi.Size != 3 {
		t.Errorf("Allocate changed the size to %d", fi.Size)
	}
	g := open(t, fsys, "f", vfs.OpenOptions{Read: true, Write: true, Truncate: true})
	if fi, _ := g.Stat(); fi.Size != 0 {
		t.Errorf("Open with Truncate: size %d", fi.Size)
	}
	if err := open(t, fsys, "f", rdOnly).Truncate(0); err == nil {
		t.Error("Truncate on a read-only file succeeded")
	}
	if err := open(t, fsys, "", rdOnly).Truncate(0); err == nil {
		t.Error("Truncate on a directory succeeded")
	}
}

func testMkdir(t *testing.T, fsys vfs.FS) {
	d, created, err := fsys.Open("d", mkdir)
	if err != nil || !created {
		t.Fatalf("mkdir: created=%v err=%v", created, err)
	}
	d.Close()
	_, _, err = fsys.Open("d", mkdir)
	wantErr(t, "mkdir existing", err, fs.ErrExist)
	d, created, err = fsys.Open("d", vfs.OpenOptions{Create: vfs.CreateIfAbsent, Kind: vfs.DirOnly})
	if err != nil || created {
		t.Fatalf("mkdir if absent, existing: created=%v err=%v", created, err)
	}
	d.Close()
	fi := mustStat(t, fsys, "d")
	if !fi.IsDir || fi.Attributes&vfs.AttrDirectory == 0 || fi.Size != 0 || fi.Name != "d" {
		t.Errorf("Stat dir: %+v", fi)
	}
	open(t, fsys, "d/e", mkdir)
	writeFile(t, fsys, "d/e/f", "x")
	if got := readFile(t, fsys, "d/e/f"); got != "x" {
		t.Errorf("nested file: %q", got)
	}
	_, _, err = fsys.Open("missing/d", mkdir)
	wantErr(t, "mkdir in missing dir", err, fs.ErrNotExist)
}

func names(infos []vfs.FileInfo) []string {
	out := make([]string, len(infos))
	for i, fi := range infos {
		out[i] = fi.Name
	}
	return out
}

func testReadDir(t *testing.T, fsys vfs.FS) {
	for _, n := range []string{"c", "a", "B", "b"} {
		writeFile(t, fsys, n, n)
	}
	open(t, fsys, "dir", mkdir)
	writeFile(t, fsys, "dir/inner", "x")
	d := open(t, fsys, "", rdOnly)
	list, err := d.ReadDir()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(list), []string{"B", "a", "b", "c", "dir"}; !slices.Equal(got, want) {
		t.Errorf("ReadDir names %v, want %v", got, want)
	}
	for _, fi := range list {
		if fi.IsDir != (fi.Name == "dir") {
			t.Errorf("entry %+v: wrong IsDir", fi)
		}
		if !fi.IsDir && fi.Size != 1 {
			t.Errorf("entry %+v: size", fi)
		}
		if st := mustStat(t, fsys, fi.Name); st.FileID != fi.FileID || st.Attributes != fi.Attributes {
			t.Errorf("ReadDir entry %+v disagrees with Stat %+v", fi, st)
		}
	}
	again, err := d.ReadDir()
	if err != nil || !slices.Equal(names(again), names(list)) {
		t.Errorf("second ReadDir: %v, %v", names(again), err)
	}
	sub := open(t, fsys, "dir", rdOnly)
	if l, err := sub.ReadDir(); err != nil || !slices.Equal(names(l), []string{"inner"}) {
		t.Errorf("ReadDir(dir): %v, %v", names(l), err)
	}
	empty := open(t, fsys, "empty", mkdir)
	if l, err := empty.ReadDir(); err != nil || len(l) != 0 {
		t.Errorf("ReadDir(empty): %v, %v", names(l), err)
	}
}

func testReadDirLarge(t *testing.T, fsys vfs.FS) {
	const n = 10000
	open(t, fsys, "big", mkdir)
	want := make([]string, n)
	for i := range n {
		want[i] = fmt.Sprintf("file-%05d", n-1-i)
		f, _, err := fsys.Open("big/"+want[i], vfs.OpenOptions{Write: true, Create: vfs.CreateExclusive})
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	slices.Sort(want)
	list, err := open(t, fsys, "big", rdOnly).ReadDir()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names(list), want) {
		t.Errorf("ReadDir of %d entries: got %d, not the sorted names", n, len(list))
	}
}

func testRemove(t *testing.T, fsys vfs.FS) {
	writeFile(t, fsys, "f", "x")
	open(t, fsys, "d", mkdir)
	writeFile(t, fsys, "d/g", "x")
	wantErr(t, "Remove non-empty dir", fsys.Remove("d"), syscall.ENOTEMPTY)
	if err := fsys.Remove("d/g"); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Remove("d"); err != nil {
		t.Fatalf("Remove empty dir: %v", err)
	}
	if err := fsys.Remove("f"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "Remove missing", fsys.Remove("f"), fs.ErrNotExist)
	_, err := fsys.Stat("d")
	wantErr(t, "Stat removed", err, fs.ErrNotExist)
	if err := fsys.Remove(""); err == nil {
		t.Error("Remove of the root succeeded")
	}
}

func testRemoveWhileOpen(t *testing.T, fsys vfs.FS) {
	writeFile(t, fsys, "f", "data")
	f := open(t, fsys, "f", vfs.OpenOptions{Read: true, Write: true})
	if err := fsys.Remove("f"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("more"), 4); err != nil {
		t.Errorf("WriteAt after Remove: %v", err)
	}
	b := make([]byte, 8)
	if n, err := f.ReadAt(b, 0); n != 8 || err != nil || string(b) != "datamore" {
		t.Errorf("ReadAt after Remove: %d %q %v", n, b, err)
	}
	writeFile(t, fsys, "f", "new")
	if got := readFile(t, fsys, "f"); got != "new" {
		t.Errorf("recreated file: %q", got)
	}
}

func testRename(t *testing.T, fsys vfs.FS) {
	writeFile(t, fsys, "a", "A")
	writeFile(t, fsys, "b", "B")
	wantErr(t, "Rename onto existing", fsys.Rename("a", "b", false), fs.ErrExist)
	if readFile(t, fsys, "a") != "A" || readFile(t, fsys, "b") != "B" {
		t.Error("failed rename changed the files")
	}
	if err := fsys.Rename("a", "b", true); err != nil {
		t.Fatalf("Rename replace: %v", err)
	}
	if got := readFile(t, fsys, "b"); got != "A" {
		t.Errorf("replaced content %q", got)
	}
	_, err := fsys.Stat("a")
	wantErr(t, "old name after rename", err, fs.ErrNotExist)
	if err := fsys.Rename("b", "c", false); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "Rename missing", fsys.Rename("nope", "x", false), fs.ErrNotExist)
	wantErr(t, "Rename missing, replace", fsys.Rename("nope", "x", true), fs.ErrNotExist)
	open(t, fsys, "d", mkdir)
	if err := fsys.Rename("c", "d/c", false); err != nil {
		t.Fatalf("Rename into dir: %v", err)
	}
	if got := readFile(t, fsys, "d/c"); got != "A" {
		t.Errorf("moved content %q", got)
	}
	if err := fsys.Rename("d/c", "d/c", true); err != nil {
		t.Errorf("Rename onto itself with replace: %v", err)
	}
	if err := fsys.Rename("d/c", "d", true); err == nil {
		t.Error("Rename of a file over a directory succeeded")
	}
	if err := fsys.Rename("", "x", false); err == nil {
		t.Error("Rename of the root succeeded")
	}
}

func testRenameDir(t *testing.T, fsys vfs.FS) {
	open(t, fsys, "d", mkdir)
	writeFile(t, fsys, "d/f", "x")
	open(t, fsys, "e", mkdir)
	wantErr(t, "dir over dir", fsys.Rename("d", "e", false), fs.ErrExist)
	if err := fsys.Rename("d", "e", true); err == nil {
		t.Error("dir over dir with replace succeeded")
	}
	if err := fsys.Rename("d", "d/sub", false); err == nil {
		t.Error("dir into its own subtree succeeded")
	}
	if err := fsys.Rename("d", "e/moved", false); err != nil {
		t.Fatalf("Rename dir: %v", err)
	}
	if got := readFile(t, fsys, "e/moved/f"); got != "x" {
		t.Errorf("child after dir rename: %q", got)
	}
	writeFile(t, fsys, "file", "y")
	if err := fsys.Rename("e/moved", "file", true); err == nil {
		t.Error("dir over file succeeded")
	}
}

func testStatRoot(t *testing.T, fsys vfs.FS) {
	fi := mustStat(t, fsys, "")
	if !fi.IsDir || fi.Name != "" || fi.Attributes&vfs.AttrDirectory == 0 {
		t.Errorf("Stat(\"\"): %+v", fi)
	}
}
