package server

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/signing"
	"github.com/smbcluster/smbcluster/node/sockio"
)

// readBufferSize is the connection's read buffer: enough for a window of
// small pipelined requests per read(2).
const readBufferSize = 64 << 10

// maxMessageSize bounds one NetBIOS frame: the largest WRITE we advertise
// plus room for headers, compounds and the transform header.
const maxMessageSize = 8<<20 + 64<<10

// errDropConnection wraps errors after which the connection cannot continue.
type dropError struct{ err error }

func (e dropError) Error() string { return "drop connection: " + e.err.Error() }
func (e dropError) Unwrap() error { return e.err }

// conn is one client connection ([MS-SMB2] 3.3.1.7).
type conn struct {
	// Immutable.
	srv    *Server
	nc     net.Conn
	remote string
	local  string
	via    string // the node the client is connected to, for a handed-over connection (handoff.go)
	born   time.Time
	ctx    context.Context
	cancel context.CancelFunc
	raw    syscall.RawConn // nil unless TCP: the zero-copy path needs it
	rio    rawIO           // sendfile's raw calls when raw is set (rawio.go)

	// Owned by the read loop. Pipelined requests arrive in one read(2);
	// a WRITE's payload of 16 KiB or more is read straight into its own
	// buffer, with only the next requests' headers read ahead
	// (node/sockio).
	br *sockio.Reader
	// Scratch of dispatch for a message served in the read loop.
	loopPDUs [1][]byte
	loopHdrs [1]smb2.Header

	// Set by NEGOTIATE, which completes before any other request is
	// accepted; read-only afterwards.
	negotiated     bool
	dialect        uint16
	clientGUID     [16]byte
	clientCaps     uint32
	clientSecMode  uint16
	clientDialects []uint16
	serverSecMode  uint16
	serverCaps     uint32
	cipher         uint16
	signingAlg     uint16
	signingChosen  bool                // 3.1.1 signing context negotiated signingAlg
	preauth        signing.PreauthHash // after NEGOTIATE, 3.1.1 only
	smb1Seen       bool

	credits *creditWindow
	// relayed: the connection stands for one another node serves, which
	// keeps its credit window and names each response's grant (relayed.go).
	relayed *relayGrants

	// wmu serializes whole frames onto the socket; whoever holds it writes.
	wmu sync.Mutex
	// out holds responses of inline requests not yet written, under wmu:
	// while more requests wait in br, the read loop collects its responses
	// and writes them with one syscall before it next reads from the
	// socket (br's before-read hook) or before any other frame.
	out []byte
	// bw writes frames, under wmu; iovBase keeps the array that iov, the
	// parts of the frame being written, walks through.
	bw           *sockio.Writer
	iov, iovBase net.Buffers

	mu        sync.Mutex
	pending   map[uint64]*pendingReq // by message id
	async     map[uint64]*pendingReq // by async id
	nextAsync uint64
	arrivals  uint64 // requests handed to goroutines (order.go)
	closing   bool
	wg        sync.WaitGroup // request goroutines
	// relays: the sessions of other nodes the connection is a channel
	// of, by id (relayed.go); hasRelays once there is one.
	relays    map[uint64]*sessionRelay
	hasRelays atomic.Bool
	relaying  sync.WaitGroup // their goroutines writing to the client

	// unresponsive: the client declared it will not acknowledge what is
	// sent here (FSCTL_SMBTORTURE_FORCE_UNACKED_TIMEOUT, ioctl_torture.go).
	unresponsive atomic.Bool
	// draining: Server.Shutdown began; no new request is read. Set before
	// drain cancels the async requests under mu, so that GoAsync, which
	// looks at it under mu, cancels any request drain did not see.
	draining atomic.Bool

	// handedOff: the connection's bytes belong to another node now
	// (hijack.go); nothing is sent on it from here.
	handedOff atomic.Bool

	// authed: a SESSION_SETUP completed or bound a channel here. Until
	// then frames are bounded by PreAuthMessageMax and the connection
	// lives at most Config.HandshakeTimeout (limits.go).
	authed atomic.Bool
}

// pendingReq is a request being served, cancellable by SMB2 CANCEL.
type pendingReq struct {
	cancel  context.CancelFunc
	asyncID uint64
	// Arrival order (order.go); under conn.mu.
	seq       uint64        // 0 for a request served in the read loop
	cmd       smb2.Command  // a SET_INFO settles late
	settled   bool          // holds its open, went async or finished
	settledCh chan struct{} // closed when settled, made by a waiting CLOSE
	cancelled bool          // a CANCEL came before the request started
}

// frame is one NetBIOS message to send: its parts are written with one writev.
type frame struct {
	parts  net.Buffers
	inline bool // made by the read loop (result.inline)
	// w holds what the frame refers to until it is sent, then is
	// released; w.file, if set, is sent with sendfile after parts.
	w *written
}

func newConn(s *Server, nc net.Conn) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &conn{
		srv:     s,
		nc:      nc,
		remote:  nc.RemoteAddr().String(),
		local:   nc.LocalAddr().String(),
		ctx:     ctx,
		cancel:  cancel,
		raw:     rawConnOf(nc),
		born:    time.Now(),
		br:      nil, // below: it flushes c.out before each read(2)
		credits: newCreditWindow(s.cfg.MaxCredits),
		pending: map[uint64]*pendingReq{},
		async:   map[uint64]*pendingReq{},
	}
	if c.raw != nil {
		c.initRawIO()
	}
	c.br = sockio.NewReader(nc, readBufferSize)
	c.br.SetBeforeRead(c.flush)
	c.bw = sockio.NewWriter(nc)
	return c
}

// close tears the connection down; safe to call more than once.
func (c *conn) close() {
	c.mu.Lock()
	already := c.closing
	c.closing = true
	c.mu.Unlock()
	if !already {
		c.cancel()
		c.nc.Close()
		c.closeRelays()
	}
}

// errDraining ends the read loop of a connection the server shuts down.
var errDraining = errors.New("server shutting down")

// closeLinger bounds how long a connection ended by Shutdown waits for its
// client to close after the server's FIN (finish).
const closeLinger = time.Second

// drain stops the connection taking requests (Server.Shutdown): its read
// loop stops before the next message (the past read deadline wakes it if
// it waits for one, and a message cut short by it was never answered),
// and the requests that went async to wait are cancelled, so that they
// answer now instead of holding the shutdown. serve then finishes the
// connection.
func (c *conn) drain() {
	c.draining.Store(true)
	c.mu.Lock()
	for _, p := range c.async {
		p.cancel()
	}
	c.mu.Unlock()
	// The read loop sets its idle deadline before it looks at draining,
	// so this deadline is either the last one set or seen as draining.
	c.nc.SetReadDeadline(time.Now())
}

// finish ends a drained connection gracefully: the requests being served
// finish and are answered, the responses the read loop held back are
// written, and the server sends its FIN, then reads and drops what the
// client still sends until it closes too (or closeLinger passes), so that
// closing with unread data does not reset the connection, which discards
// responses not yet delivered.
func (c *conn) finish() {
	c.wg.Wait()
	c.flush()
	if c.ctx.Err() != nil {
		return // closed meanwhile (Server.Close)
	}
	if cw, ok := c.nc.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
		c.nc.SetReadDeadline(time.Now().Add(closeLinger))
		io.Copy(io.Discard, c.nc)
	}
}

func (c *conn) serve() {
	log := c.srv.log.With("remote", c.remote)
	log.Debug("connection accepted")
	err := c.readLoop()
	if h, ok := err.(errHandedOff); ok {
		err = c.carry(h.carrier, h.first)
	} else if c.draining.Load() {
		c.finish()
		err = nil
	}
	c.close()
	c.wg.Wait()       // request goroutines finish (their contexts are cancelled)
	c.relaying.Wait() // and the session relays (closed by close)
	c.srv.beforeTeardown()
	c.teardown()
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		log.Info("connection closed", "err", err)
	} else {
		log.Debug("connection closed")
	}
}

// teardown unbinds the connection from its sessions; a session whose last
// channel goes away ends, closing its trees and opens but for the durable
// ones, which wait for their client (durable.go).
func (c *conn) teardown() {
	c.srv.mu.Lock()
	var sessions []*Session
	for _, s := range c.srv.sessions {
		sessions = append(sessions, s)
	}
	c.srv.mu.Unlock()
	for _, s := range sessions {
		s.mu.Lock()
		_, bound := s.channels[c]
		delete(s.channels, c)
		last := bound && len(s.channels) == 0
		s.mu.Unlock()
		if last {
			c.srv.endSession(s, true)
		}
	}
}

func (c *conn) readLoop() (err error) {
	defer func() {
		if p := recover(); p != nil {
			c.srv.log.Error("panic serving connection", "remote", c.remote, "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	if err := c.handshake(); err != nil {
		return err
	}
	var nb [4]byte
	for {
		if d := c.srv.cfg.IdleTimeout; d > 0 {
			c.nc.SetReadDeadline(time.Now().Add(d))
		}
		if c.draining.Load() { // after the deadline is set: see drain
			return errDraining
		}
		if err := c.br.ReadFull(nb[:]); err != nil {
			return err
		}
		typ, n := smb2.ParseTransportHeader(nb[:])
		if typ != 0 {
			return fmt.Errorf("bad NetBIOS session message type %#x", typ)
		}
		if n < 4 || n > maxMessageSize {
			return fmt.Errorf("bad message length %d", n)
		}
		c.br.SetBulk(n >= sockio.BulkMin)
		if c.spliceable(n) && !c.hasRelays.Load() {
			if head, err := c.br.Peek(spliceHeadSize); err == nil && spliceableWrite(head, n) {
				ok, err := c.readSplicedWrite(n)
				if err != nil {
					return err
				}
				if ok {
					continue
				}
			}
		}
		buf := getBuf(n)
		if err := c.br.ReadFull(*buf); err != nil {
			putBuf(buf)
			return err
		}
		if err := c.handleMessage(buf); err != nil {
			return err
		}
	}
}

// handleMessage takes ownership of buf.
func (c *conn) handleMessage(buf *[]byte) error {
	msg := *buf
	if sr := c.relayedSession(msg); sr != nil {
		defer putBuf(buf)
		return c.forwardRelayed(sr, msg)
	}
	switch binary.LittleEndian.Uint32(msg) {
	case smb2.SMB1ProtocolID:
		defer putBuf(buf)
		return c.serveSMB1(msg)
	case smb2.TransformProtocolID:
		if len(msg) > inlineWriteMax {
			// A large sealed message (a WRITE) is opened off the read
			// loop, so that decryption of one connection's writes runs on
			// every core.
			c.wg.Add(1)
			go func() {
				defer c.wg.Done()
				if err := c.openAndDispatch(buf, false); err != nil {
					c.srv.log.Info("dropping connection", "remote", c.remote, "err", err)
					c.close()
				}
			}()
			return nil
		}
		return c.openAndDispatch(buf, true)
	case smb2.ProtocolID:
		return c.dispatch(buf, nil, true, nil)
	default:
		putBuf(buf)
		return errors.New("unknown protocol id")
	}
}

// openAndDispatch decrypts a transform message and dispatches its PDUs.
func (c *conn) openAndDispatch(buf *[]byte, loop bool) error {
	plain, s, err := c.decrypt(*buf)
	putBuf(buf)
	if err != nil {
		return err
	}
	return c.dispatch(plain, s, loop, nil)
}

// dispatch splits msg into its PDUs and serves them: a lone PDU in its own
// goroutine, a compound's PDUs in order in one goroutine. encSession is the
// session whose key decrypted msg, nil for a plaintext message. loop is
// true in the read loop, which splits into its own scratch slices. sp is
// the payload of a spliced WRITE (splice.go), whose buf holds its head.
func (c *conn) dispatch(buf *[]byte, encSession *Session, loop bool, sp *Spliced) error {
	pdus, hdrs, err := c.admit(*buf, encSession, loop)
	if err != nil {
		putBuf(buf)
		if err == errRelayed {
			return nil
		}
		return err
	}
	if len(pdus) == 1 && hdrs[0].Command == smb2.CmdCancel {
		defer putBuf(buf)
		c.serveCancel(&hdrs[0])
		return nil
	}
	if sp != nil && sp.whole {
		// A spliced WRITE whose payload is all in its pipe runs here too
		// (splice.go).
		defer putBuf(buf)
		defer sp.finish()
		return c.serveCompound(pdus, hdrs, encSession, true, sp)
	}
	if loop && c.servedByReader(pdus, hdrs, sp) {
		err := c.serveCompound(pdus, hdrs, encSession, true, nil)
		if err != errOffload {
			putBuf(buf)
			return err
		}
		// Its data was not in memory: it waits for the disk on its own
		// goroutine instead of stalling the requests behind it.
		c.srv.offloaded.Add(1)
	}
	c.arrive(hdrs) // order.go: before the next frame, so CANCEL and CLOSE see it
	if loop {
		// The goroutine outlives the read loop's scratch.
		pdus = append([][]byte(nil), pdus...)
		hdrs = append([]smb2.Header(nil), hdrs...)
	}
	c.serveInGoroutine(buf, pdus, hdrs, encSession, sp)
	return nil
}

// admit splits msg into its PDUs, passes a binding to the node of its
// session (handoff.go: errRelayed when msg went there) and decodes and
// charges the PDUs' headers. Every error but errRelayed ends the
// connection.
func (c *conn) admit(msg []byte, encSession *Session, loop bool) ([][]byte, []smb2.Header, error) {
	pdus, err := c.splitMessage(msg, loop)
	if err != nil {
		return nil, nil, err
	}
	if loop && encSession == nil && len(pdus) == 1 && c.srv.cfg.SessionPeers != nil {
		var h smb2.Header
		if h.Decode(pdus[0]) == nil {
			if err := c.maybeHandoff(pdus[0], &h); err != nil {
				return nil, nil, err
			}
		}
	}
	hdrs, err := c.chargeHeaders(pdus, loop)
	return pdus, hdrs, err
}

// splitMessage splits msg into its PDUs; a fenced node answers nothing.
func (c *conn) splitMessage(msg []byte, loop bool) ([][]byte, error) {
	var pdus [][]byte
	var err error
	if loop {
		pdus, err = smb2.AppendCompound(c.loopPDUs[:0], msg)
	} else {
		pdus, err = smb2.SplitCompound(msg)
	}
	if err != nil || len(pdus) == 0 {
		return nil, dropError{fmt.Errorf("bad message: %v", err)}
	}
	if !c.srv.cfg.Control.Valid() { // cluster.go: fenced, answer nothing
		return nil, dropError{errFenced}
	}
	return pdus, nil
}

// chargeHeaders decodes the headers of pdus and charges their credits.
// Credit accounting happens here, in arrival order, so a request's
// message id is checked before the next frame is read.
func (c *conn) chargeHeaders(pdus [][]byte, loop bool) ([]smb2.Header, error) {
	var hdrs []smb2.Header
	if loop && len(pdus) <= len(c.loopHdrs) {
		hdrs = c.loopHdrs[:len(pdus)]
	} else {
		hdrs = make([]smb2.Header, len(pdus))
	}
	for i, p := range pdus {
		if err := hdrs[i].Decode(p); err != nil {
			return nil, dropError{err}
		}
		if hdrs[i].Command == smb2.CmdCancel {
			continue
		}
		if !c.negotiated && hdrs[i].Command != smb2.CmdNegotiate {
			return nil, dropError{errors.New("request before NEGOTIATE")}
		}
		if c.relayed != nil {
			continue // counted by the node relaying it
		}
		if err := c.charge(&hdrs[i]); err != nil {
			return nil, dropError{err}
		}
	}
	return hdrs, nil
}

// servedByReader reports whether the read loop serves the message itself.
// NEGOTIATE changes connection state everything else reads, and READs and
// small WRITEs never wait on anything but the disk: serving them in the
// reader saves a goroutine and a wake-up each.
//
// Off the read loop (a large sealed message opened on its own goroutine)
// nothing is served as the reader's: its responses must not wait in
// conn.out, which only the reader may batch (batchable reads the reader's
// buffer).
func (c *conn) servedByReader(pdus [][]byte, hdrs []smb2.Header, sp *Spliced) bool {
	return hdrs[0].Command == smb2.CmdNegotiate || sp == nil && len(pdus) == 1 && c.inline(&hdrs[0], pdus[0])
}

// serveInGoroutine serves a message on a goroutine of its own, which
// returns buf and ends the spliced WRITE sp.
func (c *conn) serveInGoroutine(buf *[]byte, pdus [][]byte, hdrs []smb2.Header, encSession *Session, sp *Spliced) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer putBuf(buf)
		if sp != nil {
			defer sp.finish()
		}
		defer func() {
			if p := recover(); p != nil {
				c.srv.log.Error("panic serving request", "remote", c.remote, "panic", p, "stack", string(debug.Stack()))
				c.close()
			}
		}()
		if err := c.serveCompound(pdus, hdrs, encSession, false, sp); err != nil {
			c.srv.log.Info("dropping connection", "remote", c.remote, "err", err)
			c.close()
		}
	}()
}

// inlineWriteMax is the largest WRITE (header included) served by the
// reader itself; larger ones go to their own goroutine so that one
// connection's writes use every core, unless they are spliced whole
// (splice.go). Measured here (smbctl bench A/B, iodepth 16, 3 runs): 4 KiB
// WRITEs went from 56k to 68k IOPS inline; inline against a hand-off,
// 64 KiB WRITEs +7..16 % at one connection and +3..10 % at four with
// 7..30 % less server CPU per GiB, 64 KiB mixed +12..15 %, 128 KiB even.
// The seeds saw the unbound queue win from 64 KiB on a larger machine; on
// this one the hand-off costs more than a second core gains below the
// splice threshold, hence the bound of a 256 KiB payload.
const inlineWriteMax = 256<<10 + spliceHeadSize

// spliceable reports whether a message of n bytes may be a spliced WRITE
// (splice.go): large enough, on a TCP connection past NEGOTIATE.
func (c *conn) spliceable(n int) bool {
	t := c.srv.cfg.SpliceWriteThreshold
	return t > 0 && n-spliceHeadSize >= t && c.raw != nil && c.negotiated
}

// inline reports whether a lone request is served in the read loop: every
// READ (sendfile, one copy, or one copy signed or sealed in place) and WRITEs
// small enough that their payload costs less than a goroutine hand-off.
// Signed and sealed READs of any size stay in the reader: one connection's
// responses are then made one after the other with their buffer still in
// the core's cache, which measured better than spreading them over the
// cores (A/B, 1 MiB sealed READs, iodepth 16: +6..19 % throughput at one
// connection and +5..9 % at four, with 10..17 % less server CPU per GiB;
// signed: equal throughput, 8 % less CPU). A READ whose data is not
// cached still leaves the reader (Request.MayWait).
func (c *conn) inline(h *smb2.Header, pdu []byte) bool {
	switch h.Command {
	case smb2.CmdRead:
		return true
	case smb2.CmdWrite:
		return len(pdu) <= inlineWriteMax
	}
	return false
}

// Batching of inline responses: a response of at most batchFrameMax
// bytes made by the read loop while another request already waits in its
// buffer is appended to conn.out instead of written; out is written when
// the read loop would block, when it passes batchMax, and before any other
// frame. Pipelined small READs and WRITEs thus cost one write(2) per
// window instead of one per request (A/B, one connection, 4 KiB: +7..24 %
// IOPS, -13..22 % server CPU per GiB). The two bounds were chosen, not
// swept: a frame past 16 KiB is dearer to copy than its syscall, and
// 128 KiB keeps a window's answers from waiting long.
const (
	batchFrameMax = 16 << 10
	batchMax      = 128 << 10
)

// send writes a frame: the goroutine that made the response writes it,
// under wmu, so no hand-off to a writer goroutine is paid per response. A
// failed or partial write poisons the stream and closes the connection. It
// reports whether the frame went out (or was queued in conn.out); the
// frame's buffers are released either way.
func (c *conn) send(f frame) bool {
	c.wmu.Lock()
	ok := c.ctx.Err() == nil && !c.handedOff.Load()
	if ok {
		var err error
		switch {
		case f.w.file != nil:
			hdr := f.parts[0]
			if len(c.out) > 0 {
				c.out = append(c.out, hdr...)
				hdr, c.out = c.out, c.out[:0]
			}
			// Made by the read loop: its pages are cached.
			err = c.sendHeaderAndFile(hdr, f.w.file, f.inline)
		case f.inline && c.batchable(f.parts):
			for _, p := range f.parts {
				c.out = append(c.out, p...)
			}
		default:
			// The parts' array lives in the conn: no allocation per frame.
			bufs := c.iovBase[:0]
			if len(c.out) > 0 {
				bufs = append(bufs, c.out)
			}
			bufs = append(bufs, f.parts...)
			c.iovBase, c.iov = bufs[:0], bufs // Writev consumes c.iov
			err = c.bw.Writev(c.iov)
			clear(bufs)
			c.out = c.out[:0]
		}
		if err != nil {
			ok = false
			c.out = c.out[:0]
			c.close()
		}
	}
	c.wmu.Unlock()
	f.w.release()
	return ok
}

// batchable reports whether an inline frame may wait in conn.out: it is
// small, out has room, and another request is already buffered. Only the
// read loop calls it (br is its own).
func (c *conn) batchable(parts net.Buffers) bool {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	return n <= batchFrameMax && len(c.out)+n <= batchMax && c.br.Buffered() > 0
}

// flush writes the responses held in conn.out.
func (c *conn) flush() {
	c.wmu.Lock()
	if len(c.out) > 0 && c.ctx.Err() == nil {
		if err := c.bw.Write(c.out); err != nil {
			c.close()
		}
	}
	c.out = c.out[:0]
	c.wmu.Unlock()
}
