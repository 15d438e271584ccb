package server_test

import (
	"errors"
	"testing"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// TestControlPolicy: a cluster policy set while the server runs applies to
// the next negotiation and session: the dialect range narrows, and signing
// becomes required (an unsigned request of a new session is refused).
func TestControlPolicy(t *testing.T) {
	ctl := &server.Control{}
	srv := servertest.Start(t, servertest.Options{Control: ctl})

	before := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName, smb2.Dialect311)
	if before.Dialect != smb2.Dialect311 {
		t.Fatalf("dialect %#x before the policy", before.Dialect)
	}

	ctl.SetPolicy(server.Policy{SigningRequired: true, MaxDialect: smb2.Dialect302})
	c := servertest.Dial(t, srv.Addr)
	if err := c.Negotiate(smb2.Dialect202, smb2.Dialect210, smb2.Dialect300, smb2.Dialect302, smb2.Dialect311); err != nil {
		t.Fatal(err)
	}
	if c.Dialect != smb2.Dialect302 {
		t.Fatalf("dialect %#x under MaxDialect 3.0.2", c.Dialect)
	}
	if c.NegResponse.SecurityMode&smb2.NegotiateSigningRequired == 0 {
		t.Fatal("negotiate response does not require signing")
	}
	if err := c.SessionSetup(servertest.Alice, servertest.AlicePassword); err != nil {
		t.Fatal(err)
	}
	c.Sign = false
	if _, err := c.TreeConnect(servertest.ShareName); !errors.Is(err, smb2.StatusAccessDenied) {
		t.Fatalf("unsigned TREE_CONNECT under required signing: %v", err)
	}

	// The session made before the policy keeps what it negotiated.
	before.Sign = false
	if err := before.Echo(); err != nil {
		t.Fatalf("older session: %v", err)
	}
}
