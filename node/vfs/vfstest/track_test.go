package vfstest_test

import (
	"testing"

	"github.com/smbcluster/smbcluster/node/vfs"
	"github.com/smbcluster/smbcluster/node/vfs/memfs"
	"github.com/smbcluster/smbcluster/node/vfs/vfstest"
)

func TestTrackOpens(t *testing.T) {
	tr := vfstest.TrackOpens(memfs.New())
	fsys := tr.FS()
	a, _, err := fsys.Open("a", vfs.OpenOptions{Write: true, Create: vfs.CreateIfAbsent})
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := fsys.Open("", vfs.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := fsys.Open("missing", vfs.OpenOptions{}); err == nil {
		t.Fatal("opened a missing file")
	}
	if n := tr.Open(); n != 2 {
		t.Fatalf("Open() = %d, want 2 (%v)", n, tr.OpenNames())
	}
	a.Close()
	a.Close() // a double close must not count twice
	if n := tr.Open(); n != 1 {
		t.Fatalf("after close: Open() = %d, want 1", n)
	}
	b.Close()
	tr.Check(t)
}

// TestTrackedSuite runs the conformance suite through the tracker, which
// must be transparent, and checks the suite itself closes what it opens.
func TestTrackedSuite(t *testing.T) {
	vfstest.TestFS(t, func(t *testing.T) vfs.FS {
		tr := vfstest.TrackOpens(memfs.New())
		t.Cleanup(func() { tr.Check(t) })
		return tr.FS()
	})
}
