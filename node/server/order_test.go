package server_test

import (
	"fmt"
	"testing"

	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// recvAll reads responses until it has one for each message id in want and
// returns their statuses by message id.
func recvAll(t *testing.T, c *servertest.Conn, want ...uint64) map[uint64]smb2.Status {
	t.Helper()
	got := map[uint64]smb2.Status{}
	for len(got) < len(want) {
		hs, _, err := c.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hs {
			got[h.MessageID] = smb2.Status(h.Status)
		}
	}
	return got
}

// TestCloseAfterNotify: a CLOSE sent right behind a CHANGE_NOTIFY on the
// same handle, without waiting for the interim response, completes the
// notify with STATUS_NOTIFY_CLEANUP; the CLOSE never overtakes it
// (smbtorture smb2.notify.dir).
func TestCloseAfterNotify(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName)
	for i := range 50 {
		req := dirCreate(fmt.Sprintf("d%d", i))
		resp, err := c.CreateWith(req)
		if err != nil {
			t.Fatal(err)
		}
		n := notifyAny()
		n.FileID = resp.FileID
		nh := c.Header(smb2.CmdChangeNotify)
		if _, err := c.Post(nh, servertest.Body(n)); err != nil {
			t.Fatal(err)
		}
		ch := c.Header(smb2.CmdClose)
		if _, err := c.Post(ch, servertest.Body(&smb2.CloseRequest{FileID: resp.FileID})); err != nil {
			t.Fatal(err)
		}
		got := recvAll(t, c, nh.MessageID, ch.MessageID)
		if got[nh.MessageID] != smb2.StatusNotifyCleanup || got[ch.MessageID] != smb2.StatusSuccess {
			t.Fatalf("round %d: notify %v, close %v", i, got[nh.MessageID], got[ch.MessageID])
		}
	}
}

// TestCancelBeforeStart: a CANCEL sent right behind the request it names
// cancels it even when it arrives before the request has started
// ([MS-SMB2] 3.3.5.16; smbtorture smb2.notify.tcon).
func TestCancelBeforeStart(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName)
	resp, err := c.CreateWith(dirCreate("watched"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		n := notifyAny()
		n.FileID = resp.FileID
		nh := c.Header(smb2.CmdChangeNotify)
		if _, err := c.Post(nh, servertest.Body(n)); err != nil {
			t.Fatal(err)
		}
		cancel := c.Header(smb2.CmdCancel)
		cancel.MessageID, cancel.CreditCharge = nh.MessageID, 0
		if _, err := c.Post(cancel, servertest.Body(&smb2.CancelRequest{})); err != nil {
			t.Fatal(err)
		}
		if got := recvAll(t, c, nh.MessageID); got[nh.MessageID] != smb2.StatusCancelled {
			t.Fatalf("round %d: notify %v", i, got[nh.MessageID])
		}
	}
}
