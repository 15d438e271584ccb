package share_test

import (
	"testing"

	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// leaseCreate is a CREATE of name asking for lease state st under key.
func leaseCreate(name string, key byte, st uint32) *smb2.CreateRequest {
	req := servertest.CreateRequest(name)
	req.RequestedOplockLevel = smb2.OplockLevelLease
	lr := smb2.LeaseRequest{Key: [16]byte{key}, State: st, Version: 2, Epoch: 1}
	req.Contexts = []smb2.CreateContext{{Name: "RqLs", Data: lr.Append(nil)}}
	return req
}

func grantedLease(t *testing.T, resp *smb2.CreateResponse) smb2.LeaseResponse {
	t.Helper()
	data, ok := smb2.FindCreateContext(resp.Contexts, "RqLs")
	if resp.OplockLevel != smb2.OplockLevelLease || !ok {
		t.Fatalf("no lease granted (oplock level %#x)", resp.OplockLevel)
	}
	var lr smb2.LeaseResponse
	if err := lr.Decode(data); err != nil {
		t.Fatal(err)
	}
	return lr
}

// TestLeaseBreakTwoClients: client A holds an RWH lease; client B's open
// of the same file goes async while A is sent a lease break to RH on its
// own connection; A acknowledges, and B's CREATE completes with RH
// ([MS-SMB2] 3.3.4.7, 3.3.5.22.2).
func TestLeaseBreakTwoClients(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	a := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName)
	b := servertest.Connect(t, srv.Addr, servertest.Bob, servertest.BobPassword, servertest.ShareName)
	const rwh = smb2.LeaseRead | smb2.LeaseWrite | smb2.LeaseHandle

	resp, err := a.CreateWith(leaseCreate("leased.dat", 1, rwh))
	if err != nil {
		t.Fatal(err)
	}
	if l := grantedLease(t, resp); l.State != rwh || l.Epoch != 2 || l.Version != 2 {
		t.Fatalf("A's lease: %+v", l)
	}

	hdr := b.Header(smb2.CmdCreate)
	if _, err := b.Post(hdr, servertest.Body(leaseCreate("leased.dat", 2, rwh))); err != nil {
		t.Fatal(err)
	}
	msg, err := a.ReadFrame()
	if err != nil {
		t.Fatalf("waiting for the lease break: %v", err)
	}
	var nh smb2.Header
	var n smb2.LeaseBreakNotification
	if err := nh.Decode(msg); err != nil || nh.Command != smb2.CmdOplockBreak || nh.MessageID != ^uint64(0) {
		t.Fatalf("got %v mid %#x (%v), want a lease break notification", nh.Command, nh.MessageID, err)
	}
	if err := n.Decode(msg); err != nil {
		t.Fatal(err)
	}
	if n.LeaseKey != [16]byte{1} || n.CurrentLeaseState != rwh || n.NewLeaseState != rwh&^smb2.LeaseWrite ||
		n.Flags != smb2.LeaseBreakFlagAckRequired || n.NewEpoch != 3 {
		t.Fatalf("break %+v", n)
	}

	// A wrong state is refused, the right one accepted, a second ack finds no break.
	ack := &smb2.LeaseBreakAck{LeaseKey: n.LeaseKey, LeaseState: rwh}
	if h, _ := a.Call(smb2.CmdOplockBreak, ack); smb2.Status(h.Status) != smb2.StatusRequestNotAccepted {
		t.Fatalf("ack of RWH: %#x", h.Status)
	}
	ack.LeaseState = n.NewLeaseState
	h, pdu := a.Call(smb2.CmdOplockBreak, ack)
	if smb2.Status(h.Status) != smb2.StatusSuccess {
		t.Fatalf("ack: %#x", h.Status)
	}
	var ackResp smb2.LeaseBreakAck
	if err := ackResp.Decode(pdu); err != nil || ackResp.LeaseState != n.NewLeaseState {
		t.Fatalf("ack response %+v (%v)", ackResp, err)
	}

	hs, pdus, err := b.Recv()
	if err != nil || hs[0].MessageID != hdr.MessageID || hs[0].Status != 0 {
		t.Fatalf("B's CREATE: %+v %v", hs, err)
	}
	var bresp smb2.CreateResponse
	if err := bresp.Decode(pdus[0]); err != nil {
		t.Fatal(err)
	}
	if l := grantedLease(t, &bresp); l.State != smb2.LeaseRead|smb2.LeaseHandle {
		t.Fatalf("B's lease: %+v", l)
	}
	if h, _ := a.Call(smb2.CmdOplockBreak, ack); smb2.Status(h.Status) != smb2.StatusUnsuccessful {
		t.Fatalf("ack with no break pending: %#x", h.Status)
	}
}
