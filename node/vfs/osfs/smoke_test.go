package osfs

import (
	"io"
	"testing"

	"github.com/smbcluster/smbcluster/node/vfs"
)

func TestSmoke(t *testing.T) {
	fsys, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	t.Logf("btime=%v xattr=%v", fsys.btime, fsys.XattrsSupported())
	f, created, err := fsys.Open("a.txt", vfs.OpenOptions{Read: true, Write: true, Create: vfs.CreateIfAbsent, Attributes: vfs.AttrHidden})
	if err != nil || !created {
		t.Fatal(err, created)
	}
	if _, err := f.WriteAt([]byte("hello"), 3); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 10)
	n, err := f.ReadAt(b, 0)
	t.Logf("%d %v %q", n, err, b[:n])
	n, err = f.ReadAt(b, 8)
	if n != 0 || err != io.EOF {
		t.Fatal(n, err)
	}
	fi, _ := f.Stat()
	t.Logf("%+v", fi)
	f.Close()
	d, _, err := fsys.Open("", vfs.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := d.ReadDir()
	t.Logf("%+v %v", l, err)
	fi, err = fsys.Stat("a.txt")
	t.Logf("%+v %v", fi, err)
	fi, err = fsys.Stat("")
	t.Logf("%+v %v", fi, err)
	st, err := fsys.StatFS()
	t.Logf("%+v %v", st, err)
}
