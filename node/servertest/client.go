package servertest

import (
	"crypto/rand"
	"fmt"
	"slices"
	"testing"

	"github.com/smbcluster/smbcluster/node/auth"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/signing"
)

// AllDialects are the dialects Negotiate offers when given none.
var AllDialects = []uint16{smb2.Dialect202, smb2.Dialect210, smb2.Dialect300, smb2.Dialect302, smb2.Dialect311}

// statusErr returns nil for STATUS_SUCCESS, else the status as an error.
func statusErr(h smb2.Header) error {
	if st := smb2.Status(h.Status); st != smb2.StatusSuccess {
		return st
	}
	return nil
}

// NegotiateRequest returns the NEGOTIATE request Negotiate would send: the
// Conn's security mode, capabilities and GUID, and for 3.1.1 the preauth,
// encryption and signing contexts ([MS-SMB2] 2.2.3, 3.2.4.2.2.2).
func (c *Conn) NegotiateRequest(dialects ...uint16) *smb2.NegotiateRequest {
	if len(dialects) == 0 {
		dialects = AllDialects
	}
	req := &smb2.NegotiateRequest{SecurityMode: c.SecurityMode, Capabilities: c.Capabilities, ClientGUID: c.ClientGUID, Dialects: dialects}
	if !req.Has311() {
		return req
	}
	salt := make([]byte, 32)
	rand.Read(salt)
	req.Contexts = []smb2.NegotiateContext{{
		Type: smb2.PreauthIntegrityCapabilities,
		Data: (&smb2.PreauthIntegrity{HashAlgorithms: []uint16{smb2.HashSHA512}, Salt: salt}).Append(nil),
	}}
	ciphers := c.Ciphers
	if ciphers == nil {
		ciphers = []uint16{signing.AES128GCM, signing.AES128CCM, signing.AES256GCM, signing.AES256CCM}
	}
	if len(ciphers) > 0 {
		req.Contexts = append(req.Contexts, smb2.NegotiateContext{
			Type: smb2.EncryptionCapabilities, Data: (&smb2.EncryptionCaps{Ciphers: ciphers}).Append(nil)})
	}
	algs := c.SigningAlgs
	if algs == nil {
		algs = []uint16{signing.AESGMAC, signing.AESCMAC}
	}
	if len(algs) > 0 {
		req.Contexts = append(req.Contexts, smb2.NegotiateContext{
			Type: smb2.SigningCapabilities, Data: (&smb2.SigningCaps{Algorithms: algs}).Append(nil)})
	}
	return req
}

// Negotiate sends NEGOTIATE offering dialects (all when none) and records
// the dialect, cipher and signing algorithm chosen and, for 3.1.1, the
// preauth hash ([MS-SMB2] 3.2.5.2).
func (c *Conn) Negotiate(dialects ...uint16) error {
	c.tb.Helper()
	req := c.NegotiateRequest(dialects...)
	c.Dialects = req.Dialects
	sent, err := c.Post(c.Header(smb2.CmdNegotiate), Body(req))
	if err != nil {
		c.tb.Fatalf("servertest: send NEGOTIATE: %v", err)
	}
	hs, pdus, err := c.Recv()
	if err != nil {
		c.tb.Fatalf("servertest: NEGOTIATE response: %v", err)
	}
	if err := statusErr(hs[0]); err != nil {
		return err
	}
	resp := &c.NegResponse
	if err := resp.Decode(pdus[0]); err != nil {
		c.tb.Fatalf("servertest: NEGOTIATE response: %v", err)
	}
	c.Dialect = resp.DialectRevision
	if c.SigningAlg, c.Cipher, err = resp.Negotiated(); err != nil {
		c.tb.Fatalf("servertest: NEGOTIATE response: %v", err)
	}
	if c.Dialect >= smb2.Dialect311 {
		c.preauth.Update(sent)
		c.preauth.Update(pdus[0])
	}
	return nil
}

// SessionSetup authenticates user with NTLMv2 in raw NTLMSSP tokens,
// derives the session's keys as a client does ([MS-SMB2] 3.2.5.3.1) and
// makes the session current. Requests are signed from then on; they are
// encrypted when the server set SMB2_SESSION_FLAG_ENCRYPT_DATA. A failure
// status is returned as an error.
func (c *Conn) SessionSetup(user, password string) error {
	c.tb.Helper()
	s, signer, err := c.authenticate(user, password, nil)
	if err != nil {
		return err
	}
	c.use(s, signer)
	return nil
}

// Bind binds this connection as a new channel of s, established on another
// connection of the same client ([MS-SMB2] 3.2.4.1.7, 3.2.5.3.3). The
// binding requests are signed with the session's signing key.
func (c *Conn) Bind(s *Session, user, password string) error {
	c.tb.Helper()
	_, signer, err := c.authenticate(user, password, s)
	if err != nil {
		return err
	}
	c.use(s, signer)
	return nil
}

// authenticate runs the SESSION_SETUP exchange: a new session, or a binding
// of bind. It returns the session and the channel's signer.
func (c *Conn) authenticate(user, password string, bind *Session) (*Session, signing.Signer, error) {
	c.tb.Helper()
	preauth := c.preauth
	req := &smb2.SessionSetupRequest{SecurityMode: uint8(c.SecurityMode), SecurityBuffer: auth.NTLMNegotiate(true)}
	if bind == nil {
		req.PreviousSessionID = c.PreviousSessionID
	}
	hdr, restore := c.startSetup(req, bind)
	defer restore()
	h, pdu, err := c.setupStep(hdr, req, &preauth)
	if err != nil {
		return nil, nil, err
	}
	var resp smb2.SessionSetupResponse
	if err := resp.Decode(pdu); err != nil {
		c.tb.Fatalf("servertest: SESSION_SETUP response: %v", err)
	}
	ch, err := auth.ParseChallenge(resp.SecurityBuffer)
	if err != nil {
		c.tb.Fatalf("servertest: %v", err)
	}
	if c.Dialect == smb2.Dialect311 {
		preauth.Update(pdu)
	}
	authMsg, key := auth.NTLMAuthenticate(ch, user, "", auth.NTHash(password))
	hdr = c.Header(smb2.CmdSessionSetup)
	hdr.SessionID = h.SessionID
	req.SecurityBuffer = authMsg
	h, pdu, err = c.setupStep(hdr, req, &preauth)
	if err != nil {
		return nil, nil, err
	}
	return c.finishSetup(h, pdu, key, preauth, bind)
}

// SessionSetupToken authenticates with one SESSION_SETUP carrying token,
// a security buffer that completes in one round trip (a Kerberos AP-REQ
// in SPNEGO without mutual authentication), key being the session key
// the mechanism agreed on; the session becomes current, its requests
// signed.
func (c *Conn) SessionSetupToken(token, key []byte) error {
	c.tb.Helper()
	s, signer, err := c.authenticateToken(token, key, nil)
	if err != nil {
		return err
	}
	c.use(s, signer)
	return nil
}

// BindToken is Bind with a one-round-trip token (SessionSetupToken).
func (c *Conn) BindToken(s *Session, token, key []byte) error {
	c.tb.Helper()
	_, signer, err := c.authenticateToken(token, key, s)
	if err != nil {
		return err
	}
	c.use(s, signer)
	return nil
}

// use makes s the connection's current session, its requests signed with
// signer (and sealed when the server encrypts the session).
func (c *Conn) use(s *Session, signer signing.Signer) {
	c.Session, c.signer, c.TreeID = s, signer, 0
	c.sessions[s.ID] = s
	c.signers[s.ID] = signer
	c.Sign = true
	c.Encrypt = s.Flags&smb2.SessionFlagEncryptData != 0
}

// Use makes s, a session this connection set up or bound, and tree the
// ones its requests name, signed with the channel's key of s.
func (c *Conn) Use(s *Session, tree uint32) {
	c.Session, c.signer, c.TreeID = s, c.signers[s.ID], tree
	c.Sign = true
	c.Encrypt = s.Flags&smb2.SessionFlagEncryptData != 0
}

// startSetup makes the first SESSION_SETUP request's header: a new
// session's, unsigned, or a binding of bind, signed with its session key
// ([MS-SMB2] 3.2.4.1.7). restore puts the connection's signing and
// encryption back as they were.
func (c *Conn) startSetup(req *smb2.SessionSetupRequest, bind *Session) (hdr smb2.Header, restore func()) {
	hdr = c.Header(smb2.CmdSessionSetup)
	prevSigner, prevSign, prevEnc := c.signer, c.Sign, c.Encrypt
	c.Encrypt = false
	if bind != nil {
		hdr.SessionID = bind.ID
		req.Flags = smb2.SessionFlagBinding
		c.signer = sessionSigner(bind)
		c.Sign = true
	} else {
		hdr.SessionID = 0
		c.Sign = false
	}
	return hdr, func() {
		c.Sign, c.Encrypt = prevSign, prevEnc
		if bind != nil {
			c.signer = prevSigner
		}
	}
}

// authenticateToken runs a one-round-trip SESSION_SETUP.
func (c *Conn) authenticateToken(token, key []byte, bind *Session) (*Session, signing.Signer, error) {
	c.tb.Helper()
	preauth := c.preauth
	req := &smb2.SessionSetupRequest{SecurityMode: uint8(c.SecurityMode), SecurityBuffer: token}
	hdr, restore := c.startSetup(req, bind)
	defer restore()
	h, pdu, err := c.setupStep(hdr, req, &preauth)
	if err != nil {
		return nil, nil, err
	}
	if smb2.Status(h.Status) != smb2.StatusSuccess {
		return nil, nil, smb2.Status(h.Status)
	}
	return c.finishSetup(h, pdu, key, preauth, bind)
}

// setupStep sends one SESSION_SETUP request, adding it to the preauth hash,
// and returns the response; a status other than success or
// STATUS_MORE_PROCESSING_REQUIRED is returned as an error.
func (c *Conn) setupStep(hdr smb2.Header, req *smb2.SessionSetupRequest, preauth *signing.PreauthHash) (smb2.Header, []byte, error) {
	c.tb.Helper()
	sent, err := c.Post(hdr, Body(req))
	if err != nil {
		c.tb.Fatalf("servertest: send SESSION_SETUP: %v", err)
	}
	if c.Dialect == smb2.Dialect311 {
		preauth.Update(sent)
	}
	hs, pdus, err := c.Recv()
	if err != nil {
		c.tb.Fatalf("servertest: SESSION_SETUP response: %v", err)
	}
	switch st := smb2.Status(hs[0].Status); st {
	case smb2.StatusSuccess, smb2.StatusMoreProcessingRequired:
		return hs[0], pdus[0], nil
	default:
		return hs[0], pdus[0], st
	}
}

// finishSetup derives the keys of a completed authentication and checks
// the signature of the final response.
func (c *Conn) finishSetup(h smb2.Header, pdu, key []byte, preauth signing.PreauthHash, bind *Session) (*Session, signing.Signer, error) {
	if smb2.Status(h.Status) != smb2.StatusSuccess {
		c.tb.Fatalf("servertest: SESSION_SETUP ended with %v", smb2.Status(h.Status))
	}
	var resp smb2.SessionSetupResponse
	if err := resp.Decode(pdu); err != nil {
		c.tb.Fatalf("servertest: SESSION_SETUP response: %v", err)
	}
	sc, err := signing.NewSession(signing.Client, c.Dialect, c.Cipher, c.SigningAlg, key, preauth[:])
	if err != nil {
		c.tb.Fatal(err)
	}
	signer := sc.Signer
	if h.Flags&smb2.FlagSigned != 0 && !signer.Verify(pdu) {
		return nil, nil, fmt.Errorf("%w: final SESSION_SETUP", ErrBadSignature)
	}
	if c.Dialect >= smb2.Dialect300 && h.Flags&smb2.FlagSigned == 0 && resp.SessionFlags&(smb2.SessionFlagIsGuest|smb2.SessionFlagIsNull) == 0 {
		return nil, nil, fmt.Errorf("servertest: final SESSION_SETUP response of %s is not signed", DialectName(c.Dialect))
	}
	if bind != nil {
		return bind, signer, nil
	}
	s := &Session{ID: h.SessionID, Dialect: c.Dialect, Cipher: c.Cipher, SigningAlg: c.SigningAlg, Key: key, Keys: sc.Keys, Flags: resp.SessionFlags,
		enc: sc.Encrypter, dec: sc.Decrypter, nonces: sc.Nonces}
	return s, signer, nil
}

// sessionSigner signs with Session.SigningKey (binding requests).
func sessionSigner(s *Session) signing.Signer {
	sg, err := signing.NewSigner(s.SigningAlg, s.Keys.Signing)
	if err != nil {
		panic(err)
	}
	return sg
}

// DialectName is the dotted name of a dialect.
func DialectName(d uint16) string { return smb2.DialectName(d) }

// Connect dials addr, negotiates dialects (all when none), authenticates
// user and connects to share; any failure fails the test.
func Connect(tb testing.TB, addr, user, password, share string, dialects ...uint16) *Conn {
	tb.Helper()
	c := Dial(tb, addr)
	if err := c.Negotiate(dialects...); err != nil {
		tb.Fatalf("servertest: NEGOTIATE: %v", err)
	}
	if err := c.SessionSetup(user, password); err != nil {
		tb.Fatalf("servertest: SESSION_SETUP %s: %v", user, err)
	}
	if share != "" {
		if _, err := c.TreeConnect(share); err != nil {
			tb.Fatalf("servertest: TREE_CONNECT %s: %v", share, err)
		}
	}
	return c
}

// TreeConnect connects to \\127.0.0.1\share and makes the tree current.
// Requests are encrypted from then on if the share asks for it.
func (c *Conn) TreeConnect(share string) (*smb2.TreeConnectResponse, error) {
	c.tb.Helper()
	h, pdu := c.Call(smb2.CmdTreeConnect, &smb2.TreeConnectRequest{Path: `\\127.0.0.1\` + share})
	if err := statusErr(h); err != nil {
		return nil, err
	}
	var resp smb2.TreeConnectResponse
	if err := resp.Decode(pdu); err != nil {
		c.tb.Fatalf("servertest: TREE_CONNECT response: %v", err)
	}
	c.TreeID = h.TreeID
	if resp.ShareFlags&smb2.ShareFlagEncryptData != 0 && c.Session != nil && c.Session.enc != nil {
		c.Encrypt = true
	}
	return &resp, nil
}

// TreeDisconnect disconnects the current tree.
func (c *Conn) TreeDisconnect() error {
	c.tb.Helper()
	h, _ := c.Call(smb2.CmdTreeDisconnect, &smb2.TreeDisconnectRequest{})
	return statusErr(h)
}

// Logoff ends the current session.
func (c *Conn) Logoff() error {
	c.tb.Helper()
	h, _ := c.Call(smb2.CmdLogoff, &smb2.LogoffRequest{})
	return statusErr(h)
}

// Echo sends ECHO.
func (c *Conn) Echo() error {
	c.tb.Helper()
	h, _ := c.Call(smb2.CmdEcho, &smb2.EchoRequest{})
	return statusErr(h)
}

// CreateRequest is a CREATE of name for reading and writing that opens or
// creates a file; adjust it and pass it to CreateWith.
func CreateRequest(name string) *smb2.CreateRequest {
	return &smb2.CreateRequest{
		ImpersonationLevel: 2,
		DesiredAccess:      smb2.GenericRead | smb2.GenericWrite | smb2.Delete,
		ShareAccess:        smb2.FileShareRead | smb2.FileShareWrite | smb2.FileShareDelete,
		CreateDisposition:  smb2.FileOpenIf,
		Name:               name,
	}
}

// Create opens or creates the file name for reading and writing.
func (c *Conn) Create(name string) (smb2.FileID, error) {
	c.tb.Helper()
	resp, err := c.CreateWith(CreateRequest(name))
	if err != nil {
		return smb2.FileID{}, err
	}
	return resp.FileID, nil
}

// CreateWith sends req and returns the decoded response.
func (c *Conn) CreateWith(req *smb2.CreateRequest) (*smb2.CreateResponse, error) {
	c.tb.Helper()
	h, pdu := c.Call(smb2.CmdCreate, req)
	if err := statusErr(h); err != nil {
		return nil, err
	}
	var resp smb2.CreateResponse
	if err := resp.Decode(pdu); err != nil {
		c.tb.Fatalf("servertest: CREATE response: %v", err)
	}
	return &resp, nil
}

// CloseFile closes an open.
func (c *Conn) CloseFile(fid smb2.FileID) error {
	c.tb.Helper()
	h, _ := c.Call(smb2.CmdClose, &smb2.CloseRequest{FileID: fid})
	return statusErr(h)
}

// Charge is the CreditCharge of a READ or WRITE of n bytes ([MS-SMB2] 3.2.4.1.5).
func (c *Conn) Charge(n int) uint16 {
	if c.Dialect == smb2.Dialect202 {
		return 0
	}
	return uint16(max(1, (n+65535)/65536))
}

// Read reads up to n bytes at off.
func (c *Conn) Read(fid smb2.FileID, off uint64, n int) ([]byte, error) {
	c.tb.Helper()
	hdr := c.Header(smb2.CmdRead)
	hdr.CreditCharge = c.Charge(n)
	h, pdu := c.Send(hdr, Body(&smb2.ReadRequest{Length: uint32(n), Offset: off, FileID: fid}))
	if err := statusErr(h); err != nil {
		return nil, err
	}
	var resp smb2.ReadResponse
	if err := resp.Decode(pdu); err != nil {
		c.tb.Fatalf("servertest: READ response: %v", err)
	}
	return resp.Data, nil
}

// Write writes data at off and returns the count written.
func (c *Conn) Write(fid smb2.FileID, off uint64, data []byte) (int, error) {
	c.tb.Helper()
	hdr := c.Header(smb2.CmdWrite)
	hdr.CreditCharge = c.Charge(len(data))
	h, pdu := c.Send(hdr, Body(&smb2.WriteRequest{Offset: off, FileID: fid, Data: data}))
	if err := statusErr(h); err != nil {
		return 0, err
	}
	var resp smb2.WriteResponse
	if err := resp.Decode(pdu); err != nil {
		c.tb.Fatalf("servertest: WRITE response: %v", err)
	}
	return int(resp.Count), nil
}

// Ioctl sends an FSCTL and returns its output.
func (c *Conn) Ioctl(ctl uint32, fid smb2.FileID, input []byte, maxOut uint32) ([]byte, error) {
	c.tb.Helper()
	req := &smb2.IoctlRequest{CtlCode: ctl, FileID: fid, Input: input, MaxOutputResponse: maxOut, Flags: smb2.IoctlIsFsctl}
	h, pdu := c.Call(smb2.CmdIoctl, req)
	if err := statusErr(h); err != nil {
		return nil, err
	}
	var resp smb2.IoctlResponse
	if err := resp.Decode(pdu); err != nil {
		c.tb.Fatalf("servertest: IOCTL response: %v", err)
	}
	return resp.Output, nil
}

// Offered reports whether Negotiate offered dialect d.
func (c *Conn) Offered(d uint16) bool { return slices.Contains(c.Dialects, d) }
