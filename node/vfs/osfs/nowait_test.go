package osfs

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/smbcluster/smbcluster/node/vfs"
	"github.com/smbcluster/smbcluster/node/vfs/vfstest"
)

// openNoWait writes data to root/f and opens it through fsys for reading;
// the open closes when the test ends.
func openNoWait(t *testing.T, fsys *FS, root string, data []byte) vfs.NoWaitReader {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, "f"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	vf, _, err := fsys.Open("f", vfs.OpenOptions{Read: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vf.Close() })
	return vf.(vfs.NoWaitReader)
}

// TestReadAtNoWait: a read of cached data answers as ReadAt does; a read
// of evicted data answers ErrWouldBlock and reads nothing, and Cached
// says so, until a blocking read brings the pages back.
func TestReadAtNoWait(t *testing.T) {
	root := t.TempDir()
	fsys, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	f := openNoWait(t, fsys, root, data)

	// Cached (just written): whole, short at EOF, past EOF.
	p := make([]byte, 64<<10)
	if n, err := f.ReadAtNoWait(p, 4096); err != nil || n != len(p) || !bytes.Equal(p, data[4096:4096+len(p)]) {
		t.Fatalf("cached read: %d, %v", n, err)
	}
	if n, err := f.ReadAtNoWait(p, int64(len(data)-100)); err != nil || n != 100 {
		t.Fatalf("read at EOF: %d, %v; want 100, nil", n, err)
	}
	if n, err := f.ReadAtNoWait(p, int64(len(data))); err != io.EOF || n != 0 {
		t.Fatalf("read past EOF: %d, %v; want 0, EOF", n, err)
	}
	if !f.Cached(0, len(data)) {
		t.Fatal("Cached false for a file just written")
	}

	if !vfstest.DropCache(t, filepath.Join(root, "f")) {
		t.Skip("the filesystem of TMPDIR keeps pages in memory (tmpfs?)")
	}
	if f.Cached(0, len(data)) {
		t.Error("Cached true after eviction")
	}
	if _, err := f.ReadAtNoWait(p, 512<<10); !errors.Is(err, vfs.ErrWouldBlock) {
		t.Fatalf("read of evicted data: %v, want ErrWouldBlock", err)
	}
	if n, err := f.ReadAt(p, 512<<10); err != nil || n != len(p) {
		t.Fatalf("blocking read: %d, %v", n, err)
	}
	if !f.Cached(512<<10, len(p)) {
		t.Error("Cached false for pages just read")
	}
	if n, err := f.ReadAtNoWait(p, 512<<10); err != nil || n != len(p) || !bytes.Equal(p, data[512<<10:512<<10+len(p)]) {
		t.Fatalf("read after the blocking read: %d, %v", n, err)
	}
}

// TestReadAtNoWaitInMemory: on tmpfs, where RWF_NOWAIT is not supported
// and nothing waits for a disk, ReadAtNoWait reads as ReadAt does and
// Cached answers true without asking the kernel.
func TestReadAtNoWaitInMemory(t *testing.T) {
	var sfs unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &sfs); err != nil || sfs.Type != unix.TMPFS_MAGIC {
		t.Skip("no tmpfs at /dev/shm")
	}
	root, err := os.MkdirTemp("/dev/shm", "osfs-nowait")
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	fsys, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	if !fsys.inMemory {
		t.Fatal("a share on tmpfs is not recognised as in memory")
	}
	data := bytes.Repeat([]byte("tmpfs!"), 2000)
	f := openNoWait(t, fsys, root, data)
	p := make([]byte, 4096)
	if n, err := f.ReadAtNoWait(p, 100); err != nil || n != len(p) || !bytes.Equal(p, data[100:100+len(p)]) {
		t.Fatalf("ReadAtNoWait on tmpfs: %d, %v", n, err)
	}
	if !f.Cached(0, len(data)) {
		t.Error("Cached false on tmpfs")
	}
}
