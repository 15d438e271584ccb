package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	smb2 "github.com/cloudsoda/go-smb2"

	"github.com/smbcluster/smbcluster/integration/framework"
)

// mountGoSMB2 logs alice in with go-smb2 and mounts the test share.
func mountGoSMB2(t *testing.T, n *framework.Node) *smb2.Share {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d := &smb2.Dialer{Initiator: &smb2.NTLMInitiator{User: user, Password: password()}}
	s, err := d.Dial(ctx, n.Addr)
	if err != nil {
		t.Fatalf("go-smb2 dial %s: %v", n.Addr, err)
	}
	t.Cleanup(func() {
		if err := s.Logoff(); err != nil {
			t.Errorf("logoff: %v", err)
		}
	})
	fs, err := s.Mount(`\\` + n.Host + `\` + shareNm)
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	t.Cleanup(func() {
		if err := fs.Umount(); err != nil {
			t.Errorf("umount: %v", err)
		}
	})
	return fs
}

// TestGoSMB2 drives github.com/cloudsoda/go-smb2 through file transfer,
// metadata and namespace operations, checking each on disk.
func TestGoSMB2(t *testing.T) {
	n := framework.Start(t, framework.Options{})
	fs := mountGoSMB2(t, n)
	root := n.SharePath(shareNm)
	t.Run("Transfer", func(t *testing.T) { testTransfer(t, fs, root) })
	t.Run("Stat", func(t *testing.T) { testStat(t, fs, root) })
	t.Run("ReadDir", func(t *testing.T) { testReadDir(t, fs, root) })
	t.Run("Rename", func(t *testing.T) { testRename(t, fs, root) })
	t.Run("Remove", func(t *testing.T) { testRemove(t, fs, root) })
	t.Run("Truncate", func(t *testing.T) { testTruncate(t, fs, root) })
}

// testTransfer writes files of several sizes through SMB, streams them back
// and compares SHA-256 sums over the wire and on disk.
func testTransfer(t *testing.T, fs *smb2.Share, root string) {
	sizes := []int64{0, 1, 64 * kib, mib + 1, 100 * mib}
	for i, size := range sizes {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			if size > 10*mib && testing.Short() {
				t.Skip("-short: skipping 100 MiB transfer")
			}
			name := fmt.Sprintf("xfer-%d.bin", size)
			f, err := fs.Create(name)
			if err != nil {
				t.Fatal(err)
			}
			h := sha256.New()
			n, err := io.Copy(f, io.TeeReader(io.LimitReader(randomReader(uint64(i)+10), size), h))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil || n != size {
				t.Fatalf("write %s: n=%d err=%v", name, n, err)
			}
			want := hex.EncodeToString(h.Sum(nil))
			assertSum(t, filepath.Join(root, name), want, size)

			f, err = fs.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			h.Reset()
			n, err = io.Copy(h, f)
			if got := hex.EncodeToString(h.Sum(nil)); err != nil || n != size || got != want {
				t.Errorf("read back %s: n=%d err=%v sha256 %s, want %d bytes %s", name, n, err, got, size, want)
			}
			if err := f.Close(); err != nil {
				t.Error(err)
			}
			if err := os.Remove(filepath.Join(root, name)); err != nil {
				t.Error(err)
			}
		})
	}
}

func testStat(t *testing.T, fs *smb2.Share, root string) {
	data := []byte("stat me\n")
	if err := os.WriteFile(filepath.Join(root, "stat.txt"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "statdir"), 0o755); err != nil {
		t.Fatal(err)
	}
	disk, err := os.Stat(filepath.Join(root, "stat.txt"))
	if err != nil {
		t.Fatal(err)
	}
	fi, err := fs.Stat("stat.txt")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Name() != "stat.txt" || fi.Size() != int64(len(data)) || fi.IsDir() {
		t.Errorf("Stat(stat.txt) = name %q size %d dir %v", fi.Name(), fi.Size(), fi.IsDir())
	}
	// SMB times have 100 ns resolution ([MS-DTYP] 2.3.3 FILETIME).
	if d := fi.ModTime().Sub(disk.ModTime()); d < -time.Microsecond || d > time.Microsecond {
		t.Errorf("Stat(stat.txt) mtime %v, disk %v", fi.ModTime(), disk.ModTime())
	}
	fi, err = fs.Stat("statdir")
	if err != nil || !fi.IsDir() {
		t.Errorf("Stat(statdir) = %v, %v; want a directory", fi, err)
	}
	if _, err := fs.Stat("no-such-file"); !os.IsNotExist(err) {
		t.Errorf("Stat(no-such-file) err = %v, want not-exist", err)
	}
}

// testReadDir lists a directory created on disk and compares the names.
func testReadDir(t *testing.T, fs *smb2.Share, root string) {
	count := 10000
	if testing.Short() {
		count = 300
	}
	dir := filepath.Join(root, "many")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range count {
		name := fmt.Sprintf("entry-%05d-%s", i, bytes.Repeat([]byte{'x'}, i%40))
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		want = append(want, name)
	}
	infos, err := fs.ReadDir("many")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, fi := range infos {
		got = append(got, fi.Name())
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("ReadDir(many): %d names, want %d; first difference at %d", len(got), len(want), firstDiff(got, want))
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func testRename(t *testing.T, fs *smb2.Share, root string) {
	sum := writeRandomFile(t, filepath.Join(root, "before.bin"), 4*kib, 2)
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := fs.Rename("before.bin", `sub\after.bin`); err != nil {
		t.Fatal(err)
	}
	assertAbsent(t, filepath.Join(root, "before.bin"))
	assertSum(t, filepath.Join(root, "sub", "after.bin"), sum, 4*kib)
	if err := fs.Rename("sub", "sub2"); err != nil {
		t.Fatal(err)
	}
	assertAbsent(t, filepath.Join(root, "sub"))
	assertSum(t, filepath.Join(root, "sub2", "after.bin"), sum, 4*kib)
}

func testRemove(t *testing.T, fs *smb2.Share, root string) {
	writeRandomFile(t, filepath.Join(root, "gone.bin"), 100, 3)
	if err := os.Mkdir(filepath.Join(root, "gonedir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := fs.Remove("gone.bin"); err != nil {
		t.Fatal(err)
	}
	assertAbsent(t, filepath.Join(root, "gone.bin"))
	if err := fs.Remove("gonedir"); err != nil {
		t.Fatal(err)
	}
	assertAbsent(t, filepath.Join(root, "gonedir"))
	if err := fs.Remove("gone.bin"); !os.IsNotExist(err) {
		t.Errorf("second Remove: err = %v, want not-exist", err)
	}
}

// testTruncate grows a file (the new bytes read as zeros) and shrinks it.
func testTruncate(t *testing.T, fs *smb2.Share, root string) {
	path := filepath.Join(root, "trunc.bin")
	orig := bytes.Repeat([]byte("0123456789abcdef"), 256) // 4 KiB
	if err := os.WriteFile(path, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(want []byte) {
		t.Helper()
		disk, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(disk, want) {
			t.Errorf("disk: %d bytes (err %v), want %d", len(disk), err, len(want))
		}
		wire, err := fs.ReadFile("trunc.bin")
		if err != nil || !bytes.Equal(wire, want) {
			t.Errorf("over SMB: %d bytes (err %v), want %d", len(wire), err, len(want))
		}
	}
	if err := fs.Truncate("trunc.bin", 64*kib+3); err != nil {
		t.Fatal(err)
	}
	check(append(slices.Clone(orig), make([]byte, 64*kib+3-len(orig))...))
	if err := fs.Truncate("trunc.bin", 10); err != nil {
		t.Fatal(err)
	}
	check(orig[:10])
	if err := fs.Truncate("trunc.bin", 0); err != nil {
		t.Fatal(err)
	}
	check(nil)
}
