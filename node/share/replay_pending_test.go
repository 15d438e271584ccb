package share_test

import (
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// holdBatch opens name with a batch oplock on a connection of its own and
// returns that connection and the open.
func holdBatch(t *testing.T, s *servertest.Server, name string) (*servertest.Conn, *smb2.CreateResponse) {
	t.Helper()
	c := connect(t, s, servertest.Alice, servertest.AlicePassword)
	req := servertest.CreateRequest(name)
	req.RequestedOplockLevel = smb2.OplockLevelBatch
	req.ShareAccess = smb2.FileShareRead | smb2.FileShareWrite | smb2.FileShareDelete
	resp, err := c.CreateWith(req)
	if err != nil || resp.OplockLevel != smb2.OplockLevelBatch {
		t.Fatalf("batch open: %v", err)
	}
	return c, resp
}

// dh2q is a CREATE of name with a DH2Q of createGUID, sharing everything.
func dh2q(name string, createGUID [16]byte) *smb2.CreateRequest {
	req := servertest.CreateRequest(name)
	req.ShareAccess = smb2.FileShareRead | smb2.FileShareWrite | smb2.FileShareDelete
	d := smb2.DurableRequestV2{CreateGUID: createGUID}
	req.Contexts = []smb2.CreateContext{{Name: smb2.CreateCtxDurableHandleRequestV2, Data: d.Append(nil)}}
	return req
}

// postWaitingCreate sends req on c and waits for the break it causes on
// holder (which does not acknowledge it).
func postWaitingCreate(t *testing.T, c, holder *servertest.Conn, req *smb2.CreateRequest) {
	t.Helper()
	if _, err := c.Post(c.Header(smb2.CmdCreate), servertest.Body(req)); err != nil {
		t.Fatal(err)
	}
	hs, _, err := holder.Recv()
	if err != nil || len(hs) != 1 || hs[0].Command != smb2.CmdOplockBreak {
		t.Fatalf("want an oplock break on the holder: %v %v", hs, err)
	}
}

// replayCreate sends req on c as a replay (SMB2_FLAGS_REPLAY_OPERATION).
func replayCreate(c *servertest.Conn, req *smb2.CreateRequest) (smb2.Status, *smb2.CreateResponse) {
	h := c.Header(smb2.CmdCreate)
	h.Flags |= smb2.FlagReplayOperation
	h, pdu := c.Send(h, servertest.Body(req))
	var resp smb2.CreateResponse
	if smb2.Status(h.Status) == smb2.StatusSuccess && resp.Decode(pdu) != nil {
		return smb2.StatusInvalidNetworkResponse, nil
	}
	return smb2.Status(h.Status), &resp
}

// pollTicker returns how long a test polls a condition and the ticker
// it polls on.
func pollTicker() (time.Time, *time.Ticker) {
	return time.Now().Add(servertest.DefaultTimeout), time.NewTicker(time.Millisecond)
}

// waitLog waits until the server has logged msg.
func waitLog(t *testing.T, s *servertest.Server, msg string) {
	t.Helper()
	deadline, tick := pollTicker()
	defer tick.Stop()
	for !s.Log.Contains(msg) {
		if time.Now().After(deadline) {
			t.Fatalf("the server never logged %q", msg)
		}
		<-tick.C
	}
}

// TestPendingCreateOutlivesChannel checks that a DH2Q CREATE waiting for
// a break goes on when its connection is lost while its session has
// another channel: a replay on that channel is answered
// STATUS_FILE_NOT_AVAILABLE while it waits, and is given its open once it
// has completed (smbtorture smb2.replay.dhv2-pending2n-vs-oplock-sane).
func TestPendingCreateOutlivesChannel(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	holder, held := holdBatch(t, s, "pending2.dat")

	c1 := servertest.Connect(t, s.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName, smb2.Dialect311)
	c2 := servertest.Dial(t, s.Addr)
	c2.ClientGUID = c1.ClientGUID
	if err := c2.Negotiate(smb2.Dialect311); err != nil {
		t.Fatal(err)
	}
	if err := c2.Bind(c1.Session, servertest.Alice, servertest.AlicePassword); err != nil {
		t.Fatal(err)
	}
	c2.TreeID = c1.TreeID

	req := dh2q("pending2.dat", [16]byte{2, 2})
	postWaitingCreate(t, c1, holder, req)
	c1.Close()
	waitLog(t, s, "CREATE goes on without its connection")

	if st, _ := replayCreate(c2, req); st != smb2.StatusFileNotAvailable {
		t.Fatalf("replay while the CREATE waits: %v, want STATUS_FILE_NOT_AVAILABLE", st)
	}
	if err := holder.CloseFile(held.FileID); err != nil {
		t.Fatal(err)
	}
	// The CREATE completes once the holder's open is gone; until then the
	// replay is still refused, as a client retrying would see.
	deadline, tick := pollTicker()
	defer tick.Stop()
	st, resp := replayCreate(c2, req)
	for st == smb2.StatusFileNotAvailable && time.Now().Before(deadline) {
		<-tick.C
		st, resp = replayCreate(c2, req)
	}
	if st != smb2.StatusSuccess || resp.CreateAction != smb2.FileOpened {
		t.Fatalf("replay after the CREATE completed: %v, want the open it made", st)
	}
	if n := s.OpenCount(); n != 1 {
		t.Fatalf("%d opens, want the one the first CREATE made", n)
	}
	if err := c2.CloseFile(resp.FileID); err != nil {
		t.Fatal(err)
	}
}

// TestPendingCreateLastChannel checks that a DH2Q CREATE waiting for a
// break is cancelled with its session's last channel: no open is made.
func TestPendingCreateLastChannel(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	holder, held := holdBatch(t, s, "last.dat")
	c := connect(t, s, servertest.Alice, servertest.AlicePassword)
	postWaitingCreate(t, c, holder, dh2q("last.dat", [16]byte{3, 3}))
	c.Close()
	deadline, tick := pollTicker()
	defer tick.Stop()
	for len(s.Sessions()) > 1 && time.Now().Before(deadline) {
		<-tick.C // the lost connection's session ends
	}
	if n := len(s.Sessions()); n != 1 {
		t.Fatalf("%d sessions, want the holder's only", n)
	}
	if n := s.OpenCount(); n != 1 {
		t.Fatalf("%d opens, want the holder's only", n)
	}
	if err := holder.CloseFile(held.FileID); err != nil {
		t.Fatal(err)
	}
}
