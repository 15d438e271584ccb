package server

import (
	"context"
	"fmt"
	"net"
	"runtime/debug"
	"time"

	"github.com/smbcluster/smbcluster/node/sockio"
)

// A connection the engine gives up.
//
// A connection handed to the home node of the session it binds to
// (handoff.go) is no longer the engine's to serve: the read loop ends, and
// the connection, with what the engine had read of it and the means to
// write to its client, goes to the Carrier that SessionPeers.Handoff
// returned, which carries its bytes between the client and the home node
// until either ends (node/handoff). This is net/http's Hijacker the other
// way round: there a handler takes the connection from the server; here
// the server hands it over on its own accord, and goes on owning only its
// end: when Carry returns, the engine closes the connection, waits for the
// goroutines started through Go and unbinds it from its sessions (none
// left here).

// Carrier carries a connection the engine gave up (Hijacked).
type Carrier interface {
	// Carry carries h's bytes between its client and the session's home
	// node until either ends; it runs on the connection's own goroutine.
	// It sends h.First before anything else the client sent.
	Carry(h *Hijacked) error
}

// Hijacked is a client connection the engine gave up to a Carrier.
type Hijacked struct {
	// Conn is the client's connection; closing it ends Reader's reads
	// and Writer's writes.
	Conn net.Conn
	// Remote names the client, as the server logs it.
	Remote string
	// First is the frame the engine read and did not serve (the binding
	// request), with its NetBIOS header.
	First []byte
	// Reader reads what the client sends next: first what the engine had
	// read ahead, then from Conn.
	Reader *sockio.Reader
	// Writer writes frames to the client.
	Writer *ClientWriter

	c *conn
}

// Context is cancelled when the connection closes (Close).
func (h *Hijacked) Context() context.Context { return h.c.ctx }

// Close closes the connection and cancels its Context.
func (h *Hijacked) Close() { h.c.close() }

// Go runs f on a goroutine of its own that the connection's end waits for
// (Wait).
func (h *Hijacked) Go(f func()) {
	h.c.wg.Add(1)
	go func() {
		defer h.c.wg.Done()
		f()
	}()
}

// Wait waits for the goroutines Go started.
func (h *Hijacked) Wait() { h.c.wg.Wait() }

// Fenced reports whether the node is fenced: nothing read from the client
// from then on goes anywhere, nothing is written to a file (cluster.go).
func (h *Hijacked) Fenced() bool { return !h.c.srv.cfg.Control.Valid() }

// IOMin is Config.HandoffIOMin: the smallest READ or WRITE whose bytes
// move here rather than through the home node.
func (h *Hijacked) IOMin() int { return h.c.srv.cfg.HandoffIOMin }

// Share returns this node's share of the given name.
func (h *Hijacked) Share(name string) (*Share, bool) { return h.c.srv.cfg.Shares.Lookup(name) }

// Moved counts a READ sent to the client (write false) or a WRITE written
// here (write true) of n bytes: Server.RemoteReads, Server.RemoteWrites
// and the node's metrics.
func (h *Hijacked) Moved(write bool, n int) {
	if write {
		h.c.srv.remoteWrites.Add(1)
	} else {
		h.c.srv.remoteReads.Add(1)
	}
	h.c.srv.cfg.Metrics.HandoffMoved(write, n)
}

// ClientWriter writes a hijacked connection's frames to its client, each
// whole: the caller holds its lock around every frame it writes, in one
// call or several.
type ClientWriter struct{ c *conn }

// Lock takes the connection's write lock.
func (w *ClientWriter) Lock() { w.c.wmu.Lock() }

// Unlock releases the lock Lock took.
func (w *ClientWriter) Unlock() { w.c.wmu.Unlock() }

// Write writes p; the caller holds the lock.
func (w *ClientWriter) Write(p []byte) error { return w.c.bw.Write(p) }

// Writev writes bufs as one write; the caller holds the lock.
func (w *ClientWriter) Writev(bufs [][]byte) error { return w.c.bw.Writev(bufs) }

// CanSendfile reports whether Sendfile can write to the connection (a
// TCP connection).
func (w *ClientWriter) CanSendfile() bool { return w.c.raw != nil }

// Sendfile writes head, then n bytes of the file fd at off with
// sendfile(2), zero-copy; the caller holds the lock, and fd open until
// it returns.
func (w *ClientWriter) Sendfile(head []byte, fd uintptr, off int64, n int) error {
	return w.c.sendHeaderAndFile(head, fileSegment{fd, off, n}, false)
}

// fileSegment is a READ's bytes in a file, for sendHeaderAndFile.
type fileSegment struct {
	fd  uintptr
	off int64
	n   int
}

func (s fileSegment) Size() int                               { return 0 }
func (s fileSegment) Encode([]byte)                           {}
func (s fileSegment) Segment() (fd uintptr, off int64, n int) { return s.fd, s.off, s.n }
func (s fileSegment) Release()                                {}

// hijack gives the connection up: nothing is sent on it from here any
// more (its client's breaks go out at the home node), and the home node
// keeps the handshake's deadline. first is the frame the engine read and
// did not serve.
func (c *conn) hijack(first []byte) *Hijacked {
	c.handedOff.Store(true)
	c.wmu.Lock() // a frame being written ends before the carrier writes
	c.out = c.out[:0]
	c.wmu.Unlock()
	c.br.SetBeforeRead(nil) // the engine's batched responses are over: nothing to flush before a read
	c.nc.SetReadDeadline(time.Time{})
	return &Hijacked{Conn: c.nc, Remote: c.remote, First: first, Reader: c.br, Writer: &ClientWriter{c}, c: c}
}

// carry hands the connection to cr, whose Carry ends with it; a panic
// there ends only this connection.
func (c *conn) carry(cr Carrier, first []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			c.srv.log.Error("panic relaying a connection", "remote", c.remote, "panic", p, "stack", string(debug.Stack()))
			c.close()
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return cr.Carry(c.hijack(first))
}
