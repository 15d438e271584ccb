package vfstest

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"testing"

	"github.com/smbcluster/smbcluster/node/vfs"
)

// streamFS returns fsys as a StreamOpener, skipping the test when it is
// not one or keeps no xattrs.
func streamFS(t *testing.T, fsys vfs.FS) vfs.StreamOpener {
	t.Helper()
	so, ok := fsys.(vfs.StreamOpener)
	if !ok {
		t.Skip("no vfs.StreamOpener")
	}
	if x, ok := fsys.(XattrReporter); ok && !x.XattrsSupported() {
		t.Skip("no xattrs")
	}
	return so
}

func testStreams(t *testing.T, fsys vfs.FS) {
	so := streamFS(t, fsys)
	f := open(t, fsys, "f", rw)
	if _, err := f.WriteAt([]byte("main data"), 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := so.OpenStream("f", "s1", vfs.OpenOptions{Read: true}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("OpenStream of a missing stream: %v, want fs.ErrNotExist", err)
	}
	if _, _, err := so.OpenStream("nofile", "s1", rw); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("OpenStream on a missing file: %v, want fs.ErrNotExist", err)
	}
	s, created, err := so.OpenStream("f", "s1", rw)
	if err != nil || !created {
		t.Fatalf("OpenStream create: created=%v err=%v", created, err)
	}
	defer s.Close()
	if fi, err := s.Stat(); err != nil || fi.Size != 0 {
		t.Fatalf("new stream Stat: %+v, %v", fi, err)
	}
	if _, err := s.WriteAt([]byte("hello"), 3); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, err := s.ReadAt(buf, 0)
	if err != nil || !bytes.Equal(buf[:n], []byte("\x00\x00\x00hello")) {
		t.Fatalf("stream ReadAt = %q, %v", buf[:n], err)
	}
	if _, err := s.ReadAt(buf, 8); err != io.EOF {
		t.Fatalf("ReadAt at end: %v, want io.EOF", err)
	}
	if err := s.Truncate(4); err != nil {
		t.Fatal(err)
	}
	if fi, err := s.Stat(); err != nil || fi.Size != 4 {
		t.Fatalf("stream Stat after Truncate: size %d, %v", fi.Size, err)
	}
	if fi, _ := f.Stat(); fi.Size != 9 {
		t.Fatalf("main stream size changed to %d", fi.Size)
	}
	if _, _, err := so.OpenStream("f", "s1", vfs.OpenOptions{Create: vfs.CreateExclusive}); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("exclusive create of an existing stream: %v", err)
	}
	list, err := so.Streams("f")
	if err != nil || len(list) != 1 || list[0].Name != "s1" || list[0].Size != 4 {
		t.Fatalf("Streams = %+v, %v", list, err)
	}
	testStreamRenameRemove(t, fsys, so)
}

func testStreamRenameRemove(t *testing.T, fsys vfs.FS, so vfs.StreamOpener) {
	s2, _, err := so.OpenStream("f", "s2", rw)
	if err != nil {
		t.Fatal(err)
	}
	s2.Close()
	if err := so.RenameStream("f", "s1", "s2", false); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("RenameStream onto an existing stream: %v", err)
	}
	if err := so.RenameStream("f", "s1", "s3", false); err != nil {
		t.Fatal(err)
	}
	if err := so.RemoveStream("f", "s2"); err != nil {
		t.Fatal(err)
	}
	if err := so.RemoveStream("f", "s2"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("RemoveStream twice: %v", err)
	}
	if err := fsys.Rename("f", "g", false); err != nil {
		t.Fatal(err)
	}
	list, err := so.Streams("g")
	if err != nil || len(list) != 1 || list[0].Name != "s3" || list[0].Size != 4 {
		t.Fatalf("Streams after renames = %+v, %v", list, err)
	}
	mkdirOK(t, fsys, "d")
	ds, created, err := so.OpenStream("d", "x", rw)
	if err != nil || !created {
		t.Fatalf("stream on a directory: %v", err)
	}
	ds.Close()
}

func mkdirOK(t *testing.T, fsys vfs.FS, name string) {
	t.Helper()
	d, _, err := fsys.Open(name, mkdir)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
}

func testSecurity(t *testing.T, fsys vfs.FS) {
	f := open(t, fsys, "f", rw)
	sf, ok := f.(vfs.SecurityFile)
	if !ok {
		t.Skip("no vfs.SecurityFile")
	}
	if x, ok := fsys.(XattrReporter); ok && !x.XattrsSupported() {
		t.Skip("no xattrs")
	}
	if sd, err := sf.Security(); err != nil || sd != nil {
		t.Fatalf("Security of a new file = %x, %v; want nil, nil", sd, err)
	}
	want := []byte{1, 0, 4, 0x80, 0, 0, 0, 0}
	if err := sf.SetSecurity(want); err != nil {
		t.Fatal(err)
	}
	g := open(t, fsys, "f", rdOnly)
	if sd, err := g.(vfs.SecurityFile).Security(); err != nil || !bytes.Equal(sd, want) {
		t.Fatalf("Security = %x, %v; want %x", sd, err, want)
	}
}

func testReadDirNames(t *testing.T, fsys vfs.FS) {
	mkdirOK(t, fsys, "d")
	for _, n := range []string{"d/b", "d/a"} {
		open(t, fsys, n, rw)
	}
	d := open(t, fsys, "d", rdOnly)
	nr, ok := d.(vfs.NameReader)
	if !ok {
		t.Skip("no vfs.NameReader")
	}
	names, err := nr.ReadDirNames()
	if err != nil || len(names) != 2 {
		t.Fatalf("ReadDirNames = %q, %v", names, err)
	}
}

func testEAs(t *testing.T, fsys vfs.FS) {
	f := open(t, fsys, "f", rw)
	ef, ok := f.(vfs.EAFile)
	if !ok {
		t.Skip("no vfs.EAFile")
	}
	if x, ok := fsys.(XattrReporter); ok && !x.XattrsSupported() {
		t.Skip("no xattrs")
	}
	if eas, err := ef.EAs(); err != nil || len(eas) != 0 {
		t.Fatalf("EAs of a new file = %v, %v", eas, err)
	}
	for _, e := range []vfs.EA{{Name: "B", Value: []byte("2")}, {Name: "A", Value: []byte("1")}, {Name: "C", Value: []byte("3")}} {
		if err := ef.SetEA(e.Name, e.Value); err != nil {
			t.Fatal(err)
		}
	}
	if err := ef.SetEA("C", nil); err != nil {
		t.Fatal(err)
	}
	eas, err := ef.EAs()
	if err != nil || len(eas) != 2 || eas[0].Name != "A" || string(eas[1].Value) != "2" {
		t.Fatalf("EAs = %q, %v", eas, err)
	}
}

// testStreamRenameFollows checks that open files follow their stream to
// its new name, and onto the unnamed data stream.
func testStreamRenameFollows(t *testing.T, fsys vfs.FS) {
	so := streamFS(t, fsys)
	open(t, fsys, "f", rw)
	w, _, err := so.OpenStream("f", "s1", rw)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, _, err := so.OpenStream("f", "s1", vfs.OpenOptions{Read: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := w.WriteAt([]byte("one"), 0); err != nil {
		t.Fatal(err)
	}
	if err := so.RenameStream("f", "s1", "s2", false); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt([]byte("X"), 0); err != nil {
		t.Fatalf("write after rename: %v", err)
	}
	wantContent(t, r, "Xne")
	if err := so.RenameStream("f", "s2", "", false); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("RenameStream onto the data without replace: %v, want fs.ErrExist", err)
	}
	if err := so.RenameStream("f", "s2", "", true); err != nil {
		t.Fatal(err)
	}
	if list, err := so.Streams("f"); err != nil || len(list) != 0 {
		t.Fatalf("Streams after renaming onto the data = %+v, %v", list, err)
	}
	if _, err := w.WriteAt([]byte("Y"), 3); err != nil {
		t.Fatalf("write after renaming onto the data: %v", err)
	}
	wantContent(t, r, "XneY")
	wantContent(t, open(t, fsys, "f", rdOnly), "XneY")
	if fi, err := w.Stat(); err != nil || fi.Size != 4 {
		t.Fatalf("Stat after renaming onto the data: %+v, %v", fi, err)
	}
	mkdirOK(t, fsys, "d")
	ds, _, err := so.OpenStream("d", "x", rw)
	if err != nil {
		t.Fatal(err)
	}
	ds.Close()
	if err := so.RenameStream("d", "x", "", true); err == nil {
		t.Fatal("renamed a directory's stream onto its unnamed data stream")
	}
}

// wantContent checks the whole content of f.
func wantContent(t *testing.T, f vfs.File, want string) {
	t.Helper()
	buf := make([]byte, len(want)+8)
	n, err := f.ReadAt(buf, 0)
	if err != nil && err != io.EOF || string(buf[:n]) != want {
		t.Fatalf("content = %q, %v; want %q", buf[:n], err, want)
	}
}
