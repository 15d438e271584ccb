package vfstest

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/smbcluster/smbcluster/node/vfs"
)

// testSymlinks plants links in a Rooted FS: those that leave the root must
// never be followed out, those that stay beneath work.
func testSymlinks(t *testing.T, fsys vfs.FS) {
	r, ok := fsys.(Rooted)
	if !ok {
		t.Skip("backend has no on-disk root")
	}
	root := r.Root()
	out := NewSentinel(t, fsys)
	open(t, fsys, "sub", mkdir)
	writeFile(t, fsys, "sub/f", "inside")
	writeFile(t, fsys, "src", "s")
	parent := filepath.Dir(root)
	links := map[string]string{
		"up": "..", "upup": "../..", "abs": "/", "outdir": "../outside",
		"sentlink": "../sentinel", "abssent": filepath.Join(parent, "sentinel"),
		"dangling": "../newfile", "absdangling": filepath.Join(parent, "outside", "new"),
		"loop": "loop", "in": "sub", "infile": "sub/f", "sub/back": "../sub/f",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	var sentIno uint64
	if st, err := os.Stat(filepath.Join(parent, "sentinel")); err == nil {
		sentIno = st.Sys().(*syscall.Stat_t).Ino
	}

	for _, name := range []string{"up/sentinel", "upup/x", "outdir/secret", "abs/etc/passwd", "up", "abs", "loop/x"} {
		if _, err := fsys.Stat(name); err == nil && name != "up" && name != "abs" {
			t.Errorf("Stat(%q) through an escaping link succeeded", name)
		}
	}
	for _, name := range []string{"sentlink", "abssent", "up", "abs", "outdir"} {
		if fi, err := fsys.Stat(name); err == nil && (fi.FileID == sentIno || fi.IsDir) {
			t.Errorf("Stat(%q) followed the link out: %+v", name, fi)
		}
	}
	opens := []struct {
		name string
		o    vfs.OpenOptions
	}{
		{"sentlink", rdOnly}, {"abssent", rdOnly}, {"outdir/secret", rdOnly}, {"up/sentinel", rdOnly},
		{"sentlink", vfs.OpenOptions{Write: true, Truncate: true}},
		{"abssent", vfs.OpenOptions{Read: true, Write: true, Truncate: true}},
		{"sentlink", rw}, {"dangling", rw}, {"absdangling", rw}, {"outdir/new", rw}, {"up/new", rw},
		{"abs/tmp/smbcluster-vfstest-escape", rw},
		{"outdir/new2", vfs.OpenOptions{Write: true, Create: vfs.CreateExclusive}},
		{"dangling", vfs.OpenOptions{Write: true, Create: vfs.CreateExclusive}},
		{"outdir/newdir", mkdir}, {"up/newdir", mkdir}, {"dangling", mkdir},
		{"outdir/newdir", vfs.OpenOptions{Create: vfs.CreateIfAbsent, Kind: vfs.DirOnly}},
		{"up", vfs.OpenOptions{Kind: vfs.DirOnly}}, {"abs", rdOnly}, {"outdir", rdOnly}, {"loop", rdOnly},
	}
	for _, tc := range opens {
		if f, _, err := fsys.Open(tc.name, tc.o); err == nil {
			f.Close()
			t.Errorf("Open(%q, %+v) through an escaping link succeeded", tc.name, tc.o)
		}
	}
	for _, name := range []string{"outdir/secret", "up/sentinel", "up/x"} {
		if err := fsys.Remove(name); err == nil {
			t.Errorf("Remove(%q) succeeded", name)
		}
		if err := fsys.Rename(name, "stolen", true); err == nil {
			t.Errorf("Rename(%q, stolen) succeeded", name)
		}
	}
	for _, name := range []string{"outdir/src", "up/src", "up/z"} {
		if err := fsys.Rename("src", name, true); err == nil {
			t.Errorf("Rename(src, %q) succeeded", name)
		}
	}
	if _, err := os.Lstat("/tmp/smbcluster-vfstest-escape"); err == nil {
		t.Error("a file was created through the link to /")
	}

	// Links that stay beneath the root are followed.
	if fi, err := fsys.Stat("in"); err != nil || !fi.IsDir {
		t.Errorf("Stat(in): %+v, %v", fi, err)
	}
	if got := readFile(t, fsys, "in/f"); got != "inside" {
		t.Errorf("read through inner link: %q", got)
	}
	if got := readFile(t, fsys, "sub/back"); got != "inside" {
		t.Errorf("read through ../ link staying inside: %q", got)
	}
	list, err := open(t, fsys, "", rdOnly).ReadDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, fi := range list {
		if fi.Name == "in" && !fi.IsDir || fi.Name == "infile" && fi.Size != 6 {
			t.Errorf("ReadDir entry for inner link: %+v", fi)
		}
		if fi.FileID == sentIno || (fi.IsDir && slices.Contains([]string{"up", "upup", "abs", "outdir"}, fi.Name)) {
			t.Errorf("ReadDir followed a link out: %+v", fi)
		}
	}
	// Remove acts on the link, not on its target.
	for _, name := range []string{"sentlink", "abssent", "up", "outdir"} {
		if err := fsys.Remove(name); err != nil {
			t.Errorf("Remove(%q) of the link: %v", name, err)
		}
	}
	out.Check(t)
}
