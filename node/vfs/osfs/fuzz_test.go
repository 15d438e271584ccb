package osfs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/smbcluster/smbcluster/node/vfs"
	"github.com/smbcluster/smbcluster/node/vfs/vfstest"
)

// FuzzNames feeds arbitrary names to every name-taking operation of a root
// that holds links pointing out of it, and checks that nothing outside the
// root changed.
func FuzzNames(f *testing.F) {
	fsys := newTestFS(f)
	root := fsys.Root()
	out := vfstest.NewSentinel(f, fsys)
	links := map[string]string{
		"up": "..", "abs": "/", "outdir": "../outside", "sentlink": "../sentinel",
		"dangling": "../newfile", "in": "sub", "sub/up": "../..",
	}
	// plant restores the links an earlier input may have renamed or removed.
	plant := func(t testing.TB) {
		if err := os.MkdirAll(filepath.Join(root, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		for name, target := range links {
			p := filepath.Join(root, name)
			if got, err := os.Readlink(p); err == nil && got == target {
				continue
			}
			_ = os.RemoveAll(p)
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, seed := range []string{
		"", "a", "sub/x", "in/x", "up/sentinel", "up/x", "outdir/secret", "sentlink", "dangling",
		"abs/etc/passwd", "sub/up/x", "../x", "a/../../x", "/etc/passwd", "x\x00y", "up/../x", "in/../../x",
	} {
		f.Add(seed)
	}
	src := filepath.Join(root, "src")
	f.Fuzz(func(t *testing.T, name string) {
		plant(t)
		if err := os.WriteFile(src, []byte("s"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _ = fsys.Stat(name)
		for _, o := range []vfs.OpenOptions{
			{Read: true},
			{Read: true, Write: true, Truncate: true},
			{Write: true, Create: vfs.CreateIfAbsent},
			{Create: vfs.CreateIfAbsent, Kind: vfs.DirOnly},
		} {
			if file, _, err := fsys.Open(name, o); err == nil {
				_, _ = file.WriteAt([]byte("w"), 0)
				_, _ = file.ReadDir()
				file.Close()
			}
		}
		_ = fsys.Rename("src", name, true)
		_ = fsys.Rename(name, "moved", true)
		_ = fsys.Remove(name)
		out.Check(t)
	})
}
