package smbc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

func dial(t *testing.T, srv *servertest.Server, o Options) *Conn {
	t.Helper()
	o.Addr, o.User, o.Password = srv.Addr, servertest.Alice, servertest.AlicePassword
	if o.Share == "" {
		o.Share = servertest.ShareName
	}
	c, err := Dial(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.shutdown() })
	return c
}

// roundTrip writes data in blocks of bs from conc goroutines, reads it back
// the same way and compares.
func roundTrip(t *testing.T, c *Conn, name string, size, bs, conc int) {
	t.Helper()
	f, err := c.OpenFile(name, true)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*7 + i>>9)
	}
	run := func(op func(off int) error) {
		var wg sync.WaitGroup
		errs := make(chan error, conc)
		for g := range conc {
			wg.Go(func() {
				for off := g * bs; off < size; off += conc * bs {
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
	run(func(off int) error {
		n, err := f.WriteAt(data[off:min(off+bs, size)], int64(off))
		if err == nil && n != min(bs, size-off) {
			err = fmt.Errorf("short write at %d: %d", off, n)
		}
		return err
	})
	got := make([]byte, size)
	run(func(off int) error {
		n, err := f.ReadAt(got[off:min(off+bs, size)], int64(off))
		if err == nil && n != min(bs, size-off) {
			err = fmt.Errorf("short read at %d: %d", off, n)
		}
		return err
	})
	if !bytes.Equal(got, data) {
		t.Fatal("data read back differ from data written")
	}
	if sz, err := f.Size(); err != nil || sz != int64(size) {
		t.Fatalf("Size = %d, %v; want %d", sz, err, size)
	}
	// A read across EOF is short and says so.
	buf := make([]byte, 2*bs)
	if n, err := f.ReadAt(buf, int64(size-bs/2)); n != bs/2 || err != io.EOF {
		t.Fatalf("read across EOF: %d, %v; want %d, EOF", n, err, bs/2)
	}
	if n, err := f.ReadAt(buf, int64(size+bs)); n != 0 || err != io.EOF {
		t.Fatalf("read past EOF: %d, %v; want 0, EOF", n, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Remove(name); err != nil {
		t.Fatal(err)
	}
	if _, err := c.OpenFile(name, false); !isStatus(err, smb2.StatusObjectNameNotFound) {
		t.Fatalf("open after Remove: %v, want STATUS_OBJECT_NAME_NOT_FOUND", err)
	}
}

// TestDialects: every dialect, plain and signed, moves data intact with
// pipelined requests, including 1 MiB ones split by MaxReadSize where the
// dialect has no multi-credit requests.
func TestDialects(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	for _, d := range allDialects {
		for _, sign := range []bool{false, true} {
			t.Run(fmt.Sprintf("%#04x/sign=%v", d, sign), func(t *testing.T) {
				c := dial(t, srv, Options{Dialect: d, Sign: sign})
				if c.Dialect() != d || c.Signed() != sign {
					t.Fatalf("dialect %#04x signed %v", c.Dialect(), c.Signed())
				}
				roundTrip(t, c, fmt.Sprintf("f%x%v", d, sign), 4<<20, 1<<20, 4)
				roundTrip(t, c, fmt.Sprintf("g%x%v", d, sign), 256<<10, 4<<10, 16)
			})
		}
	}
}

// TestEncryption: encryption asked for by the client, by the server for
// the session, and by the share.
func TestEncryption(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mode    server.EncryptionMode
		share   string
		dialect uint16
		encrypt bool
	}{
		{"client-3.1.1", server.EncryptOff, servertest.ShareName, smb2.Dialect311, true},
		{"client-3.0", server.EncryptOff, servertest.ShareName, smb2.Dialect300, true},
		{"share", server.EncryptOff, servertest.EncShareName, 0, false},
		{"server", server.EncryptRequired, servertest.ShareName, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := servertest.Start(t, servertest.Options{Encryption: tc.mode})
			c := dial(t, srv, Options{Share: tc.share, Dialect: tc.dialect, Encrypt: tc.encrypt})
			if !c.Encrypted() {
				t.Fatal("connection not encrypted")
			}
			roundTrip(t, c, "enc", 2<<20, 1<<20, 3)
			roundTrip(t, c, "enc4k", 64<<10, 4<<10, 8)
		})
	}
}

// TestWrongPassword: the logon fails with the server's status.
func TestWrongPassword(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	_, err := Dial(t.Context(), Options{Addr: srv.Addr, User: servertest.Alice, Password: "nope", Share: servertest.ShareName})
	if !isStatus(err, smb2.StatusLogonFailure) {
		t.Fatalf("got %v, want STATUS_LOGON_FAILURE", err)
	}
}

// TestCancel: requests fail once the Dial context is done.
func TestCancel(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	c, err := Dial(ctx, Options{Addr: srv.Addr, User: servertest.Alice, Password: servertest.AlicePassword, Share: servertest.ShareName})
	if err != nil {
		t.Fatal(err)
	}
	defer c.shutdown()
	f, err := c.OpenFile("x", true)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := f.WriteAt([]byte("abc"), 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("write after cancel: %v", err)
	}
}

// BenchmarkIO: pipelined 4 KiB READs and WRITEs through the client and the
// in-process server (memfs). Allocations per op count both sides: the
// server's own are pinned by node/server's TestIOAllocations (2 per READ,
// 3 per WRITE), the rest is the client's.
func BenchmarkIO(b *testing.B) {
	srv := servertest.Start(b, servertest.Options{})
	c, err := Dial(b.Context(), Options{Addr: srv.Addr, User: servertest.Alice, Password: servertest.AlicePassword, Share: servertest.ShareName})
	if err != nil {
		b.Fatal(err)
	}
	defer c.shutdown()
	f, err := c.OpenFile("bench", true)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, 1<<20), 0); err != nil {
		b.Fatal(err)
	}
	for _, op := range []string{"read", "write"} {
		b.Run(op, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(4096)
			b.RunParallel(func(pb *testing.PB) {
				buf := make([]byte, 4096)
				off := int64(0)
				for pb.Next() {
					var err error
					if op == "read" {
						_, err = f.ReadAt(buf, off)
					} else {
						_, err = f.WriteAt(buf, off)
					}
					if err != nil {
						b.Error(err)
						return
					}
					off = (off + 4096) % (1 << 20)
				}
			})
		})
	}
}

// TestRenameAndDelete: a rename over an existing name replaces it and
// leaves the old name free, one without replace is refused; an open made
// by OpenDelete deletes its file at the close, and an exclusive one is
// refused while another open shares nothing with it.
func TestRenameAndDelete(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c := dial(t, srv, Options{})
	write := func(name, v string) {
		t.Helper()
		f, err := c.OpenFile(name, true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte(v), 0); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	read := func(name string) (string, error) {
		f, err := c.OpenMode(name, accessRead, shareAll, false)
		if err != nil {
			return "", err
		}
		defer f.Close()
		b := make([]byte, 16)
		n, err := f.ReadAt(b, 0)
		if err != nil && err != io.EOF {
			return "", err
		}
		return string(b[:n]), nil
	}
	write("target", "old")
	tmp, err := c.OpenMode("tmp", accessReadWrite|accessDelete, shareAll, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tmp.WriteAt([]byte("new"), 0); err != nil {
		t.Fatal(err)
	}
	if err := tmp.Rename("target", false); !isStatus(err, smb2.StatusObjectNameCollision) {
		t.Fatalf("rename over an existing name without replace: %v, want STATUS_OBJECT_NAME_COLLISION", err)
	}
	if err := tmp.Rename("target", true); err != nil {
		t.Fatal(err)
	}
	if err := tmp.Close(); err != nil {
		t.Fatal(err)
	}
	if v, err := read("target"); v != "new" || err != nil {
		t.Fatalf("target after the rename reads %q, %v; want \"new\"", v, err)
	}
	if _, err := read("tmp"); !isStatus(err, smb2.StatusObjectNameNotFound) {
		t.Fatalf("the old name after the rename: %v, want STATUS_OBJECT_NAME_NOT_FOUND", err)
	}

	holder, err := c.OpenMode("target", accessRead, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.OpenDelete("target", 0); !isStatus(err, smb2.StatusSharingViolation) {
		t.Fatalf("an exclusive delete beside an open sharing nothing: %v, want STATUS_SHARING_VIOLATION", err)
	}
	holder.Close()
	d, err := c.OpenDelete("target", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := read("target"); !isStatus(err, smb2.StatusObjectNameNotFound) {
		t.Fatalf("target after its delete-on-close open closed: %v, want STATUS_OBJECT_NAME_NOT_FOUND", err)
	}
}
