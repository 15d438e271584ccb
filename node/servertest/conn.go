package servertest

import (
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/signing"
)

// DefaultTimeout bounds every read of a Conn unless Conn.Timeout is set.
const DefaultTimeout = 10 * time.Second

// Conn is a raw SMB2 client connection. It is not safe for concurrent use.
type Conn struct {
	tb testing.TB
	nc net.Conn

	// Timeout bounds each read; zero → DefaultTimeout.
	Timeout time.Duration

	// What NEGOTIATE offers; set before calling Negotiate.
	ClientGUID   [16]byte
	SecurityMode uint16   // default SMB2_NEGOTIATE_SIGNING_ENABLED
	Capabilities uint32   // default LARGE_MTU | MULTI_CHANNEL | ENCRYPTION | DIRECTORY_LEASING
	Ciphers      []uint16 // 3.1.1 encryption context; nil → all four, none if empty non-nil
	SigningAlgs  []uint16 // 3.1.1 signing context; nil → GMAC, CMAC

	// What NEGOTIATE chose.
	Dialect     uint16
	Dialects    []uint16 // offered
	NegResponse smb2.NegotiateResponse
	Cipher      uint16 // 0: no encryption
	SigningAlg  uint16
	preauth     signing.PreauthHash // 3.1.1: after NEGOTIATE

	// Message ids: the next one Header hands out, and one past the highest
	// the server granted ([MS-SMB2] 3.2.4.1.3, 3.2.5.1.4).
	NextMessageID uint64
	CreditLimit   uint64
	CreditRequest uint16 // CreditRequest of each Header; default 64

	// The session and tree Header fills in; whether requests are signed
	// (with this channel's key) and encrypted.
	Session *Session
	TreeID  uint32
	Sign    bool
	Encrypt bool
	// PreviousSessionID, when set, is what SessionSetup sends as
	// PreviousSessionId: the session of an earlier connection that the
	// new session replaces ([MS-SMB2] 3.3.5.5.3).
	PreviousSessionID uint64

	// Mangle, when set, sees every message after signing and before
	// encryption and may change it (tests of tampered messages).
	Mangle func(msg []byte)
	// MangleWire, when set, sees every message as it goes on the wire
	// (after encryption, without the NetBIOS header).
	MangleWire func(msg []byte)
	// SkipVerify turns off the verification of response signatures.
	SkipVerify bool
	// LastEncrypted reports whether the last message Recv returned came
	// encrypted.
	LastEncrypted bool

	signer   signing.Signer      // Channel.SigningKey of Session on this connection
	sessions map[uint64]*Session // decryption keys by session id
	signers  map[uint64]signing.Signer
	// LastAsyncID is the AsyncId of the last interim response received.
	LastAsyncID uint64
}

// Session is an authenticated session as the client holds it.
type Session struct {
	ID         uint64
	Dialect    uint16
	Cipher     uint16
	SigningAlg uint16
	Key        []byte // ExportedSessionKey of the first authentication
	Keys       signing.Keys
	Flags      uint16 // SessionFlags of the final SESSION_SETUP response
	enc, dec   cipher.AEAD
	nonces     *signing.NonceSource
}

// Dial connects to addr; the connection is closed when the test ends.
func Dial(tb testing.TB, addr string) *Conn {
	tb.Helper()
	nc, err := net.DialTimeout("tcp", addr, DefaultTimeout)
	if err != nil {
		tb.Fatalf("servertest: dial %s: %v", addr, err)
	}
	return NewConn(tb, nc)
}

// NewConn is a client on nc, closed when the test ends.
func NewConn(tb testing.TB, nc net.Conn) *Conn {
	c := &Conn{
		tb: tb, nc: nc, SecurityMode: smb2.NegotiateSigningEnabled,
		Capabilities: smb2.CapLargeMTU | smb2.CapMultiChannel | smb2.CapEncryption | smb2.CapDirectoryLeasing,
		CreditLimit:  1, CreditRequest: 64, sessions: map[uint64]*Session{},
		signers: map[uint64]signing.Signer{},
	}
	rand.Read(c.ClientGUID[:])
	tb.Cleanup(func() { nc.Close() })
	return c
}

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// NetConn is the underlying connection.
func (c *Conn) NetConn() net.Conn { return c.nc }

// Header returns a request header for cmd with the next message id, the
// current session and tree, CreditCharge 1 and CreditRequest; change any
// field before passing it to Send.
func (c *Conn) Header(cmd smb2.Command) smb2.Header {
	h := smb2.Header{Command: cmd, CreditCharge: 1, Credits: c.CreditRequest, MessageID: c.NextMessageID, TreeID: c.TreeID}
	if c.Session != nil {
		h.SessionID = c.Session.ID
	}
	if c.Dialect == smb2.Dialect202 || cmd == smb2.CmdNegotiate && c.Dialect == 0 {
		h.CreditCharge = 0
	}
	return h
}

// Body encodes a request body (any smb2 request type).
func Body(req interface {
	Size() int
	Encode([]byte)
}) []byte {
	b := make([]byte, req.Size())
	req.Encode(b)
	return b
}

// Send sends one request and returns the response header and the whole
// response PDU (header included, as the smb2 decoders take it). Transport
// errors fail the test.
func (c *Conn) Send(hdr smb2.Header, body []byte) (smb2.Header, []byte) {
	c.tb.Helper()
	if _, err := c.Post(hdr, body); err != nil {
		c.tb.Fatalf("servertest: send %v: %v", hdr.Command, err)
	}
	hs, pdus, err := c.Recv()
	// Responses may come in any order: a late answer to an earlier request
	// (one that went async, or ran longer than this one) is skipped.
	for err == nil && len(hs) == 1 && hs[0].MessageID < hdr.MessageID {
		hs, pdus, err = c.Recv()
	}
	if err != nil {
		c.tb.Fatalf("servertest: %v response: %v", hdr.Command, err)
	}
	if len(hs) != 1 {
		c.tb.Fatalf("servertest: %v: %d responses in one message", hdr.Command, len(hs))
	}
	if hs[0].MessageID != hdr.MessageID || hs[0].Command != hdr.Command {
		c.tb.Fatalf("servertest: sent %v mid %d, got %v mid %d", hdr.Command, hdr.MessageID, hs[0].Command, hs[0].MessageID)
	}
	return hs[0], pdus[0]
}

// Call sends req as cmd with a fresh header and returns the response.
func (c *Conn) Call(cmd smb2.Command, req interface {
	Size() int
	Encode([]byte)
}) (smb2.Header, []byte) {
	c.tb.Helper()
	return c.Send(c.Header(cmd), Body(req))
}

// Post sends one request without waiting for its response and returns the
// PDU as sent (signed; before encryption).
func (c *Conn) Post(hdr smb2.Header, body []byte) ([]byte, error) {
	pdus, err := c.PostCompound([]smb2.Header{hdr}, [][]byte{body})
	if err != nil {
		return nil, err
	}
	return pdus[0], nil
}

// SendCompound sends the requests as one compound message and returns the
// responses. Set FlagRelatedOperations in the headers that want it.
func (c *Conn) SendCompound(hdrs []smb2.Header, bodies [][]byte) ([]smb2.Header, [][]byte) {
	c.tb.Helper()
	if _, err := c.PostCompound(hdrs, bodies); err != nil {
		c.tb.Fatalf("servertest: send compound: %v", err)
	}
	hs, pdus, err := c.Recv()
	if err != nil {
		c.tb.Fatalf("servertest: compound response: %v", err)
	}
	return hs, pdus
}

// PostCompound assembles, signs, encrypts and sends one message of PDUs
// ([MS-SMB2] 3.2.4.1.4: each PDU but the last padded to 8 bytes; each
// signature covers its PDU and padding). It returns the PDUs as sent.
func (c *Conn) PostCompound(hdrs []smb2.Header, bodies [][]byte) ([][]byte, error) {
	var msg []byte
	starts := make([]int, len(hdrs))
	for i := range hdrs {
		h := hdrs[i]
		n := smb2.HeaderSize + len(bodies[i])
		h.NextCommand = 0
		if i < len(hdrs)-1 {
			n = (n + 7) &^ 7
			h.NextCommand = uint32(n)
		}
		starts[i] = len(msg)
		pdu := make([]byte, n)
		sign := c.Sign && !c.Encrypt && c.signer != nil && h.SessionID != 0 && h.Command != smb2.CmdNegotiate
		if sign {
			h.Flags |= smb2.FlagSigned
		}
		h.Encode(pdu)
		copy(pdu[smb2.HeaderSize:], bodies[i])
		if sign {
			sig := c.signer.Sign(pdu)
			copy(pdu[48:64], sig[:])
		}
		msg = append(msg, pdu...)
		c.consumed(h)
	}
	pdus := make([][]byte, len(hdrs))
	for i := range starts {
		end := len(msg)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		pdus[i] = msg[starts[i]:end]
	}
	if c.Mangle != nil {
		c.Mangle(msg)
	}
	if c.Encrypt && c.Session != nil && c.Session.enc != nil {
		msg = signing.Seal(nil, c.Session.enc, c.Session.nonces, c.Session.ID, msg)
	}
	if c.MangleWire != nil {
		c.MangleWire(msg)
	}
	return pdus, c.SendFrame(msg)
}

// consumed advances NextMessageID past a request's message ids.
func (c *Conn) consumed(h smb2.Header) {
	if h.Command == smb2.CmdCancel {
		return
	}
	n := uint64(max(h.CreditCharge, 1))
	if c.Dialect == smb2.Dialect202 {
		n = 1
	}
	c.NextMessageID = max(c.NextMessageID, h.MessageID+n)
}

// SendFrame sends msg with its 4-byte NetBIOS session message header.
func (c *Conn) SendFrame(msg []byte) error {
	b := make([]byte, 4+len(msg))
	smb2.PutTransportHeader(b, len(msg))
	copy(b[4:], msg)
	return c.SendRaw(b)
}

// SendRaw writes b as it is.
func (c *Conn) SendRaw(b []byte) error {
	c.nc.SetWriteDeadline(time.Now().Add(c.timeout()))
	_, err := c.nc.Write(b)
	return err
}

func (c *Conn) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

// ReadFrame reads one NetBIOS message and returns it without its 4-byte header.
func (c *Conn) ReadFrame() ([]byte, error) {
	c.nc.SetReadDeadline(time.Now().Add(c.timeout()))
	var nb [4]byte
	if _, err := io.ReadFull(c.nc, nb[:]); err != nil {
		return nil, err
	}
	typ, n := smb2.ParseTransportHeader(nb[:])
	if typ != 0 || n > 16<<20 {
		return nil, fmt.Errorf("servertest: %d-byte frame of type %#x", n, typ)
	}
	msg := make([]byte, n)
	if _, err := io.ReadFull(c.nc, msg); err != nil {
		return nil, err
	}
	return msg, nil
}

// Recv reads the next response message, decrypts it, splits a compound,
// verifies signatures it can verify, adds the credits granted and skips
// interim (STATUS_PENDING) responses. It returns the headers and PDUs.
func (c *Conn) Recv() ([]smb2.Header, [][]byte, error) {
	for {
		msg, err := c.ReadFrame()
		if err != nil {
			return nil, nil, err
		}
		c.LastEncrypted = len(msg) >= 4 && binary.LittleEndian.Uint32(msg) == smb2.TransformProtocolID
		if msg, err = c.open(msg); err != nil {
			return nil, nil, err
		}
		pdus, err := smb2.SplitCompound(msg)
		if err != nil {
			return nil, nil, fmt.Errorf("servertest: response: %w", err)
		}
		hdrs := make([]smb2.Header, len(pdus))
		for i, p := range pdus {
			if err := hdrs[i].Decode(p); err != nil {
				return nil, nil, err
			}
			c.CreditLimit += uint64(hdrs[i].Credits)
			if err := c.verify(&hdrs[i], p); err != nil {
				return nil, nil, err
			}
		}
		if len(hdrs) == 1 && hdrs[0].IsAsync() && smb2.Status(hdrs[0].Status) == smb2.StatusPending {
			c.LastAsyncID = hdrs[0].AsyncID
			continue
		}
		return hdrs, pdus, nil
	}
}

// open decrypts a transform message; other messages are returned as they are.
func (c *Conn) open(msg []byte) ([]byte, error) {
	if len(msg) < 4 || binary.LittleEndian.Uint32(msg) != smb2.TransformProtocolID {
		return msg, nil
	}
	sid, err := signing.ParseTransformHeader(msg)
	if err != nil {
		return nil, err
	}
	s := c.sessions[sid]
	if s == nil || s.dec == nil {
		return nil, fmt.Errorf("servertest: encrypted response for unknown session %#x", sid)
	}
	return signing.Open(nil, s.dec, msg)
}

// ErrBadSignature reports a response whose signature does not verify.
var ErrBadSignature = errors.New("servertest: response signature does not verify")

// verify checks the signature of a signed response of the current session.
func (c *Conn) verify(h *smb2.Header, pdu []byte) error {
	if c.SkipVerify || h.Flags&smb2.FlagSigned == 0 || c.signer == nil || c.Session == nil || h.SessionID != c.Session.ID {
		return nil
	}
	if smb2.Status(h.Status) == smb2.StatusUserSessionDeleted {
		return nil // the server has no key left to sign with; it echoes the request's signature
	}
	if !c.signer.Verify(pdu) {
		return fmt.Errorf("%w: %v mid %d", ErrBadSignature, h.Command, h.MessageID)
	}
	return nil
}

// ExpectClosed waits for the server to close the connection. It fails the
// test if a response arrives instead or nothing happens before the timeout.
func (c *Conn) ExpectClosed() {
	c.tb.Helper()
	if err := c.WaitClosed(); err != nil {
		c.tb.Fatal(err)
	}
}

// WaitClosed reads until the server closes the connection; it returns an
// error if a message arrives first or the read times out.
func (c *Conn) WaitClosed() error {
	msg, err := c.ReadFrame()
	switch {
	case err == nil:
		hdr := ""
		var h smb2.Header
		if m, oerr := c.open(msg); oerr == nil && h.Decode(m) == nil {
			hdr = fmt.Sprintf(": %v %v", h.Command, smb2.Status(h.Status))
		}
		return fmt.Errorf("servertest: expected the connection to close, got a %d-byte message%s", len(msg), hdr)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed), isReset(err):
		return nil
	}
	return fmt.Errorf("servertest: expected the connection to close: %w", err)
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

// UseSigningKey makes the connection sign with key (and the negotiated
// algorithm) instead of its channel's signing key.
func (c *Conn) UseSigningKey(key []byte) error {
	s, err := signing.NewSigner(c.SigningAlg, key)
	if err != nil {
		return err
	}
	c.signer = s
	return nil
}
