package servertest

import (
	"bytes"
	"testing"

	"github.com/smbcluster/smbcluster/node/smb2"
)

// TestClientEveryDialect is the smoke test of the raw client: each dialect
// negotiates, authenticates, writes, reads back and closes.
func TestClientEveryDialect(t *testing.T) {
	srv := Start(t, Options{})
	for _, d := range AllDialects {
		t.Run(DialectName(d), func(t *testing.T) {
			c := Connect(t, srv.Addr, Alice, AlicePassword, ShareName, d)
			if c.Dialect != d {
				t.Fatalf("dialect %s, want %s", DialectName(c.Dialect), DialectName(d))
			}
			fid, err := c.Create("f-" + DialectName(d))
			if err != nil {
				t.Fatal(err)
			}
			data := bytes.Repeat([]byte("abcdefgh"), 1000)
			if n, err := c.Write(fid, 0, data); err != nil || n != len(data) {
				t.Fatalf("write: %d, %v", n, err)
			}
			got, err := c.Read(fid, 0, len(data))
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("read: %d bytes, %v", len(got), err)
			}
			if err := c.CloseFile(fid); err != nil {
				t.Fatal(err)
			}
			if err := c.Logoff(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestWrongPassword fails the logon.
func TestWrongPassword(t *testing.T) {
	srv := Start(t, Options{})
	c := Dial(t, srv.Addr)
	if err := c.Negotiate(); err != nil {
		t.Fatal(err)
	}
	if err := c.SessionSetup(Alice, "nope"); err != smb2.StatusLogonFailure {
		t.Fatalf("got %v, want STATUS_LOGON_FAILURE", err)
	}
}
