package server_test

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// TestEndConnections: a fenced server (AdmitNothing) refuses every
// SESSION_SETUP, and EndConnections closes every connection: sessions
// and opens end.
func TestEndConnections(t *testing.T) {
	ctl := &server.Control{}
	srv := servertest.Start(t, servertest.Options{Control: ctl})
	c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName, smb2.Dialect311)
	if _, err := c.Create("f"); err != nil {
		t.Fatal(err)
	}
	idle := servertest.Dial(t, srv.Addr)
	if err := idle.Negotiate(smb2.Dialect311); err != nil {
		t.Fatal(err)
	}
	ctl.SetAdmission(server.AdmitNothing)
	if err := idle.SessionSetup(servertest.Alice, servertest.AlicePassword); !errors.Is(err, smb2.StatusRequestNotAccepted) {
		t.Errorf("SESSION_SETUP on a fenced server: %v, want STATUS_REQUEST_NOT_ACCEPTED", err)
	}
	if n := srv.EndConnections(); n != 2 {
		t.Errorf("EndConnections ended %d connections, want 2", n)
	}
	for _, conn := range []*servertest.Conn{c, idle} {
		if err := conn.WaitClosed(); err != nil {
			t.Error(err)
		}
	}
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for len(srv.Sessions()) > 0 || srv.OpenCount() > 0 {
		select {
		case <-deadline:
			t.Fatalf("%d sessions and %d opens left after EndConnections", len(srv.Sessions()), srv.OpenCount())
		case <-tick.C:
		}
	}
}

// TestControlAccept: a connection Control.Accept returned just before
// the admission fell, which Serve has not registered yet, is closed by
// EndConnections; while the server admits nothing, Accept closes new
// connections and waits for one it may return.
func TestControlAccept(t *testing.T) {
	ctl := &server.Control{}
	srv := server.New(server.Config{Control: ctl})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		return c
	}
	closed := func(c net.Conn) bool {
		_, err := c.Read(make([]byte, 1))
		return errors.Is(err, io.EOF)
	}

	early := dial()
	if _, err := ctl.Accept(l); err != nil {
		t.Fatal(err)
	}
	ctl.SetAdmission(server.AdmitNothing)
	srv.EndConnections()
	if !closed(early) {
		t.Error("a connection accepted before the fence, not yet served, survived EndConnections")
	}

	accepted := make(chan net.Conn, 1)
	go func() {
		nc, err := ctl.Accept(l)
		if err != nil {
			close(accepted)
			return
		}
		accepted <- nc
	}()
	refused := dial()
	if !closed(refused) {
		t.Error("a connection to a fenced server was not closed")
	}
	ctl.SetAdmission(server.AdmitAll)
	admitted := dial()
	nc, ok := <-accepted
	if !ok {
		t.Fatal("Accept failed")
	}
	defer nc.Close()
	if nc.RemoteAddr().String() != admitted.LocalAddr().String() {
		t.Errorf("Accept returned %v, want the connection made after admission resumed (%v)", nc.RemoteAddr(), admitted.LocalAddr())
	}
}

// TestNetNameOffline: while the cluster's network name is offline a
// TREE_CONNECT to a disk share fails with STATUS_NETWORK_NAME_DELETED
// and a tree already connected goes on; back online, the share connects
// again. (IPC$ while offline: integration's TestClusapiNetName.)
func TestNetNameOffline(t *testing.T) {
	ctl := &server.Control{}
	srv := servertest.Start(t, servertest.Options{Control: ctl})
	c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName, smb2.Dialect311)
	ctl.SetNetNameOffline(true)
	if _, err := c.TreeConnect(servertest.ShareName); !errors.Is(err, smb2.StatusNetworkNameDeleted) {
		t.Fatalf("TREE_CONNECT while offline: %v, want STATUS_NETWORK_NAME_DELETED", err)
	}
	if _, err := c.Create("f"); err != nil {
		t.Fatalf("CREATE on the tree connected before: %v", err)
	}
	ctl.SetNetNameOffline(false)
	if _, err := c.TreeConnect(servertest.ShareName); err != nil {
		t.Fatalf("TREE_CONNECT back online: %v", err)
	}
}
