package server

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/smbcluster/smbcluster/node/smb2"
)

// PreAuthMessageMax bounds a message (its NetBIOS header excluded) before
// the connection has authenticated: NEGOTIATE and SESSION_SETUP are small
// (an NTLMSSP AUTHENTICATE message is under 2 KiB, a Kerberos AP-REQ
// within Windows' 48,000-byte MaxTokenSize), and a client that has not
// logged on must not make the server hold megabytes for it (ksmbd bounds
// such frames too). With its header it fits the connection's read buffer:
// the frame is read there as it arrives and copied out once whole, so a
// stalled one costs no memory beyond the buffer every connection has.
const PreAuthMessageMax = readBufferSize - 4

// handshake serves the connection's frames until it has authenticated:
// each is at most PreAuthMessageMax bytes, and the whole handshake must be
// done within Config.HandshakeTimeout (without one, each frame within
// IdleTimeout, as in the read loop). It returns with the next frame
// unread, for the read loop.
func (c *conn) handshake() error {
	if c.authed.Load() {
		// Adopted with its sessions, or standing for a connection another
		// node serves (handoff.go): it authenticated there.
		return nil
	}
	whole := c.srv.cfg.HandshakeTimeout
	if whole > 0 {
		c.nc.SetReadDeadline(time.Now().Add(whole))
	}
	for !c.authed.Load() {
		if d := c.srv.cfg.IdleTimeout; whole <= 0 && d > 0 {
			c.nc.SetReadDeadline(time.Now().Add(d))
		}
		// Peeked, not read: once the connection has authenticated, the
		// header is the read loop's.
		nb, err := c.br.Peek(4)
		if err != nil {
			return err
		}
		if c.authed.Load() {
			break
		}
		typ, n := smb2.ParseTransportHeader(nb)
		if typ != 0 {
			return fmt.Errorf("bad NetBIOS session message type %#x", typ)
		}
		if n < 4 || n > PreAuthMessageMax {
			return fmt.Errorf("message of %d bytes before authentication (limit %d)", n, PreAuthMessageMax)
		}
		frame, err := c.br.Peek(4 + n)
		if err != nil {
			return err
		}
		buf := getBuf(n)
		copy(*buf, frame[4:])
		c.br.Discard(4 + n) // buffered: cannot fail
		if err := c.handleMessage(buf); err != nil {
			return err
		}
	}
	return nil
}

// authenticated records that a session was set up or bound on c: the
// frame bound and the handshake's deadline no longer apply (the idle
// timeout's does, from now).
func (c *conn) authenticated() {
	if c.authed.Swap(true) || c.srv.cfg.HandshakeTimeout <= 0 {
		return
	}
	var deadline time.Time
	if d := c.srv.cfg.IdleTimeout; d > 0 {
		deadline = time.Now().Add(d)
	}
	c.nc.SetReadDeadline(deadline)
}

// temporaryAcceptError reports whether Accept failed for a reason that
// passes: out of descriptors (EMFILE, ENFILE) or memory for the socket, a
// connection aborted before it was taken, a timeout. Serve backs off and
// accepts again, as net/http's Server does, instead of giving up.
func temporaryAcceptError(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED, syscall.EINTR} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// admitOpen reserves room for one more open of session ss under the
// server's caps (Config.MaxOpens, MaxOpensPerSession); the caller calls
// unreserveOpen once the open is registered or has failed.
func (s *Server) admitOpen(ss *Session) error {
	maxNode, maxSession := s.cfg.MaxOpens, s.cfg.MaxOpensPerSession
	if maxNode <= 0 && maxSession <= 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if maxNode > 0 && len(s.opens)+s.opening >= maxNode {
		s.log.Warn("open refused: node limit reached", "limit", maxNode, "session", ss.ID)
		return smb2.StatusTooManyOpenedFiles
	}
	ss.mu.Lock()
	n := ss.opening
	for _, t := range ss.trees {
		t.mu.Lock()
		n += len(t.opens)
		t.mu.Unlock()
	}
	if maxSession > 0 && n >= maxSession {
		ss.mu.Unlock()
		s.log.Info("open refused: session limit reached", "limit", maxSession, "session", ss.ID, "user", ss.User)
		return smb2.StatusTooManyOpenedFiles
	}
	ss.opening++
	ss.mu.Unlock()
	s.opening++
	return nil
}

// unreserveOpen gives back the room admitOpen reserved.
func (s *Server) unreserveOpen(ss *Session) {
	if s.cfg.MaxOpens <= 0 && s.cfg.MaxOpensPerSession <= 0 {
		return
	}
	s.mu.Lock()
	s.opening--
	ss.mu.Lock()
	ss.opening--
	ss.mu.Unlock()
	s.mu.Unlock()
}
