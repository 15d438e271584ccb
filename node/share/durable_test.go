package share_test

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// fakeTimers replaces the durable scavenger timer: every detach is
// reported on started, and the test fires the timeout when it wants.
type fakeTimers struct {
	mu      sync.Mutex
	fires   []func()
	started chan time.Duration
}

func newDurableServer(t *testing.T) (*servertest.Server, *fakeTimers) {
	s := servertest.Start(t, servertest.Options{})
	ft := &fakeTimers{started: make(chan time.Duration, 16)}
	s.SetDurableTimer(func(d time.Duration, fire func()) func() bool {
		ft.mu.Lock()
		ft.fires = append(ft.fires, fire)
		ft.mu.Unlock()
		ft.started <- d
		return func() bool { return true }
	})
	return s, ft
}

// waitDetached waits until the server kept a durable open after its
// connection went away, and returns the timeout it gave it.
func (ft *fakeTimers) waitDetached(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-ft.started:
		return d
	case <-time.After(servertest.DefaultTimeout):
		t.Fatal("the durable open was not detached")
		return 0
	}
}

// fireAll runs every scavenger timer started so far, as if the timeouts
// had passed.
func (ft *fakeTimers) fireAll() {
	ft.mu.Lock()
	fires := ft.fires
	ft.fires = nil
	ft.mu.Unlock()
	for _, f := range fires {
		f()
	}
}

func batchDurable(name string, v2 bool, createGUID [16]byte) *smb2.CreateRequest {
	req := servertest.CreateRequest(name)
	req.RequestedOplockLevel = smb2.OplockLevelBatch
	req.ShareAccess = 0
	if v2 {
		d := smb2.DurableRequestV2{CreateGUID: createGUID}
		req.Contexts = []smb2.CreateContext{{Name: smb2.CreateCtxDurableHandleRequestV2, Data: d.Append(nil)}}
	} else {
		req.Contexts = []smb2.CreateContext{{Name: smb2.CreateCtxDurableHandleRequest, Data: (&smb2.DurableRequest{}).Append(nil)}}
	}
	return req
}

func reconnectV1(name string, fid smb2.FileID) *smb2.CreateRequest {
	rc := smb2.DurableReconnect{FileID: fid}
	return &smb2.CreateRequest{Name: name, Contexts: []smb2.CreateContext{{Name: smb2.CreateCtxDurableHandleReconnect, Data: rc.Append(nil)}}}
}

func reconnectV2(name string, fid smb2.FileID, createGUID [16]byte) *smb2.CreateRequest {
	rc := smb2.DurableReconnectV2{FileID: fid, CreateGUID: createGUID}
	return &smb2.CreateRequest{Name: name, Contexts: []smb2.CreateContext{{Name: smb2.CreateCtxDurableHandleReconnectV2, Data: rc.Append(nil)}}}
}

func hasContext(resp *smb2.CreateResponse, name string) bool {
	_, ok := smb2.FindCreateContext(resp.Contexts, name)
	return ok
}

func wantStatus(t *testing.T, what string, err error, want smb2.Status) {
	t.Helper()
	var got smb2.Status
	if !errors.As(err, &got) || got != want {
		t.Fatalf("%s: got %v, want %v", what, err, want)
	}
}

func connect(t *testing.T, s *servertest.Server, user, password string) *servertest.Conn {
	return servertest.Connect(t, s.Addr, user, password, servertest.ShareName)
}

// TestDurableReconnectKeepsData is the acceptance test of issue 5: a
// durable handle survives a cut connection and is reconnected on a new
// connection and session, with the same FileId, its batch oplock and its
// data intact ([MS-SMB2] 3.3.5.9.6, 3.3.5.9.7, 3.3.7.1).
func TestDurableReconnectKeepsData(t *testing.T) {
	s, ft := newDurableServer(t)
	c1 := connect(t, s, servertest.Alice, servertest.AlicePassword)
	resp, err := c1.CreateWith(batchDurable("durable.dat", false, [16]byte{}))
	if err != nil {
		t.Fatal(err)
	}
	if resp.OplockLevel != smb2.OplockLevelBatch || !hasContext(resp, smb2.CreateCtxDurableHandleRequest) {
		t.Fatalf("oplock %#x, contexts %v: want a batch oplock and a DHnQ response", resp.OplockLevel, resp.Contexts)
	}
	fid := resp.FileID
	data := []byte("data written before the connection was cut")
	if _, err := c1.Write(fid, 0, data); err != nil {
		t.Fatal(err)
	}
	c1.Close()
	if d := ft.waitDetached(t); d != 60*time.Second {
		t.Errorf("v1 durable timeout %v, want 60s", d)
	}

	c2 := connect(t, s, servertest.Alice, servertest.AlicePassword)
	// The open is not the new session's until it reconnects.
	if _, err := c2.Read(fid, 0, len(data)); err == nil {
		t.Fatal("READ on the preserved open before the reconnect succeeded")
	}
	resp, err = c2.CreateWith(reconnectV1("durable.dat", fid))
	if err != nil {
		t.Fatalf("durable reconnect: %v", err)
	}
	if resp.FileID != fid || resp.CreateAction != smb2.FileOpened || resp.OplockLevel != smb2.OplockLevelBatch {
		t.Fatalf("reconnect: fid %v action %d oplock %#x; want %v, FILE_OPENED, batch", resp.FileID, resp.CreateAction, resp.OplockLevel, fid)
	}
	if resp.EndOfFile != uint64(len(data)) || hasContext(resp, smb2.CreateCtxDurableHandleRequest) {
		t.Fatalf("reconnect: EndOfFile %d, contexts %v", resp.EndOfFile, resp.Contexts)
	}
	got, err := c2.Read(fid, 0, 4096)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %q, %v; want %q", got, err, data)
	}
	// A second reconnect of a connected open fails.
	_, err = c2.CreateWith(reconnectV1("durable.dat", fid))
	wantStatus(t, "reconnect of a connected open", err, smb2.StatusObjectNameNotFound)
	if err := c2.CloseFile(fid); err != nil {
		t.Fatal(err)
	}
	if n := s.DurableStore().Len(); n != 0 {
		t.Fatalf("%d durable records after CLOSE", n)
	}
}

// TestDurableV2Reconnect checks a DH2Q open with a lease: the timeout
// granted, and the reconnect refusals of [MS-SMB2] 3.3.5.9.12 (wrong
// CreateGuid, missing or different lease key, wrong name, another user).
func TestDurableV2Reconnect(t *testing.T) {
	s, ft := newDurableServer(t)
	c1 := connect(t, s, servertest.Alice, servertest.AlicePassword)
	guid := [16]byte{1, 2, 3}
	key := [16]byte{9, 9, 9}
	req := batchDurable("v2.dat", true, guid)
	req.Contexts[0].Data = (&smb2.DurableRequestV2{Timeout: ^uint32(0), CreateGUID: guid}).Append(nil)
	req.RequestedOplockLevel = smb2.OplockLevelLease
	lease := smb2.LeaseRequest{Key: key, State: 7, Version: 2}
	req.Contexts = append(req.Contexts, smb2.CreateContext{Name: "RqLs", Data: lease.Append(nil)})
	resp, err := c1.CreateWith(req)
	if err != nil {
		t.Fatal(err)
	}
	data, ok := smb2.FindCreateContext(resp.Contexts, smb2.CreateCtxDurableHandleRequestV2)
	var dr smb2.DurableResponseV2
	if !ok || dr.Decode(data) != nil || dr.Timeout != 300000 || dr.Flags != 0 {
		t.Fatalf("DH2Q response %v %+v: want timeout 300000 (capped), not persistent", ok, dr)
	}
	fid := resp.FileID
	c1.Close()
	ft.waitDetached(t)

	bob := connect(t, s, servertest.Bob, servertest.BobPassword)
	c2 := servertest.Dial(t, s.Addr)
	c2.ClientGUID = c1.ClientGUID
	if err := c2.Negotiate(); err != nil {
		t.Fatal(err)
	}
	if err := c2.SessionSetup(servertest.Alice, servertest.AlicePassword); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.TreeConnect(servertest.ShareName); err != nil {
		t.Fatal(err)
	}
	withLease := func(r *smb2.CreateRequest, k [16]byte) *smb2.CreateRequest {
		l := smb2.LeaseRequest{Key: k, Version: 2}
		r.Contexts = append(r.Contexts, smb2.CreateContext{Name: "RqLs", Data: l.Append(nil)})
		return r
	}
	_, err = c2.CreateWith(withLease(reconnectV2("v2.dat", fid, [16]byte{7}), key))
	wantStatus(t, "wrong CreateGuid", err, smb2.StatusObjectNameNotFound)
	_, err = c2.CreateWith(reconnectV2("v2.dat", fid, guid))
	wantStatus(t, "no lease", err, smb2.StatusObjectNameNotFound)
	_, err = c2.CreateWith(withLease(reconnectV2("v2.dat", fid, guid), [16]byte{8}))
	wantStatus(t, "other lease key", err, smb2.StatusObjectNameNotFound)
	_, err = c2.CreateWith(withLease(reconnectV2("other.dat", fid, guid), key))
	wantStatus(t, "other name", err, smb2.StatusInvalidParameter)
	_, err = bob.CreateWith(withLease(reconnectV2("v2.dat", fid, guid), key))
	wantStatus(t, "another user", err, smb2.StatusAccessDenied)
	resp, err = c2.CreateWith(withLease(reconnectV2("v2.dat", fid, guid), key))
	if err != nil {
		t.Fatalf("reconnect: %v", err)
	}
	var lr smb2.LeaseResponse
	ld, _ := smb2.FindCreateContext(resp.Contexts, "RqLs")
	if resp.FileID != fid || resp.OplockLevel != smb2.OplockLevelLease || lr.Decode(ld) != nil || lr.Key != key || lr.State != 7 {
		t.Fatalf("reconnect: fid %v oplock %#x lease %+v", resp.FileID, resp.OplockLevel, lr)
	}
	if err := c2.CloseFile(fid); err != nil {
		t.Fatal(err)
	}
}

// TestDurableScavenged checks that a detached open whose timeout passes
// is closed like a CLOSE, delete-on-close included ([MS-SMB2] 3.3.2.2).
func TestDurableScavenged(t *testing.T) {
	s, ft := newDurableServer(t)
	c1 := connect(t, s, servertest.Alice, servertest.AlicePassword)
	req := batchDurable("scavenged.dat", true, [16]byte{5})
	req.CreateOptions = smb2.FileDeleteOnClose
	resp, err := c1.CreateWith(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c1.Write(resp.FileID, 0, []byte("x")); err != nil {
		t.Fatal(err)
	}
	c1.Close()
	if d := ft.waitDetached(t); d != 60*time.Second {
		t.Errorf("default v2 timeout %v, want 60s", d)
	}
	if s.OpenCount() != 1 {
		t.Fatalf("%d opens while detached, want 1", s.OpenCount())
	}
	ft.fireAll()
	if n := s.OpenCount(); n != 0 {
		t.Fatalf("%d opens after the timeout", n)
	}
	if _, err := s.FS.Stat("scavenged.dat"); err == nil {
		t.Fatal("delete-on-close did not delete the scavenged open's file")
	}
	c2 := connect(t, s, servertest.Alice, servertest.AlicePassword)
	_, err = c2.CreateWith(reconnectV2("scavenged.dat", resp.FileID, [16]byte{5}))
	wantStatus(t, "reconnect after the timeout", err, smb2.StatusObjectNameNotFound)
}

// TestDurableBrokenByConflict checks that a CREATE of another client that
// must break a detached open's batch oplock closes that open instead of
// waiting for an acknowledgment nobody can send, as Windows does
// (smbtorture smb2.durable-open.oplock, delete_on_close1).
func TestDurableBrokenByConflict(t *testing.T) {
	s, ft := newDurableServer(t)
	c1 := connect(t, s, servertest.Alice, servertest.AlicePassword)
	req := batchDurable("conflict.dat", false, [16]byte{})
	req.CreateOptions = smb2.FileDeleteOnClose
	resp, err := c1.CreateWith(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c1.Write(resp.FileID, 0, []byte("old")); err != nil {
		t.Fatal(err)
	}
	c1.Close()
	ft.waitDetached(t)

	c2 := connect(t, s, servertest.Bob, servertest.BobPassword)
	req2 := servertest.CreateRequest("conflict.dat")
	req2.RequestedOplockLevel = smb2.OplockLevelBatch
	resp2, err := c2.CreateWith(req2)
	if err != nil {
		t.Fatalf("conflicting CREATE: %v", err)
	}
	if resp2.CreateAction != smb2.FileCreated || resp2.EndOfFile != 0 || resp2.OplockLevel != smb2.OplockLevelBatch {
		t.Fatalf("conflicting CREATE: action %d size %d oplock %#x; want a new empty file with a batch oplock", resp2.CreateAction, resp2.EndOfFile, resp2.OplockLevel)
	}
	c3 := connect(t, s, servertest.Alice, servertest.AlicePassword)
	_, err = c3.CreateWith(reconnectV1("conflict.dat", resp.FileID))
	wantStatus(t, "reconnect of the broken open", err, smb2.StatusObjectNameNotFound)
	if err := c2.CloseFile(resp2.FileID); err != nil {
		t.Fatal(err)
	}
}

// TestDurableGrantAndClosePaths checks when durability is granted
// (batch oplock only) and that TREE_DISCONNECT closes a durable open while
// LOGOFF keeps it, as smb2.durable-open.reopen3 and reopen4 expect.
func TestDurableGrantAndClosePaths(t *testing.T) {
	s, ft := newDurableServer(t)
	c := connect(t, s, servertest.Alice, servertest.AlicePassword)
	req := batchDurable("level2.dat", false, [16]byte{})
	req.RequestedOplockLevel = smb2.OplockLevelII
	resp, err := c.CreateWith(req)
	if err != nil {
		t.Fatal(err)
	}
	if hasContext(resp, smb2.CreateCtxDurableHandleRequest) {
		t.Fatal("durable granted with a level II oplock")
	}
	c.CloseFile(resp.FileID)

	resp, err = c.CreateWith(batchDurable("tdis.dat", false, [16]byte{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.TreeDisconnect(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TreeConnect(servertest.ShareName); err != nil {
		t.Fatal(err)
	}
	_, err = c.CreateWith(reconnectV1("tdis.dat", resp.FileID))
	wantStatus(t, "reconnect after TREE_DISCONNECT", err, smb2.StatusObjectNameNotFound)

	resp, err = c.CreateWith(batchDurable("logoff.dat", false, [16]byte{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Logoff(); err != nil {
		t.Fatal(err)
	}
	ft.waitDetached(t)
	c2 := connect(t, s, servertest.Alice, servertest.AlicePassword)
	resp2, err := c2.CreateWith(reconnectV1("logoff.dat", resp.FileID))
	if err != nil || resp2.FileID != resp.FileID {
		t.Fatalf("reconnect after LOGOFF: %v", err)
	}
	c2.CloseFile(resp.FileID)
}

// TestDurableContextCombinations checks the refused combinations of
// durable contexts ([MS-SMB2] 3.3.5.9.7, 3.3.5.9.10, 3.3.5.9.12;
// smbtorture smb2.durable-v2-open.create-blob) and a replayed DH2Q
// CREATE returning the same open.
func TestDurableContextCombinations(t *testing.T) {
	s, _ := newDurableServer(t)
	c := connect(t, s, servertest.Alice, servertest.AlicePassword)
	guid := [16]byte{4, 4}
	fid := smb2.FileID{Persistent: 1, Volatile: 1}
	ctx := map[string]smb2.CreateContext{
		"DHnQ": {Name: smb2.CreateCtxDurableHandleRequest, Data: (&smb2.DurableRequest{}).Append(nil)},
		"DHnC": {Name: smb2.CreateCtxDurableHandleReconnect, Data: (&smb2.DurableReconnect{FileID: fid}).Append(nil)},
		"DH2Q": {Name: smb2.CreateCtxDurableHandleRequestV2, Data: (&smb2.DurableRequestV2{CreateGUID: guid}).Append(nil)},
		"DH2C": {Name: smb2.CreateCtxDurableHandleReconnectV2, Data: (&smb2.DurableReconnectV2{FileID: fid, CreateGUID: guid}).Append(nil)},
	}
	for _, pair := range [][2]string{{"DH2C", "DHnQ"}, {"DHnC", "DH2Q"}, {"DHnC", "DH2C"}, {"DH2C", "DH2Q"}, {"DHnQ", "DH2Q"}} {
		req := servertest.CreateRequest("combo.dat")
		req.Contexts = []smb2.CreateContext{ctx[pair[0]], ctx[pair[1]]}
		_, err := c.CreateWith(req)
		wantStatus(t, pair[0]+"+"+pair[1], err, smb2.StatusInvalidParameter)
	}

	req := batchDurable("replay.dat", true, guid)
	resp, err := c.CreateWith(req)
	if err != nil {
		t.Fatal(err)
	}
	hdr := c.Header(smb2.CmdCreate)
	hdr.Flags |= smb2.FlagReplayOperation
	h, pdu := c.Send(hdr, servertest.Body(req))
	var again smb2.CreateResponse
	if smb2.Status(h.Status) != smb2.StatusSuccess || again.Decode(pdu) != nil || again.FileID != resp.FileID {
		t.Fatalf("replayed CREATE: status %#x fid %v, want the first open %v", h.Status, again.FileID, resp.FileID)
	}
	if err := c.CloseFile(resp.FileID); err != nil {
		t.Fatal(err)
	}
}
