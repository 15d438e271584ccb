package share_test

import (
	"testing"

	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
)

const (
	dirRH  = smb2.LeaseRead | smb2.LeaseHandle
	dirRWH = smb2.LeaseRead | smb2.LeaseWrite | smb2.LeaseHandle
)

// dirLeaseCreate is a CREATE of directory name asking for an RWH lease.
func dirLeaseCreate(name string, key byte) *smb2.CreateRequest {
	req := leaseCreate(name, key, dirRWH)
	req.CreateOptions = smb2.FileDirectoryFile
	req.DesiredAccess = smb2.GenericRead
	return req
}

// childCreate is a CREATE of file name asking for an RWH lease, naming
// parent as its parent lease key unless parent is 0.
func childCreate(name string, key, parent byte) *smb2.CreateRequest {
	req := servertest.CreateRequest(name)
	req.RequestedOplockLevel = smb2.OplockLevelLease
	lr := smb2.LeaseRequest{Key: [16]byte{key}, State: dirRWH, Version: 2, Epoch: 1}
	if parent != 0 {
		lr.Flags, lr.ParentKey = smb2.LeaseFlagParentLeaseKeySet, [16]byte{parent}
	}
	req.Contexts = []smb2.CreateContext{{Name: "RqLs", Data: lr.Append(nil)}}
	return req
}

// expectDirBreak posts req and expects, besides its successful response,
// a break of the lease with key from RH to none; it acknowledges the
// break and returns the response PDU.
func expectDirBreak(t *testing.T, c *servertest.Conn, cmd smb2.Command, req interface {
	Size() int
	Encode([]byte)
}, key byte) []byte {
	t.Helper()
	hdr := c.Header(cmd)
	if _, err := c.Post(hdr, servertest.Body(req)); err != nil {
		t.Fatal(err)
	}
	var pdu []byte
	var brk *smb2.LeaseBreakNotification
	for pdu == nil || brk == nil {
		hs, pdus, err := c.Recv()
		if err != nil {
			t.Fatalf("%v: waiting for the response and the break: %v", cmd, err)
		}
		switch {
		case hs[0].Command == smb2.CmdOplockBreak && hs[0].MessageID == ^uint64(0):
			brk = new(smb2.LeaseBreakNotification)
			if err := brk.Decode(pdus[0]); err != nil {
				t.Fatal(err)
			}
		case hs[0].MessageID == hdr.MessageID:
			if smb2.Status(hs[0].Status) != smb2.StatusSuccess {
				t.Fatalf("%v: %v", cmd, smb2.Status(hs[0].Status))
			}
			pdu = pdus[0]
		}
	}
	if brk.LeaseKey != [16]byte{key} || brk.CurrentLeaseState != dirRH || brk.NewLeaseState != 0 ||
		brk.Flags != smb2.LeaseBreakFlagAckRequired {
		t.Fatalf("%v: break %+v, want lease %d RH to none", cmd, brk, key)
	}
	if h, _ := c.Call(smb2.CmdOplockBreak, &smb2.LeaseBreakAck{LeaseKey: brk.LeaseKey}); smb2.Status(h.Status) != smb2.StatusSuccess {
		t.Fatalf("ack: %v", smb2.Status(h.Status))
	}
	return pdu
}

// rearm reopens directory name with lease key, expecting RH again.
func rearm(t *testing.T, c *servertest.Conn, name string, key byte) {
	t.Helper()
	req := dirLeaseCreate(name, key)
	req.CreateDisposition = smb2.FileOpen
	resp, err := c.CreateWith(req)
	if err != nil {
		t.Fatal(err)
	}
	if l := grantedLease(t, resp); l.State != dirRH {
		t.Fatalf("rearmed directory lease %#x, want RH", l.State)
	}
	if err := c.CloseFile(resp.FileID); err != nil {
		t.Fatal(err)
	}
}

// TestDirectoryLease follows smb2.lease.v2_request: a 3.x client gets RH
// on a directory; a child created with the directory's lease as its
// parent lease breaks nothing, one created without does, a WRITE does
// not but the writer's close does; so do a rename out of the directory
// and a delete ([MS-SMB2] 3.3.5.9.11, 3.3.4.7). A send that meets an
// unexpected break fails the test.
func TestDirectoryLease(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	a := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName)
	if a.NegResponse.Capabilities&smb2.CapDirectoryLeasing == 0 {
		t.Fatalf("3.x negotiation without SMB2_GLOBAL_CAP_DIRECTORY_LEASING: %#x", a.NegResponse.Capabilities)
	}
	dir, err := a.CreateWith(dirLeaseCreate("d", 2))
	if err != nil {
		t.Fatal(err)
	}
	if l := grantedLease(t, dir); l.State != dirRH {
		t.Fatalf("directory lease %#x, want RH", l.State)
	}

	own, err := a.CreateWith(childCreate(`d\own.dat`, 3, 2))
	if err != nil {
		t.Fatal(err)
	}
	if l := grantedLease(t, own); l.State != dirRWH || l.Flags&smb2.LeaseFlagParentLeaseKeySet == 0 || l.ParentKey != [16]byte{2} {
		t.Fatalf("child lease %+v", l)
	}

	var other smb2.CreateResponse
	if err := other.Decode(expectDirBreak(t, a, smb2.CmdCreate, childCreate(`d\other.dat`, 4, 0), 2)); err != nil {
		t.Fatal(err)
	}
	rearm(t, a, "d", 2)
	if _, err := a.Write(other.FileID, 0, []byte("data")); err != nil {
		t.Fatal(err)
	}
	expectDirBreak(t, a, smb2.CmdClose, &smb2.CloseRequest{FileID: other.FileID}, 2)

	rearm(t, a, "d", 2)
	if _, err := a.Write(own.FileID, 0, []byte("data")); err != nil {
		t.Fatal(err)
	}
	if err := a.CloseFile(own.FileID); err != nil { // its parent lease key spares d's lease
		t.Fatal(err)
	}

	var moved smb2.CreateResponse
	if err := moved.Decode(expectDirBreak(t, a, smb2.CmdCreate, servertest.CreateRequest(`d\moved.dat`), 2)); err != nil {
		t.Fatal(err)
	}
	rearm(t, a, "d", 2)
	ren := &fscc.RenameInformation{FileName: "moved.dat"}
	expectDirBreak(t, a, smb2.CmdSetInfo, &smb2.SetInfoRequest{
		InfoType: smb2.InfoFile, FileInfoClass: fscc.FileRenameInformation, Buffer: servertest.Body(ren), FileID: moved.FileID}, 2)
	if err := a.CloseFile(moved.FileID); err != nil {
		t.Fatal(err)
	}

	rearm(t, a, "d", 2)
	del := servertest.CreateRequest(`d\own.dat`)
	del.CreateDisposition, del.CreateOptions = smb2.FileOpen, smb2.FileDeleteOnClose
	gone, err := a.CreateWith(del) // opening an entry changes nothing
	if err != nil {
		t.Fatal(err)
	}
	expectDirBreak(t, a, smb2.CmdClose, &smb2.CloseRequest{FileID: gone.FileID}, 2)
	if err := a.CloseFile(dir.FileID); err != nil {
		t.Fatal(err)
	}
}

// TestDirectoryLeaseNeeds3x: a 2.1 connection gets no lease on a directory.
func TestDirectoryLeaseNeeds3x(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	a := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName, smb2.Dialect210)
	if a.NegResponse.Capabilities&smb2.CapDirectoryLeasing != 0 {
		t.Fatalf("2.1 negotiation with SMB2_GLOBAL_CAP_DIRECTORY_LEASING")
	}
	resp, err := a.CreateWith(dirLeaseCreate("d", 2))
	if err != nil {
		t.Fatal(err)
	}
	if resp.OplockLevel != smb2.OplockLevelNone {
		t.Fatalf("2.1 directory open got oplock level %#x", resp.OplockLevel)
	}
	if err := a.CloseFile(resp.FileID); err != nil {
		t.Fatal(err)
	}
}
