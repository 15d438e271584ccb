package server_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/smbcluster/smbcluster/node/auth"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// secondChannel dials a connection of the same client as c (same
// ClientGuid) and negotiates dialect.
func secondChannel(t *testing.T, srv *servertest.Server, c *servertest.Conn, dialect uint16) *servertest.Conn {
	t.Helper()
	c2 := servertest.Dial(t, srv.Addr)
	c2.ClientGUID = c.ClientGUID
	if err := c2.Negotiate(dialect); err != nil {
		t.Fatal(err)
	}
	return c2
}

// TestBinding: a second connection binds to the session with
// SMB2_SESSION_FLAG_BINDING, serves I/O signed with its own channel key,
// and keeps the session when the first connection goes away
// ([MS-SMB2] 3.3.5.5.2, 3.3.4.1.1, 3.3.7.1).
func TestBinding(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	for _, d := range []uint16{smb2.Dialect300, smb2.Dialect302, smb2.Dialect311} {
		t.Run(servertest.DialectName(d), func(t *testing.T) {
			c1 := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName, d)
			fid, err := c1.Create("bound")
			if err != nil {
				t.Fatal(err)
			}
			c2 := secondChannel(t, srv, c1, d)
			if err := c2.Bind(c1.Session, servertest.Alice, servertest.AlicePassword); err != nil {
				t.Fatalf("bind: %v", err)
			}
			c2.TreeID = c1.TreeID
			data := []byte("written on the second channel")
			h, _ := c2.Call(smb2.CmdWrite, &smb2.WriteRequest{FileID: fid, Data: data})
			if h.Status != 0 || h.Flags&smb2.FlagSigned == 0 {
				t.Fatalf("WRITE on channel 2: %v flags %#x", smb2.Status(h.Status), h.Flags)
			}
			if got, err := c1.Read(fid, 0, 100); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("READ on channel 1: %q, %v", got, err)
			}
			c1.Close()
			// The session lives on: the open is still there on channel 2.
			if got, err := c2.Read(fid, 0, 100); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("READ on channel 2 after channel 1 closed: %q, %v", got, err)
			}
			if err := c2.CloseFile(fid); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestBindingWrongChannelKey: a request on the bound channel signed with
// another channel's key is refused.
func TestBindingWrongChannelKey(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c1 := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName, smb2.Dialect311)
	c2 := secondChannel(t, srv, c1, smb2.Dialect311)
	if err := c2.Bind(c1.Session, servertest.Alice, servertest.AlicePassword); err != nil {
		t.Fatal(err)
	}
	// In 3.1.1 the first channel's key is Session.SigningKey; the bound
	// channel has its own ([MS-SMB2] 3.3.5.5.3).
	if err := c2.UseSigningKey(c1.Session.Keys.Signing); err != nil {
		t.Fatal(err)
	}
	c2.SkipVerify = true
	h, _ := c2.Call(smb2.CmdTreeConnect, &smb2.TreeConnectRequest{Path: `\\127.0.0.1\share`})
	if st := smb2.Status(h.Status); st != smb2.StatusAccessDenied {
		t.Fatalf("request signed with the first channel's key: %v, want STATUS_ACCESS_DENIED", st)
	}
}

// TestBindingChecks: the refusals of [MS-SMB2] 3.3.5.5.2.
func TestBindingChecks(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c1 := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName, smb2.Dialect311)

	t.Run("other ClientGuid", func(t *testing.T) {
		// The server MAY refuse it; Windows binds (smbtorture's
		// bind_negative_smb3signCtoHd expects success).
		c2 := servertest.Dial(t, srv.Addr)
		if err := c2.Negotiate(smb2.Dialect311); err != nil {
			t.Fatal(err)
		}
		if err := c2.Bind(c1.Session, servertest.Alice, servertest.AlicePassword); err != nil {
			t.Fatalf("got %v, want success", err)
		}
	})
	// More refusals, with the statuses' signatures, in binding_torture_test.go.
	t.Run("unsigned", func(t *testing.T) {
		c2 := secondChannel(t, srv, c1, smb2.Dialect311)
		h := c2.Header(smb2.CmdSessionSetup)
		h.SessionID = c1.Session.ID
		rh, _ := c2.Send(h, servertest.Body(&smb2.SessionSetupRequest{
			Flags: smb2.SessionFlagBinding, SecurityMode: 1, SecurityBuffer: auth.NTLMNegotiate(true)}))
		if st := smb2.Status(rh.Status); st != smb2.StatusInvalidParameter {
			t.Fatalf("got %v, want STATUS_INVALID_PARAMETER", st)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		c2 := secondChannel(t, srv, c1, smb2.Dialect311)
		if err := c2.Bind(c1.Session, servertest.Alice, "wrong"); err != smb2.StatusLogonFailure {
			t.Fatalf("got %v, want STATUS_LOGON_FAILURE", err)
		}
	})
	t.Run("other user", func(t *testing.T) {
		c2 := secondChannel(t, srv, c1, smb2.Dialect311)
		if err := c2.Bind(c1.Session, servertest.Bob, servertest.BobPassword); err != smb2.StatusAccessDenied {
			t.Fatalf("got %v, want STATUS_ACCESS_DENIED", err)
		}
	})
	t.Run("already bound", func(t *testing.T) {
		if err := c1.Bind(c1.Session, servertest.Alice, servertest.AlicePassword); err != smb2.StatusRequestNotAccepted {
			t.Fatalf("got %v, want STATUS_REQUEST_NOT_ACCEPTED", err)
		}
	})
	// The session survived every failed binding.
	mustEcho(t, c1)
	if _, err := c1.Create("still-here"); err != nil {
		t.Fatal(err)
	}
}

// TestBindingRefusedIsLogged: a refused bind is logged at info with the
// client's address and the reason, here a session this server does not
// hold (as a cluster node sees a session of another node).
func TestBindingRefusedIsLogged(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	other := servertest.Start(t, servertest.Options{})
	c1 := servertest.Connect(t, other.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName, smb2.Dialect311)
	c2 := secondChannel(t, srv, c1, smb2.Dialect311)
	if err := c2.Bind(c1.Session, servertest.Alice, servertest.AlicePassword); err != smb2.StatusUserSessionDeleted {
		t.Fatalf("bind of another server's session: %v, want STATUS_USER_SESSION_DELETED", err)
	}
	want := "INFO channel bind refused remote=" + c2.NetConn().LocalAddr().String()
	for _, l := range srv.Log.Records() {
		if strings.HasPrefix(l, want) && strings.Contains(l, "reason=no such session") {
			return
		}
	}
	t.Errorf("no %q record with the reason in:\n%s", want, strings.Join(srv.Log.Records(), "\n"))
}
