package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/cli/smbc"
	"github.com/smbcluster/smbcluster/integration/framework"
)

// TestSmbc runs smbctl's own client, the one `smbctl bench` measures
// servers with, against our node and against Samba's smbd: plain, signed,
// encrypted by the client's choice and by a share that demands it, each
// dialect family. Data written with pipelined 1 MiB and 4 KiB requests
// are read back over the wire and compared with the file on disk, so the
// client is checked by a server nobody here wrote.
func TestSmbc(t *testing.T) {
	servers := map[string]func(testing.TB, framework.Options) *framework.Node{
		"node": framework.StartNode, "samba": framework.StartSamba}
	for _, name := range []string{"node", "samba"} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			encRoot := filepath.Join(root, "enc")
			if err := os.Mkdir(encRoot, 0o777); err != nil {
				t.Fatal(err)
			}
			n := servers[name](t, framework.Options{Shares: []framework.Share{
				{Name: shareNm, Path: filepath.Join(root, "plain")},
				{Name: "encshare", Path: encRoot, Encrypt: true}}})
			for _, tc := range []struct {
				name  string
				share string
				o     smbc.Options
			}{
				{"3.1.1", shareNm, smbc.Options{}},
				{"3.1.1-signed", shareNm, smbc.Options{Sign: true}},
				{"3.1.1-encrypted", shareNm, smbc.Options{Encrypt: true}},
				{"3.0.2-signed", shareNm, smbc.Options{Dialect: 0x302, Sign: true}},
				{"3.0-encrypted", shareNm, smbc.Options{Dialect: 0x300, Encrypt: true}},
				{"2.1-signed", shareNm, smbc.Options{Dialect: 0x210, Sign: true}},
				{"2.0.2", shareNm, smbc.Options{Dialect: 0x202}},
				{"share-demands-encryption", "encshare", smbc.Options{}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					o := tc.o
					o.Addr, o.Share, o.User, o.Password = n.Addr, tc.share, user, password()
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
					defer cancel()
					c, err := smbc.Dial(ctx, o)
					if err != nil {
						t.Fatal(err)
					}
					defer c.Close()
					if want := o.Sign; want && !c.Signed() && !c.Encrypted() {
						t.Fatal("session neither signed nor encrypted")
					}
					if want := o.Encrypt || tc.share == "encshare"; want != c.Encrypted() {
						t.Fatalf("encrypted = %v, want %v", c.Encrypted(), want)
					}
					file := "smbc-" + tc.name + ".bin"
					smbcRoundTrip(t, c, file, filepath.Join(n.SharePath(tc.share), file))
				})
			}
		})
	}
}

// smbcRoundTrip writes 8 MiB in 1 MiB blocks and rewrites its first 256 KiB
// in 4 KiB blocks, 16 requests in flight, reads it all back the same ways
// and checks the wire and the disk.
func smbcRoundTrip(t *testing.T, c *smbc.Conn, name, disk string) {
	f, err := c.OpenFile(name, true)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 8*mib)
	randomReader(7).Read(data)
	for _, bs := range []int{mib, 4 * kib} {
		size := len(data)
		if bs < mib {
			size = 256 * kib
		}
		each := func(op func(off int) error) {
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for g := range 16 {
				wg.Go(func() {
					for off := g * bs; off < size; off += 16 * bs {
						if err := op(off); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
		}
		each(func(off int) error {
			if n, err := f.WriteAt(data[off:off+bs], int64(off)); err != nil || n != bs {
				return fmt.Errorf("write %d at %d: %d, %v", bs, off, n, err)
			}
			return nil
		})
		got := make([]byte, size)
		each(func(off int) error {
			if n, err := f.ReadAt(got[off:off+bs], int64(off)); err != nil || n != bs {
				return fmt.Errorf("read %d at %d: %d, %v", bs, off, n, err)
			}
			return nil
		})
		if !bytes.Equal(got, data[:size]) {
			t.Fatalf("%d-byte blocks: data read back differ", bs)
		}
	}
	if sz, err := f.Size(); err != nil || sz != int64(len(data)) {
		t.Fatalf("Size = %d, %v", sz, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	onDisk, err := os.ReadFile(disk)
	if err != nil || !bytes.Equal(onDisk, data) {
		t.Fatalf("file on disk differs from data written (%d bytes, %v)", len(onDisk), err)
	}
	if err := c.Remove(name); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(disk); !os.IsNotExist(err) {
		t.Fatalf("file still on disk after Remove: %v", err)
	}
}
