package share_test

import (
	"testing"

	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// TestReplayWhileCreatePending checks the replay of a DH2Q CREATE that
// still waits for an oplock break: it is answered STATUS_FILE_NOT_AVAILABLE
// at once, and once the first CREATE completes a replay gets its open,
// durable or not ([MS-SMB2] 3.3.5.9.10; smbtorture
// smb2.replay.dhv2-pending1n-vs-oplock-sane).
func TestReplayWhileCreatePending(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	c1 := connect(t, s, servertest.Alice, servertest.AlicePassword)
	hold := servertest.CreateRequest("pending.dat")
	hold.RequestedOplockLevel = smb2.OplockLevelBatch
	hold.ShareAccess = smb2.FileShareRead | smb2.FileShareWrite | smb2.FileShareDelete
	held, err := c1.CreateWith(hold)
	if err != nil || held.OplockLevel != smb2.OplockLevelBatch {
		t.Fatalf("batch open: %v", err)
	}

	c2 := connect(t, s, servertest.Alice, servertest.AlicePassword)
	guid := [16]byte{7, 7, 7}
	req := servertest.CreateRequest("pending.dat")
	req.ShareAccess = hold.ShareAccess
	d := smb2.DurableRequestV2{CreateGUID: guid}
	req.Contexts = []smb2.CreateContext{{Name: smb2.CreateCtxDurableHandleRequestV2, Data: d.Append(nil)}}
	first := c2.Header(smb2.CmdCreate)
	if _, err := c2.Post(first, servertest.Body(req)); err != nil {
		t.Fatal(err)
	}
	hs, _, err := c1.Recv() // the break the first CREATE waits for
	if err != nil || len(hs) != 1 || hs[0].Command != smb2.CmdOplockBreak {
		t.Fatalf("want an oplock break on the holder: %v %v", hs, err)
	}

	replay := c2.Header(smb2.CmdCreate)
	replay.Flags |= smb2.FlagReplayOperation
	h, _ := c2.Send(replay, servertest.Body(req))
	if smb2.Status(h.Status) != smb2.StatusFileNotAvailable {
		t.Fatalf("replay while pending: status %#x, want STATUS_FILE_NOT_AVAILABLE", h.Status)
	}

	if err := c1.CloseFile(held.FileID); err != nil {
		t.Fatal(err)
	}
	hs, pdus, err := c2.Recv()
	var resp smb2.CreateResponse
	if err != nil || len(hs) != 1 || hs[0].MessageID != first.MessageID || smb2.Status(hs[0].Status) != smb2.StatusSuccess || resp.Decode(pdus[0]) != nil {
		t.Fatalf("first CREATE after the close: %v %v", hs, err)
	}
	if hasContext(&resp, smb2.CreateCtxDurableHandleRequestV2) {
		t.Fatal("an open without an oplock was made durable")
	}

	replay = c2.Header(smb2.CmdCreate)
	replay.Flags |= smb2.FlagReplayOperation
	h, pdu := c2.Send(replay, servertest.Body(req))
	var again smb2.CreateResponse
	if smb2.Status(h.Status) != smb2.StatusSuccess || again.Decode(pdu) != nil || again.FileID != resp.FileID {
		t.Fatalf("replay after the CREATE: status %#x fid %v, want the first open %v", h.Status, again.FileID, resp.FileID)
	}

	// The same CreateGuid without the replay flag is another CREATE.
	h, _ = c2.Send(c2.Header(smb2.CmdCreate), servertest.Body(req))
	if smb2.Status(h.Status) != smb2.StatusDuplicateObjectid {
		t.Fatalf("CREATE reusing a CreateGuid: status %#x, want STATUS_DUPLICATE_OBJECTID", h.Status)
	}

	// Once a request used the open, the client has seen the answer: a
	// replay is a new CREATE (smbtorture smb2.replay.replay6).
	if _, err := c2.Write(resp.FileID, 0, []byte("x")); err != nil {
		t.Fatal(err)
	}
	replay = c2.Header(smb2.CmdCreate)
	replay.Flags |= smb2.FlagReplayOperation
	h, pdu = c2.Send(replay, servertest.Body(req))
	var fresh smb2.CreateResponse
	if smb2.Status(h.Status) != smb2.StatusSuccess || fresh.Decode(pdu) != nil || fresh.FileID == resp.FileID {
		t.Fatalf("replay after a WRITE: status %#x fid %v, want a new open", h.Status, fresh.FileID)
	}
	for _, fid := range []smb2.FileID{resp.FileID, fresh.FileID} {
		if err := c2.CloseFile(fid); err != nil {
			t.Fatal(err)
		}
	}
}

// leaseDurable is a CREATE asking for a lease of key and a DH2Q.
func leaseDurable(name string, key, createGUID [16]byte, st uint32) *smb2.CreateRequest {
	req := servertest.CreateRequest(name)
	req.RequestedOplockLevel = smb2.OplockLevelLease
	l := smb2.LeaseRequest{Key: key, State: st, Version: 1}
	d := smb2.DurableRequestV2{CreateGUID: createGUID}
	req.Contexts = []smb2.CreateContext{
		{Name: smb2.CreateCtxRequestLease, Data: l.Append(nil)},
		{Name: smb2.CreateCtxDurableHandleRequestV2, Data: d.Append(nil)},
	}
	return req
}

// TestReplayLease checks the replay of a DH2Q CREATE with a lease: the
// answer carries the lease's present state, and a replay asking for a
// lease of another key, or a lease where an oplock was granted, is
// refused (smbtorture smb2.replay.replay-dhv2-lease1, -lease3,
// -oplock-lease).
func TestReplayLease(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	c := connect(t, s, servertest.Alice, servertest.AlicePassword)
	key, guid := [16]byte{1, 2, 3}, [16]byte{9, 9}
	rh := smb2.LeaseRead | smb2.LeaseHandle
	resp, err := c.CreateWith(leaseDurable("lease.dat", key, guid, rh))
	if err != nil || resp.OplockLevel != smb2.OplockLevelLease {
		t.Fatalf("lease open: %v", err)
	}
	up, err := c.CreateWith(leaseDurable("lease.dat", key, [16]byte{8}, rh|smb2.LeaseWrite))
	if err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	replay := func(req *smb2.CreateRequest) (smb2.Status, *smb2.CreateResponse) {
		h := c.Header(smb2.CmdCreate)
		h.Flags |= smb2.FlagReplayOperation
		h, pdu := c.Send(h, servertest.Body(req))
		var r smb2.CreateResponse
		if smb2.Status(h.Status) == smb2.StatusSuccess && r.Decode(pdu) != nil {
			t.Fatal("replay response does not decode")
		}
		return smb2.Status(h.Status), &r
	}
	st, again := replay(leaseDurable("lease.dat", key, guid, smb2.LeaseRead))
	var l smb2.LeaseResponse
	data, _ := smb2.FindCreateContext(again.Contexts, smb2.CreateCtxRequestLease)
	if st != smb2.StatusSuccess || again.FileID != resp.FileID || l.Decode(data) != nil || l.State != rh|smb2.LeaseWrite {
		t.Fatalf("replay: status %v fid %v lease %#x; want the first open with the upgraded lease", st, again.FileID, l.State)
	}
	if st, _ := replay(leaseDurable("lease.dat", [16]byte{4}, guid, rh)); st != smb2.StatusAccessDenied {
		t.Fatalf("replay with another lease key: %v, want STATUS_ACCESS_DENIED", st)
	}
	for _, fid := range []smb2.FileID{resp.FileID, up.FileID} {
		if err := c.CloseFile(fid); err != nil {
			t.Fatal(err)
		}
	}

	oguid := [16]byte{5, 5}
	oresp, err := c.CreateWith(batchDurable("oplock.dat", true, oguid))
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := replay(leaseDurable("oplock.dat", key, oguid, rh)); st != smb2.StatusAccessDenied {
		t.Fatalf("lease replay of an oplock open: %v, want STATUS_ACCESS_DENIED", st)
	}
	if err := c.CloseFile(oresp.FileID); err != nil {
		t.Fatal(err)
	}
}

// TestChannelSequence checks [MS-SMB2] 3.3.5.2.10 as smbtorture
// smb2.replay.replay4 and channel-sequence do: a newer ChannelSequence
// becomes the open's (on any command), and a WRITE with a stale one fails
// with STATUS_FILE_NOT_AVAILABLE while a READ goes on.
func TestChannelSequence(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	c := connect(t, s, servertest.Alice, servertest.AlicePassword)
	fid, err := c.Create("csn.dat")
	if err != nil {
		t.Fatal(err)
	}
	send := func(cmd smb2.Command, csn uint16, body []byte) smb2.Status {
		h := c.Header(cmd)
		h.Status = uint32(csn)
		h, _ = c.Send(h, body)
		return smb2.Status(h.Status)
	}
	write := servertest.Body(&smb2.WriteRequest{FileID: fid, Data: []byte("x")})
	read := servertest.Body(&smb2.ReadRequest{FileID: fid, Length: 1})
	for i, step := range []struct {
		cmd  smb2.Command
		csn  uint16
		body []byte
		want smb2.Status
	}{
		{smb2.CmdWrite, 0, write, smb2.StatusSuccess},
		{smb2.CmdWrite, 0x8000, write, smb2.StatusFileNotAvailable},
		{smb2.CmdRead, 1, read, smb2.StatusSuccess},
		{smb2.CmdWrite, 0, write, smb2.StatusFileNotAvailable},
		{smb2.CmdRead, 0, read, smb2.StatusSuccess},
		{smb2.CmdWrite, 1, write, smb2.StatusSuccess},
		{smb2.CmdWrite, 0x8000, write, smb2.StatusSuccess},
		{smb2.CmdWrite, 0xffff, write, smb2.StatusSuccess},
		{smb2.CmdWrite, 0, write, smb2.StatusSuccess},
		{smb2.CmdWrite, 0xffff, write, smb2.StatusFileNotAvailable},
	} {
		if got := send(step.cmd, step.csn, step.body); got != step.want {
			t.Fatalf("step %d: %v with ChannelSequence %#x: %v, want %v", i, step.cmd, step.csn, got, step.want)
		}
	}
	if err := c.CloseFile(fid); err != nil {
		t.Fatal(err)
	}
}
