package smbc

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/smbcluster/smbcluster/node/auth"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/signing"
	"github.com/smbcluster/smbcluster/node/sockio"
)

// Options say whom to log on to and how.
type Options struct {
	Addr     string // host:port
	Share    string // share name; the tree connected is \\host\Share
	User     string
	Password string
	Domain   string

	// Dialect, if not zero, is the only dialect offered; else 2.0.2 to
	// 3.1.1 are.
	Dialect uint16
	// Sign requires signing (the session is signed anyway when the server
	// requires it).
	Sign bool
	// Encrypt requires encryption (3.x): every request after SESSION_SETUP
	// is encrypted. Without it requests are encrypted when the session or
	// the share asks for it.
	Encrypt bool
	// ClientGUID is the client's ClientGuid; zero means a random one per
	// connection. A client that reconnects durable opens with leases on
	// a new connection keeps its ClientGuid (the leases are its).
	ClientGUID [16]byte
	// Credits is the credit balance the client keeps asking for; it bounds
	// the requests in flight (a 1 MiB READ costs 16). Zero means 512.
	Credits uint16
}

// maxIO bounds one READ or WRITE; larger ones are split.
const maxIO = 8 << 20

// All the dialects Dial offers when Options.Dialect is zero.
var allDialects = []uint16{smb2.Dialect202, smb2.Dialect210, smb2.Dialect300, smb2.Dialect302, smb2.Dialect311}

// Errors of a connection.
var (
	ErrClosed = errors.New("smbc: connection closed")
	// ErrConnectionLost is what every request waiting on a connection
	// gets when its socket fails (the server closed it, a reset): never
	// io.EOF, which File.ReadAt returns for a file's end — a READ cut
	// off with its connection must not read as an empty file.
	ErrConnectionLost = errors.New("smbc: connection lost")
	ErrBadSignature   = errors.New("smbc: response signature does not verify")
	ErrUnsigned       = errors.New("smbc: unsigned response in a signed session")
	ErrUnencrypted    = errors.New("smbc: unencrypted response in an encrypted session")
	ErrProtocol       = errors.New("smbc: malformed response")
)

// StatusError is a response's NTSTATUS other than success.
type StatusError struct {
	Command smb2.Command
	Status  smb2.Status
}

func (e *StatusError) Error() string { return fmt.Sprintf("%v: %v", e.Command, e.Status) }

// Conn is one connection, session and tree. Its methods are safe for
// concurrent use; concurrent requests are pipelined.
type Conn struct {
	nc net.Conn
	br *sockio.Reader // the receiver's
	bw *sockio.Writer // under wmu
	o  Options

	dialect   uint16
	cipherID  uint16
	signAlg   uint16
	maxRead   uint32
	maxWrite  uint32
	largeMTU  bool
	sessionID uint64
	treeID    uint32
	shareCaps uint32         // of the TREE_CONNECT response
	signer    signing.Signer // the channel's: signs this connection's requests
	// sessSigner signs with the session's signing key, which binds
	// further channels ([MS-SMB2] 3.2.4.1.7); the first channel's key is
	// the session's.
	sessSigner signing.Signer
	clientGUID [16]byte
	bound      bool // a channel bound to another Conn's session (Bind)
	enc, dec   cipher.AEAD
	nonces     *signing.NonceSource
	sign       bool // requests are signed, final responses must verify
	encrypt    bool // requests are encrypted, responses must be

	wmu    sync.Mutex // orders message ids on the wire
	nextID uint64
	wbuf   []byte   // sealed messages, under wmu
	parts  [][]byte // signer input, under wmu

	mu       sync.Mutex
	cond     sync.Cond // credits arrived or the connection failed
	avail    uint64    // credits granted and not yet used
	inflight uint64    // credits charged by requests not yet answered
	calls    map[uint64]*call
	err      error // why the connection failed; set once

	recv      receiver // owned by the receiver goroutine
	breaks    chan Break
	recvDone  chan struct{}
	stopAfter func() bool
	ctx       context.Context // Dial's: once it ends, no request goes out (do)

	stats   channelStats // READs and WRITEs through this connection
	pending atomic.Int64 // a MultiFile's requests in flight here
}

// Dial connects, negotiates, logs on and connects the share. Requests made
// on the Conn fail when ctx is done.
func Dial(ctx context.Context, o Options) (*Conn, error) {
	c, err := connect(ctx, o)
	if err != nil {
		return nil, err
	}
	c.clientGUID = o.ClientGUID
	if c.clientGUID == ([16]byte{}) {
		rand.Read(c.clientGUID[:])
	}
	if err := c.logon(); err != nil {
		c.shutdown()
		return nil, err
	}
	return c, nil
}

// connect opens the TCP connection and starts its receiver.
func connect(ctx context.Context, o Options) (*Conn, error) {
	if o.Credits == 0 {
		o.Credits = 512
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", o.Addr)
	if err != nil {
		return nil, err
	}
	c := &Conn{nc: nc, o: o, br: sockio.NewReader(nc, 64<<10), bw: sockio.NewWriter(nc),
		avail: 1, calls: map[uint64]*call{}, recvDone: make(chan struct{}),
		breaks: make(chan Break, breakBacklog)}
	c.cond.L = &c.mu
	c.recv.c = c
	go c.recvLoop()
	c.ctx = ctx
	c.stopAfter = context.AfterFunc(ctx, func() { c.fail(context.Cause(ctx)) })
	return c, nil
}

// logon runs NEGOTIATE, SESSION_SETUP and TREE_CONNECT.
func (c *Conn) logon() error {
	var preauth signing.PreauthHash
	if err := c.negotiate(&preauth); err != nil {
		return fmt.Errorf("negotiate: %w", err)
	}
	if err := c.sessionSetup(preauth); err != nil {
		return fmt.Errorf("session setup: %w", err)
	}
	if err := c.treeConnect(); err != nil {
		return fmt.Errorf("tree connect \\\\%s\\%s: %w", c.host(), c.o.Share, err)
	}
	return nil
}

func (c *Conn) host() string {
	h, _, err := net.SplitHostPort(c.o.Addr)
	if err != nil {
		return c.o.Addr
	}
	return strings.Trim(h, "[]")
}

// Dialect is the dialect negotiated.
func (c *Conn) Dialect() uint16 { return c.dialect }

// Signed reports whether requests are signed and responses verified.
func (c *Conn) Signed() bool { return c.sign }

// Encrypted reports whether requests and responses are encrypted.
func (c *Conn) Encrypted() bool { return c.encrypt }

// negotiate sends NEGOTIATE ([MS-SMB2] 3.2.4.2.2.2) and records what the
// server chose.
func (c *Conn) negotiate(preauth *signing.PreauthHash) error {
	req := smb2.NegotiateRequest{SecurityMode: smb2.NegotiateSigningEnabled,
		Capabilities: smb2.CapLargeMTU | smb2.CapEncryption | smb2.CapPersistentHandles, Dialects: allDialects}
	if c.o.Dialect != 0 {
		req.Dialects = []uint16{c.o.Dialect}
	}
	if c.o.Sign {
		req.SecurityMode |= smb2.NegotiateSigningRequired
	}
	req.ClientGUID = c.clientGUID
	if req.Has311() {
		salt := make([]byte, 32)
		rand.Read(salt)
		req.Contexts = []smb2.NegotiateContext{
			{Type: smb2.PreauthIntegrityCapabilities, Data: (&smb2.PreauthIntegrity{HashAlgorithms: []uint16{smb2.HashSHA512}, Salt: salt}).Append(nil)},
			{Type: smb2.EncryptionCapabilities, Data: (&smb2.EncryptionCaps{Ciphers: []uint16{signing.AES128GCM, signing.AES128CCM, signing.AES256GCM, signing.AES256CCM}}).Append(nil)},
			{Type: smb2.SigningCapabilities, Data: (&smb2.SigningCaps{Algorithms: []uint16{signing.AESGMAC, signing.AESCMAC, signing.HMACSHA256}}).Append(nil)},
		}
	}
	cl := c.newCall(smb2.CmdNegotiate, &req)
	defer cl.release()
	if err := c.do(cl, 0); err != nil {
		return err
	}
	var resp smb2.NegotiateResponse
	if err := resp.Decode(cl.resp); err != nil {
		return fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	c.dialect = resp.DialectRevision
	if !containsDialect(req.Dialects, c.dialect) {
		return fmt.Errorf("%w: server chose dialect %#04x, which was not offered", ErrProtocol, c.dialect)
	}
	c.maxRead, c.maxWrite = min(resp.MaxReadSize, maxIO), min(resp.MaxWriteSize, maxIO)
	c.largeMTU = c.dialect >= smb2.Dialect210 && resp.Capabilities&smb2.CapLargeMTU != 0
	if !c.largeMTU {
		c.maxRead, c.maxWrite = min(c.maxRead, 65536), min(c.maxWrite, 65536)
	}
	c.sign = c.o.Sign || resp.SecurityMode&smb2.NegotiateSigningRequired != 0
	var err error
	if c.signAlg, c.cipherID, err = resp.Negotiated(); err != nil {
		return fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	if c.dialect >= smb2.Dialect311 {
		preauth.Update(cl.msg())
		preauth.Update(cl.resp)
	}
	if c.o.Encrypt && c.cipherID == 0 {
		return fmt.Errorf("encryption required, but dialect %#04x with this server offers no cipher", c.dialect)
	}
	return nil
}

func containsDialect(ds []uint16, d uint16) bool {
	for _, x := range ds {
		if x == d {
			return true
		}
	}
	return false
}

// sessionSetup logs on with NTLMv2 in two SESSION_SETUP round trips and
// derives the session's keys ([MS-SMB2] 3.2.5.3).
func (c *Conn) sessionSetup(preauth signing.PreauthHash) error {
	resp, cl, key, err := c.authenticate(&preauth, nil)
	if err != nil {
		return err
	}
	defer cl.release()
	anonymous := resp.SessionFlags&(smb2.SessionFlagIsGuest|smb2.SessionFlagIsNull) != 0
	if anonymous && (c.sign || c.o.Encrypt) {
		return errors.New("logged on as guest: the session cannot be signed or encrypted")
	}
	sc, err := signing.NewSession(signing.Client, c.dialect, c.cipherID, c.signAlg, key, preauth[:])
	if err != nil {
		return err
	}
	c.signer, c.sessSigner = sc.Signer, sc.Signer
	if cl.rh.Flags&smb2.FlagSigned != 0 {
		if !c.signer.Verify(cl.resp) {
			return fmt.Errorf("%w: final SESSION_SETUP", ErrBadSignature)
		}
	} else if c.dialect >= smb2.Dialect300 && !anonymous {
		return fmt.Errorf("%w: final SESSION_SETUP", ErrUnsigned)
	}
	c.enc, c.dec, c.nonces = sc.Encrypter, sc.Decrypter, sc.Nonces
	c.setEncrypt(c.o.Encrypt || resp.SessionFlags&smb2.SessionFlagEncryptData != 0)
	return nil
}

// authenticate runs the two SESSION_SETUP round trips of an NTLMv2 logon
// and returns the final response (decoded, and its call, which the caller
// releases) and the authentication's session key; preauth takes in the
// messages the 3.1.1 key derivation covers. With bind set the exchange
// binds this connection to the session c.sessionID names: its requests
// carry SMB2_SESSION_FLAG_BINDING and are signed with bind, the session's
// signing key, which also verifies the interim response ([MS-SMB2]
// 3.2.4.1.7, 3.2.5.3.3).
func (c *Conn) authenticate(preauth *signing.PreauthHash, bind signing.Signer) (*smb2.SessionSetupResponse, *call, []byte, error) {
	step := func(token []byte) (*call, error) {
		req := smb2.SessionSetupRequest{SecurityMode: uint8(smb2.NegotiateSigningEnabled), SecurityBuffer: token}
		if c.o.Sign {
			req.SecurityMode |= uint8(smb2.NegotiateSigningRequired)
		}
		if bind != nil {
			req.Flags = smb2.SessionFlagBinding
		}
		cl := c.newCall(smb2.CmdSessionSetup, &req)
		cl.okMore, cl.signer = true, bind
		err := c.do(cl, 0)
		if c.dialect == smb2.Dialect311 {
			preauth.Update(cl.msg())
		}
		return cl, err
	}
	cl, err := step(auth.SPNEGOInit(auth.NTLMNegotiate(true)))
	if err != nil {
		cl.release()
		return nil, nil, nil, err
	}
	ch, err := c.challenge(cl, bind)
	if err != nil {
		cl.release()
		return nil, nil, nil, err
	}
	if c.dialect == smb2.Dialect311 {
		preauth.Update(cl.resp)
	}
	c.sessionID = cl.rh.SessionID
	cl.release()
	token, key := auth.NTLMAuthenticate(ch, c.o.User, c.o.Domain, auth.NTHash(c.o.Password))
	cl, err = step(auth.SPNEGOResponse(token))
	if err != nil {
		cl.release()
		return nil, nil, nil, err
	}
	var resp smb2.SessionSetupResponse
	if err := resp.Decode(cl.resp); err != nil {
		cl.release()
		return nil, nil, nil, fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	return &resp, cl, key, nil
}

// challenge takes the NTLM challenge out of the first SESSION_SETUP
// response; a signed one is verified with bind when binding.
func (c *Conn) challenge(cl *call, bind signing.Signer) (auth.Challenge, error) {
	var resp smb2.SessionSetupResponse
	if err := resp.Decode(cl.resp); err != nil {
		return auth.Challenge{}, fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	if bind != nil && cl.rh.Flags&smb2.FlagSigned != 0 && !bind.Verify(cl.resp) {
		return auth.Challenge{}, fmt.Errorf("%w: binding SESSION_SETUP", ErrBadSignature)
	}
	tok, err := auth.SPNEGOToken(resp.SecurityBuffer)
	if err != nil {
		return auth.Challenge{}, err
	}
	return auth.ParseChallenge(tok)
}

// setEncrypt turns encryption on; encrypted messages are not signed.
func (c *Conn) setEncrypt(on bool) {
	c.wmu.Lock()
	c.encrypt = c.encrypt || on
	c.wmu.Unlock()
}

// treeConnect connects the share.
func (c *Conn) treeConnect() error {
	cl := c.newCall(smb2.CmdTreeConnect, &smb2.TreeConnectRequest{Path: `\\` + c.host() + `\` + c.o.Share})
	defer cl.release()
	if err := c.do(cl, 0); err != nil {
		return err
	}
	var resp smb2.TreeConnectResponse
	if err := resp.Decode(cl.resp); err != nil {
		return fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	c.treeID, c.shareCaps = cl.rh.TreeID, resp.Capabilities
	if resp.ShareFlags&smb2.ShareFlagEncryptData != 0 {
		if c.enc == nil {
			return errors.New("the share requires encryption, which this session cannot do")
		}
		c.setEncrypt(true)
	}
	return nil
}

// Close disconnects the tree, logs off and closes the connection; on a
// channel bound with Bind it only closes the connection (the session goes
// on over its other channels).
func (c *Conn) Close() error {
	if c.bound {
		c.shutdown()
		return nil
	}
	var errs []error
	for _, cmd := range []smb2.Command{smb2.CmdTreeDisconnect, smb2.CmdLogoff} {
		cl := c.newCall(cmd, emptyRequest{})
		if err := c.do(cl, 0); err != nil {
			errs = append(errs, err)
		}
		cl.release()
		if len(errs) > 0 {
			break
		}
	}
	c.shutdown()
	return errors.Join(errs...)
}

// shutdown closes the socket and waits for the receiver.
func (c *Conn) shutdown() {
	c.fail(ErrClosed)
	<-c.recvDone
	c.stopAfter()
}

// emptyRequest is the 4-byte body of TREE_DISCONNECT, LOGOFF and ECHO.
type emptyRequest struct{}

func (emptyRequest) Size() int { return 4 }
func (emptyRequest) Encode(b []byte) {
	b[0], b[1], b[2], b[3] = 4, 0, 0, 0
}
