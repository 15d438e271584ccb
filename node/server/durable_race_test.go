package server_test

import (
	"sync"
	"testing"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// TestDurableReconnectBeforeTeardown: a client that cut its connection
// reconnects its durable open on a new one at once; the reconnect may be
// served before the old connection's teardown has detached the open (the
// race smbtorture's durable-open.reopen2 hit under load). It must wait
// for the detach and succeed, not answer OBJECT_NAME_NOT_FOUND.
func TestDurableReconnectBeforeTeardown(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	lost := make(chan struct{})
	release := make(chan struct{})
	waiting := make(chan struct{})
	var once, released sync.Once
	free := func() { released.Do(func() { close(release) }) }
	t.Cleanup(free) // before the server's shutdown, which the held teardown would block
	srv.SetOrderHooks(t, server.OrderHooks{
		Lost: func() {
			once.Do(func() { // only the connection the test cuts
				close(lost)
				<-release
			})
		},
		DetachWait: func() { close(waiting) },
	})

	c1 := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName)
	req := servertest.CreateRequest("reopen.dat")
	req.RequestedOplockLevel = smb2.OplockLevelBatch
	req.Contexts = []smb2.CreateContext{{Name: smb2.CreateCtxDurableHandleRequest, Data: (&smb2.DurableRequest{}).Append(nil)}}
	resp, err := c1.CreateWith(req)
	if err != nil {
		t.Fatal(err)
	}
	fid := resp.FileID
	c2 := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName)
	c1.Close()
	<-lost // c1's teardown is held: the open is still attached to it

	rc := smb2.DurableReconnect{FileID: fid}
	done := make(chan error, 1)
	go func() {
		_, err := c2.CreateWith(&smb2.CreateRequest{Name: "reopen.dat", Contexts: []smb2.CreateContext{{Name: smb2.CreateCtxDurableHandleReconnect, Data: rc.Append(nil)}}})
		done <- err
	}()
	select {
	case <-waiting:
	case err := <-done:
		t.Fatalf("reconnect answered before the old connection was torn down: %v", err)
	}
	free()
	if err := <-done; err != nil {
		t.Fatalf("reconnect after the teardown: %v", err)
	}
	if err := c2.CloseFile(fid); err != nil {
		t.Fatal(err)
	}
}
