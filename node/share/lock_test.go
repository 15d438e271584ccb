package share_test

import (
	"testing"

	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// client is one of two independent clients: its own connection and session.
type client struct {
	*servertest.Conn
	t   *testing.T
	fid smb2.FileID
}

func newLockClient(t *testing.T, addr, user, password string) *client {
	c := servertest.Connect(t, addr, user, password, servertest.ShareName)
	fid, err := c.Create("locked.dat")
	if err != nil {
		t.Fatalf("%s: create: %v", user, err)
	}
	return &client{Conn: c, t: t, fid: fid}
}

func lockReq(fid smb2.FileID, off, n uint64, flags uint32) *smb2.LockRequest {
	return &smb2.LockRequest{FileID: fid, Locks: []smb2.LockElement{{Offset: off, Length: n, Flags: flags}}}
}

// lock sends a LOCK and returns its status.
func (c *client) lock(off, n uint64, flags uint32) smb2.Status {
	c.t.Helper()
	h, _ := c.Call(smb2.CmdLock, lockReq(c.fid, off, n, flags))
	return smb2.Status(h.Status)
}

// postLock sends a LOCK, waits for its interim STATUS_PENDING response and
// returns the request's header (MessageId) and the AsyncId.
func (c *client) postLock(off, n uint64, flags uint32) (smb2.Header, uint64) {
	c.t.Helper()
	hdr := c.Header(smb2.CmdLock)
	if _, err := c.Post(hdr, servertest.Body(lockReq(c.fid, off, n, flags))); err != nil {
		c.t.Fatal(err)
	}
	msg, err := c.ReadFrame()
	if err != nil {
		c.t.Fatalf("waiting for the interim response: %v", err)
	}
	var h smb2.Header
	if err := h.Decode(msg); err != nil {
		c.t.Fatal(err)
	}
	c.CreditLimit += uint64(h.Credits)
	if h.MessageID != hdr.MessageID || !h.IsAsync() || smb2.Status(h.Status) != smb2.StatusPending {
		c.t.Fatalf("got %v mid %d status %#x, want the interim STATUS_PENDING of mid %d", h.Command, h.MessageID, h.Status, hdr.MessageID)
	}
	return hdr, h.AsyncID
}

// final receives the final response of the request with header hdr.
func (c *client) final(hdr smb2.Header) smb2.Status {
	c.t.Helper()
	hs, _, err := c.Recv()
	if err != nil {
		c.t.Fatal(err)
	}
	if hs[0].MessageID != hdr.MessageID || hs[0].Command != smb2.CmdLock {
		c.t.Fatalf("got %v mid %d, want the LOCK response of mid %d", hs[0].Command, hs[0].MessageID, hdr.MessageID)
	}
	return smb2.Status(hs[0].Status)
}

func wantLock(t *testing.T, what string, got, want smb2.Status) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: %v, want %v", what, got, want)
	}
}

func statusOf(err error) smb2.Status {
	if st, ok := err.(smb2.Status); ok {
		return st
	}
	if err == nil {
		return smb2.StatusSuccess
	}
	return 0xFFFFFFFF
}

// TestBlockingLockTwoClients: alice holds an exclusive lock; bob's I/O on
// the range conflicts, his blocking lock goes async and is granted when
// alice unlocks; then alice's blocking lock is cancelled, and another is
// granted when bob closes his handle.
func TestBlockingLockTwoClients(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	alice := newLockClient(t, srv.Addr, servertest.Alice, servertest.AlicePassword)
	bob := newLockClient(t, srv.Addr, servertest.Bob, servertest.BobPassword)
	if _, err := alice.Write(alice.fid, 0, make([]byte, 200)); err != nil {
		t.Fatal(err)
	}

	wantLock(t, "alice locks", alice.lock(100, 50, smb2.LockFlagExclusive), smb2.StatusSuccess)
	if _, err := alice.Read(alice.fid, 100, 50); err != nil {
		t.Fatalf("holder's read: %v", err)
	}
	_, err := bob.Read(bob.fid, 120, 10)
	wantLock(t, "bob reads the locked range", statusOf(err), smb2.StatusFileLockConflict)
	_, err = bob.Write(bob.fid, 149, []byte{1})
	wantLock(t, "bob writes the locked range", statusOf(err), smb2.StatusFileLockConflict)
	wantLock(t, "bob fails immediately", bob.lock(100, 50, smb2.LockFlagExclusive|smb2.LockFlagFailImmediately), smb2.StatusLockNotGranted)

	pending, _ := bob.postLock(100, 50, smb2.LockFlagExclusive)
	wantLock(t, "alice unlocks", alice.lock(100, 50, smb2.LockFlagUnlock), smb2.StatusSuccess)
	wantLock(t, "bob's blocking lock", bob.final(pending), smb2.StatusSuccess)
	_, err = alice.Read(alice.fid, 100, 1)
	wantLock(t, "alice reads bob's range", statusOf(err), smb2.StatusFileLockConflict)

	// CANCEL of a waiting lock answers it with STATUS_CANCELLED.
	pending, asyncID := alice.postLock(100, 1, smb2.LockFlagShared)
	cancel := alice.Header(smb2.CmdCancel)
	cancel.MessageID, cancel.Flags, cancel.AsyncID, cancel.TreeID = pending.MessageID, smb2.FlagAsyncCommand, asyncID, 0
	if _, err := alice.Post(cancel, servertest.Body(&smb2.CancelRequest{})); err != nil {
		t.Fatal(err)
	}
	wantLock(t, "cancelled lock", alice.final(pending), smb2.StatusCancelled)

	// Closing the holder's handle releases its locks and wakes the waiter.
	pending, _ = alice.postLock(100, 50, smb2.LockFlagExclusive)
	if err := bob.CloseFile(bob.fid); err != nil {
		t.Fatal(err)
	}
	wantLock(t, "lock after the holder closed", alice.final(pending), smb2.StatusSuccess)
	if err := alice.CloseFile(alice.fid); err != nil {
		t.Fatal(err)
	}
}

// TestBlockingLockWaiterCloses: closing the handle a blocking lock waits
// on ends the lock with STATUS_RANGE_NOT_LOCKED (smb2.lock.cancel).
func TestBlockingLockWaiterCloses(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	alice := newLockClient(t, srv.Addr, servertest.Alice, servertest.AlicePassword)
	bob := newLockClient(t, srv.Addr, servertest.Bob, servertest.BobPassword)
	wantLock(t, "alice locks", alice.lock(0, 10, smb2.LockFlagExclusive), smb2.StatusSuccess)
	pending, _ := bob.postLock(0, 10, smb2.LockFlagExclusive)
	wantLock(t, "unlock of a pending lock", bob.lock(0, 10, smb2.LockFlagUnlock), smb2.StatusRangeNotLocked)
	closeHdr := bob.Header(smb2.CmdClose)
	if _, err := bob.Post(closeHdr, servertest.Body(&smb2.CloseRequest{FileID: bob.fid})); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		hs, _, err := bob.Recv()
		if err != nil {
			t.Fatal(err)
		}
		switch hs[0].MessageID {
		case pending.MessageID:
			wantLock(t, "waiting lock of a closed handle", smb2.Status(hs[0].Status), smb2.StatusRangeNotLocked)
		case closeHdr.MessageID:
			wantLock(t, "close", smb2.Status(hs[0].Status), smb2.StatusSuccess)
		default:
			t.Fatalf("unexpected response to mid %d", hs[0].MessageID)
		}
	}
	if err := alice.CloseFile(alice.fid); err != nil {
		t.Fatal(err)
	}
}

// TestLockRequestRules is a digest of smb2.lock.valid-request and
// multiple-unlock: flag validation, the unlock/lock mix, rollback.
func TestLockRequestRules(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c := newLockClient(t, srv.Addr, servertest.Alice, servertest.AlicePassword)
	const fi = smb2.LockFlagFailImmediately
	two := func(f0, f1 uint32) smb2.Status {
		h, _ := c.Call(smb2.CmdLock, &smb2.LockRequest{FileID: c.fid, Locks: []smb2.LockElement{
			{Offset: 0, Length: 10, Flags: f0}, {Offset: 10, Length: 10, Flags: f1},
		}})
		return smb2.Status(h.Status)
	}
	wantLock(t, "no flags", c.lock(0, 1, 0), smb2.StatusInvalidParameter)
	wantLock(t, "unlock|exclusive", c.lock(0, 1, smb2.LockFlagUnlock|smb2.LockFlagExclusive), smb2.StatusInvalidParameter)
	wantLock(t, "unlock|fail immediately", c.lock(0, 1, smb2.LockFlagUnlock|fi), smb2.StatusInvalidParameter)
	wantLock(t, "wrapping range", c.lock(^uint64(0), 2, smb2.LockFlagExclusive|fi), smb2.StatusInvalidLockRange)
	wantLock(t, "blocking element in a pair", two(smb2.LockFlagShared|fi, smb2.LockFlagShared), smb2.StatusInvalidParameter)
	wantLock(t, "lock then unlock", two(smb2.LockFlagExclusive|fi, smb2.LockFlagUnlock), smb2.StatusInvalidParameter)

	wantLock(t, "second range", c.lock(10, 10, smb2.LockFlagExclusive|fi), smb2.StatusSuccess)
	wantLock(t, "pair conflicting on its second", two(smb2.LockFlagExclusive|fi, smb2.LockFlagExclusive|fi), smb2.StatusLockNotGranted)
	wantLock(t, "first range rolled back", c.lock(0, 10, smb2.LockFlagExclusive|fi), smb2.StatusSuccess)
	wantLock(t, "unlock then lock", two(smb2.LockFlagUnlock, smb2.LockFlagExclusive|fi), smb2.StatusInvalidParameter)
	wantLock(t, "the unlock stood", c.lock(0, 10, smb2.LockFlagUnlock), smb2.StatusRangeNotLocked)
	wantLock(t, "second still held", c.lock(10, 10, smb2.LockFlagUnlock), smb2.StatusSuccess)
	if err := c.CloseFile(c.fid); err != nil {
		t.Fatal(err)
	}
}
