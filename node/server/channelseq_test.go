package server_test

import (
	"testing"

	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// TestChannelSequenceOutstanding follows [MS-SMB2] 3.3.5.2.10: while a
// request sent under an older ChannelSequence is still outstanding (a
// blocking LOCK), a replayed WRITE under the new one is refused with
// STATUS_FILE_NOT_AVAILABLE, so that it cannot overtake what the client
// sent before it lost a channel; once that request completes, the replay
// goes through. A WRITE that is not a replay raises the sequence at once,
// and one more than 0x7FFF behind fails.
func TestChannelSequenceOutstanding(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	holder := servertest.Connect(t, srv.Addr, servertest.Bob, servertest.BobPassword, servertest.ShareName)
	c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName)
	hfid, err := holder.Create("csn.dat")
	if err != nil {
		t.Fatal(err)
	}
	fid, err := c.Create("csn.dat")
	if err != nil {
		t.Fatal(err)
	}
	lock := func(cc *servertest.Conn, f smb2.FileID, flags uint32) *smb2.LockRequest {
		return &smb2.LockRequest{FileID: f, Locks: []smb2.LockElement{{Offset: 0, Length: 10, Flags: flags}}}
	}
	if h, _ := holder.Call(smb2.CmdLock, lock(holder, hfid, smb2.LockFlagExclusive)); h.Status != 0 {
		t.Fatalf("holder's lock: %#x", h.Status)
	}
	write := func(csn uint16, replay bool) smb2.Status {
		t.Helper()
		h := c.Header(smb2.CmdWrite)
		h.Status = uint32(csn) // ChannelSequence
		if replay {
			h.Flags |= smb2.FlagReplayOperation
		}
		resp, _ := c.Send(h, servertest.Body(&smb2.WriteRequest{Offset: 100, FileID: fid, Data: []byte("x")}))
		return smb2.Status(resp.Status)
	}

	// A blocking LOCK under ChannelSequence 0 stays outstanding.
	lh := c.Header(smb2.CmdLock)
	if _, err := c.Post(lh, servertest.Body(lock(c, fid, smb2.LockFlagExclusive))); err != nil {
		t.Fatal(err)
	}
	msg, err := c.ReadFrame()
	var ih smb2.Header
	if err == nil {
		err = ih.Decode(msg)
	}
	if err != nil || smb2.Status(ih.Status) != smb2.StatusPending || ih.MessageID != lh.MessageID {
		t.Fatalf("blocking lock: %v status %#x, want the interim STATUS_PENDING", err, ih.Status)
	}
	c.CreditLimit += uint64(ih.Credits)
	if st := write(1, false); st != smb2.StatusSuccess {
		t.Fatalf("WRITE raising the ChannelSequence: %v", st)
	}
	if st := write(1, true); st != smb2.StatusFileNotAvailable {
		t.Fatalf("replayed WRITE while a request of the old sequence is outstanding: %v, want STATUS_FILE_NOT_AVAILABLE", st)
	}
	// The holder unlocks: the old LOCK completes and counts no more.
	if h, _ := holder.Call(smb2.CmdLock, lock(holder, hfid, smb2.LockFlagUnlock)); h.Status != 0 {
		t.Fatalf("holder's unlock: %#x", h.Status)
	}
	if hs, _, err := c.Recv(); err != nil || hs[0].MessageID != lh.MessageID || hs[0].Status != 0 {
		t.Fatalf("blocking lock's final response: %v %v", hs, err)
	}
	if st := write(1, true); st != smb2.StatusSuccess {
		t.Fatalf("replayed WRITE once nothing older is outstanding: %v", st)
	}
	if st := write(1+0x8000, false); st != smb2.StatusFileNotAvailable {
		t.Fatalf("WRITE 0x8000 behind: %v, want STATUS_FILE_NOT_AVAILABLE", st)
	}
}
