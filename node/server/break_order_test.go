package server_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
)

const leaseRH = smb2.LeaseRead | smb2.LeaseHandle

// leaseOpen is a CREATE of name asking for lease state st under key.
func leaseOpen(name string, key byte, st uint32) *smb2.CreateRequest {
	req := servertest.CreateRequest(name)
	req.RequestedOplockLevel = smb2.OplockLevelLease
	lr := smb2.LeaseRequest{Key: [16]byte{key}, State: st, Version: 2, Epoch: 1}
	req.Contexts = []smb2.CreateContext{{Name: "RqLs", Data: lr.Append(nil)}}
	return req
}

// TestRenameBreakBeforeLaterCreate: a CREATE sent right behind a SET_INFO
// whose rename must break another lease's handle caching is answered only
// after that break went out, so the client sees the break first
// (smbtorture smb2.lease.rename_wait). The SET_INFO is held after it
// resolved its open until the CREATE waits for it, or, were the CREATE
// not to wait, until the CREATE's answer arrived.
func TestRenameBreakBeforeLaterCreate(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName)
	h1, err := c.CreateWith(leaseOpen("src.dat", 1, leaseRH))
	if err != nil {
		t.Fatal(err)
	}
	second := leaseOpen("src.dat", 2, leaseRH)
	second.DesiredAccess, second.CreateDisposition = smb2.GenericRead, smb2.FileOpen
	if _, err := c.CreateWith(second); err != nil {
		t.Fatal(err)
	}

	sh := c.Header(smb2.CmdSetInfo)
	ch := sh
	ch.Command, ch.MessageID = smb2.CmdCreate, sh.MessageID+1
	released := make(chan struct{})
	release := sync.OnceFunc(func() { close(released) })
	srv.SetOrderHooks(t, server.OrderHooks{
		OpenResolved: func(mid uint64) {
			if mid == sh.MessageID {
				<-released
			}
		},
		Awaiting: func(mid uint64) {
			if mid == ch.MessageID {
				release()
			}
		},
	})
	defer release()

	ren := &fscc.RenameInformation{FileName: "dst.dat", ReplaceIfExists: true}
	if _, err := c.Post(sh, servertest.Body(&smb2.SetInfoRequest{
		InfoType: smb2.InfoFile, FileInfoClass: fscc.FileRenameInformation, Buffer: servertest.Body(ren), FileID: h1.FileID})); err != nil {
		t.Fatal(err)
	}
	open := leaseOpen("dst.dat", 3, leaseRH)
	open.DesiredAccess, open.CreateDisposition = smb2.GenericRead, smb2.FileOpen
	if _, err := c.Post(ch, servertest.Body(open)); err != nil {
		t.Fatal(err)
	}

	var brk smb2.LeaseBreakNotification
	for gotBreak := false; ; {
		hs, pdus, err := c.Recv()
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case hs[0].Command == smb2.CmdOplockBreak && hs[0].MessageID == ^uint64(0):
			if err := brk.Decode(pdus[0]); err != nil {
				t.Fatal(err)
			}
			gotBreak = true
			continue
		case hs[0].MessageID != ch.MessageID:
			t.Fatalf("unexpected %v mid %d", hs[0].Command, hs[0].MessageID)
		case !gotBreak:
			release()
			t.Fatal("the CREATE was answered before the lease break its SET_INFO sent")
		case smb2.Status(hs[0].Status) != smb2.StatusObjectNameNotFound:
			t.Fatalf("CREATE of the rename's target: %v", smb2.Status(hs[0].Status))
		}
		break
	}
	if brk.LeaseKey != [16]byte{2} || brk.NewLeaseState != smb2.LeaseRead {
		t.Fatalf("break %+v", brk)
	}

	// The acknowledgment lets the rename finish.
	ah := c.Header(smb2.CmdOplockBreak)
	if _, err := c.Post(ah, servertest.Body(&smb2.LeaseBreakAck{LeaseKey: brk.LeaseKey, LeaseState: smb2.LeaseRead})); err != nil {
		t.Fatal(err)
	}
	got := recvAll(t, c, ah.MessageID, sh.MessageID)
	if got[ah.MessageID] != smb2.StatusSuccess || got[sh.MessageID] != smb2.StatusSuccess {
		t.Fatalf("ack %v, rename %v", got[ah.MessageID], got[sh.MessageID])
	}
}

// TestBreakToLostConnectionWaitsForTeardown: a durable open whose client
// disconnected, but whose connection is not torn down yet, holds an RH
// lease and shares nothing. Another client's CREATE needs the handle
// caching broken; the break finds no connection, stays pending, and the
// teardown closes the open instead of keeping it (a break is pending),
// so the CREATE succeeds instead of failing with a sharing violation
// (smbtorture smb2.durable-open.open2-lease, smb2.durable-open.lease).
func TestBreakToLostConnectionWaitsForTeardown(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	a := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName)
	b := servertest.Connect(t, srv.Addr, servertest.Bob, servertest.BobPassword, servertest.ShareName)

	req := leaseOpen("held.dat", 1, leaseRH)
	req.ShareAccess = 0
	req.Contexts = append(req.Contexts, smb2.CreateContext{Name: smb2.CreateCtxDurableHandleRequest, Data: (&smb2.DurableRequest{}).Append(nil)})
	resp, err := a.CreateWith(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := smb2.FindCreateContext(resp.Contexts, smb2.CreateCtxDurableHandleRequest); !ok {
		t.Fatal("the open is not durable")
	}

	lost := make(chan struct{})
	hold := make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	var first atomic.Bool
	srv.SetOrderHooks(t, server.OrderHooks{Lost: func() {
		if first.CompareAndSwap(false, true) {
			close(lost)
			<-hold
		}
	}})
	defer release()
	a.Close()
	<-lost // A's connection is closed; its opens are not yet detached

	bh := b.Header(smb2.CmdCreate)
	open := servertest.CreateRequest("held.dat")
	open.DesiredAccess, open.CreateDisposition = smb2.GenericRead, smb2.FileOpen
	if _, err := b.Post(bh, servertest.Body(open)); err != nil {
		t.Fatal(err)
	}
	msg, err := b.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	var h smb2.Header
	if err := h.Decode(msg); err != nil {
		t.Fatal(err)
	}
	release()
	if st := smb2.Status(h.Status); st != smb2.StatusPending {
		t.Fatalf("CREATE answered %v before the lost connection was torn down, want it to wait", st)
	}
	hs, _, err := b.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if hs[0].MessageID != bh.MessageID || smb2.Status(hs[0].Status) != smb2.StatusSuccess {
		t.Fatalf("CREATE after the teardown: %v mid %d", smb2.Status(hs[0].Status), hs[0].MessageID)
	}
}
