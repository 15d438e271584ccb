package share_test

import (
	"testing"

	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// persistentOpen opens name on the connection's tree with a DH2Q asking
// for a persistent handle and no oplock or lease ([MS-SMB2] 3.3.5.9.10:
// persistence needs no handle caching), and reports whether it was
// granted persistent.
func persistentOpen(t *testing.T, c *servertest.Conn, name string) (smb2.FileID, bool) {
	t.Helper()
	req := servertest.CreateRequest(name)
	dq := smb2.DurableRequestV2{Flags: smb2.DurableHandleFlagPersistent, CreateGUID: [16]byte{7, byte(len(name))}}
	req.Contexts = []smb2.CreateContext{{Name: smb2.CreateCtxDurableHandleRequestV2, Data: dq.Append(nil)}}
	resp, err := c.CreateWith(req)
	if err != nil {
		t.Fatal(err)
	}
	data, ok := smb2.FindCreateContext(resp.Contexts, smb2.CreateCtxDurableHandleRequestV2)
	if !ok {
		return resp.FileID, false
	}
	var dr smb2.DurableResponseV2
	if err := dr.Decode(data); err != nil {
		t.Fatal(err)
	}
	return resp.FileID, dr.Flags&smb2.DurableHandleFlagPersistent != 0
}

// TestPersistentHandles: a share with continuous availability says so in
// TREE_CONNECT and grants a DH2Q asking for persistence, and each WRITE
// through the persistent open is synced before it is answered; a share
// without it grants no persistent handle and syncs nothing.
func TestPersistentHandles(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	connect := func(share string) (*servertest.Conn, uint32) {
		c := servertest.Dial(t, s.Addr)
		c.Capabilities |= smb2.CapPersistentHandles
		if err := c.Negotiate(smb2.Dialect311); err != nil {
			t.Fatal(err)
		}
		if err := c.SessionSetup(servertest.Alice, servertest.AlicePassword); err != nil {
			t.Fatal(err)
		}
		tc, err := c.TreeConnect(share)
		if err != nil {
			t.Fatal(err)
		}
		return c, tc.Capabilities
	}
	ca, caps := connect(servertest.CAShareName)
	if caps&smb2.ShareCapContinuousAvailability == 0 {
		t.Errorf("TREE_CONNECT of the CA share: capabilities %#x, want SMB2_SHARE_CAP_CONTINUOUS_AVAILABILITY", caps)
	}
	fid, persistent := persistentOpen(t, ca, "p.bin")
	if !persistent {
		t.Fatal("DH2Q with SMB2_DHANDLE_FLAG_PERSISTENT on the CA share: not granted persistent")
	}
	before := s.Tracker.Syncs()
	for i := range 3 {
		if _, err := ca.Write(fid, uint64(i)*4096, make([]byte, 4096)); err != nil {
			t.Fatal(err)
		}
		if got := s.Tracker.Syncs() - before; got != i+1 {
			t.Fatalf("after %d WRITEs through the persistent open: %d syncs", i+1, got)
		}
	}

	plain, caps := connect(servertest.ShareName)
	if caps&smb2.ShareCapContinuousAvailability != 0 {
		t.Errorf("TREE_CONNECT of a share without continuous availability: capabilities %#x", caps)
	}
	fid, persistent = persistentOpen(t, plain, "q.bin")
	if persistent {
		t.Error("a persistent handle granted on a share without continuous availability")
	}
	before = s.Tracker.Syncs()
	if _, err := plain.Write(fid, 0, make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	if got := s.Tracker.Syncs() - before; got != 0 {
		t.Errorf("a WRITE through an open that is not persistent: %d syncs", got)
	}
}
