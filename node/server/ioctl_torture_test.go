package server_test

import (
	"errors"
	"testing"

	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// TestForceUnackedTimeout: Samba's FSCTL_SMBTORTURE_FORCE_UNACKED_TIMEOUT
// is taken without a session, as smbtorture sends it before it stops using
// a channel, and needs the all-ones FileId and no input; other FSCTLs
// still need a session.
func TestForceUnackedTimeout(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c := servertest.Dial(t, srv.Addr)
	if err := c.Negotiate(smb2.Dialect311); err != nil {
		t.Fatal(err)
	}
	ctl := smb2.FsctlSmbtortureForceUnackedTimeout
	if _, err := c.Ioctl(ctl, smb2.AnyFileID, nil, 0); err != nil {
		t.Fatalf("without a session: %v", err)
	}
	if _, err := c.Ioctl(ctl, smb2.FileID{}, nil, 0); !errors.Is(err, smb2.StatusInvalidParameter) {
		t.Fatalf("with a FileId: %v, want STATUS_INVALID_PARAMETER", err)
	}
	if _, err := c.Ioctl(ctl, smb2.AnyFileID, []byte{1}, 0); !errors.Is(err, smb2.StatusInvalidParameter) {
		t.Fatalf("with input: %v, want STATUS_INVALID_PARAMETER", err)
	}
	if _, err := c.Ioctl(smb2.FsctlQueryNetworkInterfaceInfo, smb2.AnyFileID, nil, 4096); !errors.Is(err, smb2.StatusUserSessionDeleted) {
		t.Fatalf("another FSCTL without a session: %v, want STATUS_USER_SESSION_DELETED", err)
	}

	// On a session and tree it is answered the same way.
	c2 := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName)
	if _, err := c2.Ioctl(ctl, smb2.AnyFileID, nil, 0); err != nil {
		t.Fatalf("on a tree: %v", err)
	}
	if err := c2.Echo(); err != nil {
		t.Fatal(err)
	}
}

// batchOpen opens name on c with a batch oplock, sharing everything.
func batchOpen(t *testing.T, c *servertest.Conn, name string) *smb2.CreateResponse {
	t.Helper()
	req := servertest.CreateRequest(name)
	req.RequestedOplockLevel = smb2.OplockLevelBatch
	req.ShareAccess = smb2.FileShareRead | smb2.FileShareWrite | smb2.FileShareDelete
	resp, err := c.CreateWith(req)
	if err != nil {
		t.Fatalf("batch open of %s: %v", name, err)
	}
	return resp
}

// TestUnresponsiveConnectionBreak: a break sent on a connection marked
// unresponsive is taken as lost: the connection is dropped, and with it
// the session and its batch oplock, so another open goes on at once with
// a batch oplock of its own (smbtorture smb2.oplock.batch22b).
func TestUnresponsiveConnectionBreak(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c1 := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName)
	batchOpen(t, c1, "held.dat")
	if _, err := c1.Ioctl(smb2.FsctlSmbtortureForceUnackedTimeout, smb2.AnyFileID, nil, 0); err != nil {
		t.Fatal(err)
	}
	c2 := servertest.Connect(t, srv.Addr, servertest.Bob, servertest.BobPassword, servertest.ShareName)
	if resp := batchOpen(t, c2, "held.dat"); resp.OplockLevel != smb2.OplockLevelBatch {
		t.Fatalf("second open got oplock %#x, want batch", resp.OplockLevel)
	}
	if hs, _, err := c1.Recv(); err != nil || hs[0].Command != smb2.CmdOplockBreak {
		t.Fatalf("want the break on the unresponsive connection first: %v %v", hs, err)
	}
	if err := c1.WaitClosed(); err != nil {
		t.Fatalf("the unresponsive connection: %v", err)
	}
}

// TestUnresponsiveChannelBreakRetried: a break whose channel is
// unresponsive is sent again on another channel of the session
// ([MS-SMB2] 3.3.4.6).
func TestUnresponsiveChannelBreakRetried(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c1 := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName, smb2.Dialect311)
	held := batchOpen(t, c1, "retried.dat")
	c1b := servertest.Dial(t, srv.Addr)
	c1b.ClientGUID = c1.ClientGUID
	if err := c1b.Negotiate(smb2.Dialect311); err != nil {
		t.Fatal(err)
	}
	if err := c1b.Bind(c1.Session, servertest.Alice, servertest.AlicePassword); err != nil {
		t.Fatal(err)
	}
	if _, err := c1.Ioctl(smb2.FsctlSmbtortureForceUnackedTimeout, smb2.AnyFileID, nil, 0); err != nil {
		t.Fatal(err)
	}
	c2 := servertest.Connect(t, srv.Addr, servertest.Bob, servertest.BobPassword, servertest.ShareName)
	req := servertest.CreateRequest("retried.dat")
	req.ShareAccess = smb2.FileShareRead | smb2.FileShareWrite | smb2.FileShareDelete
	if _, err := c2.Post(c2.Header(smb2.CmdCreate), servertest.Body(req)); err != nil {
		t.Fatal(err)
	}
	hs, pdus, err := c1b.Recv()
	var n smb2.OplockBreakNotification
	if err != nil || len(hs) != 1 || hs[0].Command != smb2.CmdOplockBreak || n.Decode(pdus[0]) != nil || n.FileID != held.FileID {
		t.Fatalf("want the break again on the other channel: %v %v", hs, err)
	}
	if hs, _, err := c1.Recv(); err != nil || hs[0].Command != smb2.CmdOplockBreak {
		t.Fatalf("want the break on the unresponsive connection first: %v %v", hs, err)
	}
	if err := c1.WaitClosed(); err != nil {
		t.Fatalf("the unresponsive connection: %v", err)
	}
}
