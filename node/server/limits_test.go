package server_test

import (
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// pipeListener hands out the server ends of net.Pipe connections, so that a
// synctest bubble holds the server, its clients and their deadlines.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// dial returns the client end of a new connection.
func (l *pipeListener) dial() net.Conn {
	c, s := net.Pipe()
	l.conns <- s
	return c
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// TestHandshakeTimeout: a connection that has not authenticated within
// Config.HandshakeTimeout is closed — one that sent nothing and one that
// only negotiated, both at the timeout to the nanosecond of the bubble's
// clock — while one that authenticated stays, idle, well past it.
func TestHandshakeTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 30 * time.Second
		l := newPipeListener()
		servertest.Start(t, servertest.Options{Listener: l, Configure: func(c *server.Config) { c.HandshakeTimeout = timeout }})
		start := time.Now()
		silent := servertest.NewConn(t, l.dial())
		negotiated := servertest.NewConn(t, l.dial())
		if err := negotiated.Negotiate(); err != nil {
			t.Fatal(err)
		}
		authed := servertest.NewConn(t, l.dial())
		if err := authed.Negotiate(); err != nil {
			t.Fatal(err)
		}
		if err := authed.SessionSetup(servertest.Alice, servertest.AlicePassword); err != nil {
			t.Fatal(err)
		}
		for name, c := range map[string]*servertest.Conn{"silent": silent, "negotiated": negotiated} {
			c.Timeout = time.Hour
			if err := c.WaitClosed(); err != nil {
				t.Fatalf("%s connection: %v", name, err)
			}
			if d := time.Since(start); d != timeout {
				t.Errorf("%s connection closed after %v, want %v", name, d, timeout)
			}
		}
		time.Sleep(10 * timeout) // the bubble's clock: idle, authenticated
		if err := authed.Echo(); err != nil {
			t.Fatalf("authenticated connection after %v idle: %v", time.Since(start), err)
		}
	})
}

// TestIdleTimeoutBeforeLogon: without a handshake timeout, the idle
// timeout still closes a connection that never logs on.
func TestIdleTimeoutBeforeLogon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const idle = time.Minute
		l := newPipeListener()
		servertest.Start(t, servertest.Options{Listener: l, Configure: func(c *server.Config) { c.IdleTimeout = idle }})
		start := time.Now()
		c := servertest.NewConn(t, l.dial())
		if err := c.Negotiate(); err != nil {
			t.Fatal(err)
		}
		c.Timeout = time.Hour
		if err := c.WaitClosed(); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != idle {
			t.Errorf("closed after %v, want %v", d, idle)
		}
	})
}

// TestPreAuthFrameBound: before a session is set up, a frame announcing
// more than PreAuthMessageMax bytes closes the connection at once, with no
// buffer taken for it; after, the same connection takes frames of any
// size up to the negotiated maximum.
func TestPreAuthFrameBound(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	for _, n := range []int{server.PreAuthMessageMax + 1, 8 << 20} {
		c := servertest.Dial(t, srv.Addr)
		if err := c.Negotiate(); err != nil {
			t.Fatal(err)
		}
		var nb [4]byte
		smb2.PutTransportHeader(nb[:], n)
		if err := c.SendRaw(nb[:]); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitClosed(); err != nil {
			t.Fatalf("%d-byte frame before SESSION_SETUP: %v", n, err)
		}
	}
	c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName)
	fid, err := c.Create("big")
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if n, err := c.Write(fid, 0, data); err != nil || n != len(data) {
		t.Fatalf("1 MiB WRITE after logon: %d, %v", n, err)
	}
	c.CloseFile(fid)
}

// TestOpenCaps: a CREATE past the per-session cap, or past the node's,
// fails with STATUS_TOO_MANY_OPENED_FILES (Samba's answer past "max open
// files") and creates nothing; a CLOSE makes room again.
func TestOpenCaps(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{Configure: func(c *server.Config) {
		c.MaxOpensPerSession, c.MaxOpens = 3, 5
	}})
	a := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName)
	var fids []smb2.FileID
	for i := range 3 {
		fid, err := a.Create("a" + string(rune('0'+i)))
		if err != nil {
			t.Fatalf("open %d of 3: %v", i+1, err)
		}
		fids = append(fids, fid)
	}
	if _, err := a.Create("a3"); !errors.Is(err, smb2.StatusTooManyOpenedFiles) {
		t.Fatalf("4th open of a session capped at 3: %v, want STATUS_TOO_MANY_OPENED_FILES", err)
	}
	if _, err := srv.FS.Stat("a3"); err == nil {
		t.Error("the refused CREATE made its file")
	}
	a.CloseFile(fids[0])
	var err error
	if fids[0], err = a.Create("a0"); err != nil {
		t.Fatalf("open after a CLOSE: %v", err)
	}
	b := servertest.Connect(t, srv.Addr, servertest.Bob, servertest.BobPassword, servertest.ShareName)
	for i := range 2 {
		fid, err := b.Create("b" + string(rune('0'+i)))
		if err != nil {
			t.Fatalf("bob's open %d (node at %d of 5): %v", i+1, 3+i, err)
		}
		defer b.CloseFile(fid)
	}
	if _, err := b.Create("b2"); !errors.Is(err, smb2.StatusTooManyOpenedFiles) {
		t.Fatalf("6th open of a node capped at 5: %v, want STATUS_TOO_MANY_OPENED_FILES", err)
	}
	for _, fid := range fids {
		a.CloseFile(fid)
	}
}

// emfileListener fails its first accepts as a process out of descriptors does.
type emfileListener struct {
	net.Listener
	fails atomic.Int32
}

func (l *emfileListener) Accept() (net.Conn, error) {
	if l.fails.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// TestServeSurvivesEMFILE: Accept failing with EMFILE makes Serve back off
// and accept again, as net/http does, instead of returning.
func TestServeSurvivesEMFILE(t *testing.T) {
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &emfileListener{Listener: tl}
	l.fails.Store(3)
	srv := servertest.Start(t, servertest.Options{Listener: l})
	c := servertest.Connect(t, tl.Addr().String(), servertest.Alice, servertest.AlicePassword, servertest.ShareName)
	if err := c.Echo(); err != nil {
		t.Fatal(err)
	}
	if !srv.Log.Contains("accept failed; retrying") {
		t.Error("no warning logged for the failed accepts")
	}
}
