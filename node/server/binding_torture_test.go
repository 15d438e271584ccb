package server_test

import (
	"encoding/binary"
	"testing"

	"github.com/smbcluster/smbcluster/node/auth"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/signing"
)

// Tests of the binding and re-authentication rules smbtorture's
// smb2.session suite checks (bind_negative_*, bind2, bind_invalid_auth,
// reauth2-4, ntlmssp_bug14932), with what a client that requires signing
// needs: refusals signed with the key the request was signed with.

const statusRequestOutOfSequence smb2.Status = 0xC000042A

// endpoint is how one connection negotiates.
type endpoint struct {
	dialect uint16
	algs    []uint16 // 3.1.1 signing context; nil: the client's default
	ciphers []uint16 // 3.1.1 encryption context; nil: the client's default
}

func dial(t *testing.T, srv *servertest.Server, guid [16]byte, e endpoint) *servertest.Conn {
	t.Helper()
	c := servertest.Dial(t, srv.Addr)
	c.ClientGUID = guid
	c.SigningAlgs, c.Ciphers = e.algs, e.ciphers
	if err := c.Negotiate(e.dialect); err != nil {
		t.Fatal(err)
	}
	return c
}

// sessionSigner signs with Session.SigningKey in the session's algorithm,
// as smbtorture's client signs binding requests.
func sessionSigner(t *testing.T, s *servertest.Session) signing.Signer {
	t.Helper()
	sg, err := signing.NewSigner(s.SigningAlg, s.Keys.Signing)
	if err != nil {
		t.Fatal(err)
	}
	return sg
}

// sendSigned sends a SESSION_SETUP for session id on c signed with signer
// (nil: unsigned) and returns the response.
func sendSigned(t *testing.T, c *servertest.Conn, id uint64, flags uint8, signer signing.Signer) (smb2.Header, []byte, [16]byte) {
	t.Helper()
	var sig [16]byte
	if signer != nil {
		c.Mangle = func(msg []byte) {
			binary.LittleEndian.PutUint32(msg[16:], binary.LittleEndian.Uint32(msg[16:])|uint32(smb2.FlagSigned))
			sig = signer.Sign(msg)
			copy(msg[48:64], sig[:])
		}
		defer func() { c.Mangle = nil }()
	}
	h := c.Header(smb2.CmdSessionSetup)
	h.SessionID = id
	rh, pdu := c.Send(h, servertest.Body(&smb2.SessionSetupRequest{
		Flags: flags, SecurityMode: 1, SecurityBuffer: auth.NTLMNegotiate(true)}))
	return rh, pdu, sig
}

// TestBindNegative: the status of a binding per session and connection
// (smbtorture bind_negative_*), signed with the session's key.
func TestBindNegative(t *testing.T) {
	cmac, gmac, hmac := []uint16{signing.AESCMAC}, []uint16{signing.AESGMAC}, []uint16{signing.HMACSHA256}
	d311 := smb2.Dialect311
	cases := []struct {
		name         string
		session, bnd endpoint
		want         smb2.Status
	}{
		{"smb202", endpoint{dialect: smb2.Dialect202}, endpoint{dialect: smb2.Dialect202}, smb2.StatusRequestNotAccepted},
		{"smb210", endpoint{dialect: smb2.Dialect210}, endpoint{dialect: smb2.Dialect210}, smb2.StatusRequestNotAccepted},
		{"smb2to3", endpoint{dialect: smb2.Dialect210}, endpoint{d311, cmac, nil}, smb2.StatusInvalidParameter},
		{"smb3to2", endpoint{d311, cmac, nil}, endpoint{dialect: smb2.Dialect210}, smb2.StatusRequestNotAccepted},
		{"smb3to3", endpoint{dialect: smb2.Dialect302}, endpoint{d311, cmac, nil}, smb2.StatusInvalidParameter},
		{"encGtoC", endpoint{d311, nil, []uint16{signing.AES128GCM}}, endpoint{d311, nil, []uint16{signing.AES128CCM}}, smb2.StatusInvalidParameter},
		{"signCtoH", endpoint{d311, cmac, nil}, endpoint{d311, hmac, nil}, smb2.StatusMoreProcessingRequired},
		{"signHtoC", endpoint{d311, hmac, nil}, endpoint{d311, cmac, nil}, smb2.StatusMoreProcessingRequired},
		{"signCtoG", endpoint{d311, cmac, nil}, endpoint{d311, gmac, nil}, smb2.StatusNotSupported},
		{"signHtoG", endpoint{d311, hmac, nil}, endpoint{d311, gmac, nil}, smb2.StatusNotSupported},
		{"signGtoC", endpoint{d311, gmac, nil}, endpoint{d311, cmac, nil}, statusRequestOutOfSequence},
		{"signGtoH", endpoint{d311, gmac, nil}, endpoint{d311, hmac, nil}, statusRequestOutOfSequence},
		{"signC30toG", endpoint{dialect: smb2.Dialect300}, endpoint{d311, gmac, nil}, smb2.StatusNotSupported},
		{"signH2XtoG", endpoint{dialect: smb2.Dialect210}, endpoint{d311, gmac, nil}, smb2.StatusNotSupported},
		{"signGtoC30", endpoint{d311, gmac, nil}, endpoint{dialect: smb2.Dialect300}, statusRequestOutOfSequence},
		{"signGtoH2X", endpoint{d311, gmac, nil}, endpoint{dialect: smb2.Dialect210}, statusRequestOutOfSequence},
	}
	srv := servertest.Start(t, servertest.Options{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c1 := dial(t, srv, [16]byte{1, 2, 3}, tc.session)
			if err := c1.SessionSetup(servertest.Alice, servertest.AlicePassword); err != nil {
				t.Fatal(err)
			}
			c2 := dial(t, srv, c1.ClientGUID, tc.bnd)
			signer := sessionSigner(t, c1.Session)
			h, pdu, sig := sendSigned(t, c2, c1.Session.ID, smb2.SessionFlagBinding, signer)
			if st := smb2.Status(h.Status); st != tc.want {
				t.Fatalf("binding: %v, want %v", st, tc.want)
			}
			checkRefusalSignature(t, h, pdu, sig, signer)
			mustEcho(t, c1) // the session lives on
		})
	}
}

// checkRefusalSignature: statuses a client checks are signed with the
// session's key; the others echo the request's signature.
func checkRefusalSignature(t *testing.T, h smb2.Header, pdu []byte, sig [16]byte, signer signing.Signer) {
	t.Helper()
	if h.Flags&smb2.FlagSigned == 0 {
		t.Fatalf("%v: response not signed", smb2.Status(h.Status))
	}
	switch smb2.Status(h.Status) {
	case smb2.StatusNotSupported, statusRequestOutOfSequence, smb2.StatusAccessDenied, smb2.StatusUserSessionDeleted:
		if !signer.Verify(pdu) && h.Signature != sig {
			t.Fatalf("%v: neither signed nor echoing the request's signature", smb2.Status(h.Status))
		}
	default:
		if !signer.Verify(pdu) {
			t.Fatalf("%v: not signed with the session's key", smb2.Status(h.Status))
		}
	}
}

// TestBindBadSignature: a binding that does not verify is refused and its
// response is not signed with the session's key (no signing oracle).
func TestBindBadSignature(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c1 := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName, smb2.Dialect311)
	c2 := secondChannel(t, srv, c1, smb2.Dialect311)
	wrong, err := signing.NewSigner(c1.Session.SigningAlg, make([]byte, 16))
	if err != nil {
		t.Fatal(err)
	}
	h, pdu, sig := sendSigned(t, c2, c1.Session.ID, smb2.SessionFlagBinding, wrong)
	if st := smb2.Status(h.Status); st != smb2.StatusAccessDenied {
		t.Fatalf("got %v, want STATUS_ACCESS_DENIED", st)
	}
	if sessionSigner(t, c1.Session).Verify(pdu) || h.Signature != sig {
		t.Fatal("refusal of an unverified request is signed with the session's key")
	}
	mustEcho(t, c1)
}

// TestBindAgainOnBoundChannel: once bound, a binding signed with the
// session's key fails to verify against the channel's key (3.1.1 derives
// it from the binding's preauth hash): STATUS_ACCESS_DENIED.
func TestBindAgainOnBoundChannel(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c1 := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName, smb2.Dialect311)
	c2 := secondChannel(t, srv, c1, smb2.Dialect311)
	if err := c2.Bind(c1.Session, servertest.Alice, servertest.AlicePassword); err != nil {
		t.Fatal(err)
	}
	c2.SkipVerify = true
	signer := sessionSigner(t, c1.Session)
	for _, flags := range []uint8{smb2.SessionFlagBinding, 0} {
		h, _, _ := sendSigned(t, c2, c1.Session.ID, flags, signer)
		if st := smb2.Status(h.Status); st != smb2.StatusAccessDenied {
			t.Fatalf("flags %#x: got %v, want STATUS_ACCESS_DENIED", flags, st)
		}
	}
	mustEcho(t, c2)
}

// TestSetupOnUnboundConnection: a SESSION_SETUP without the binding flag
// for a session this connection is no channel of is
// STATUS_USER_SESSION_DELETED, signed with the session's key when the
// request was signed with it (smbtorture bind_negative_*, second step).
func TestSetupOnUnboundConnection(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c1 := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName, smb2.Dialect311)
	c2 := secondChannel(t, srv, c1, smb2.Dialect311)
	signer := sessionSigner(t, c1.Session)
	h, pdu, _ := sendSigned(t, c2, c1.Session.ID, 0, signer)
	if st := smb2.Status(h.Status); st != smb2.StatusUserSessionDeleted {
		t.Fatalf("signed: %v, want STATUS_USER_SESSION_DELETED", st)
	}
	if !signer.Verify(pdu) {
		t.Fatal("signed: response not signed with the session's key")
	}
	h, _, _ = sendSigned(t, c2, c1.Session.ID, 0, nil)
	if st := smb2.Status(h.Status); st != smb2.StatusUserSessionDeleted || h.Flags&smb2.FlagSigned != 0 {
		t.Fatalf("unsigned: %v flags %#x, want unsigned STATUS_USER_SESSION_DELETED", st, h.Flags)
	}
	mustEcho(t, c1)
}

// TestStrayRequestEchoesSignature: a signed request on a connection that
// is no channel of its session gets STATUS_USER_SESSION_DELETED carrying
// the request's SMB2_FLAGS_SIGNED and signature (smbtorture bind2).
func TestStrayRequestEchoesSignature(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c1 := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName, smb2.Dialect311)
	c2 := secondChannel(t, srv, c1, smb2.Dialect311)
	signer := sessionSigner(t, c1.Session)
	var sig [16]byte
	c2.Mangle = func(msg []byte) {
		binary.LittleEndian.PutUint32(msg[16:], binary.LittleEndian.Uint32(msg[16:])|uint32(smb2.FlagSigned))
		sig = signer.Sign(msg)
		copy(msg[48:64], sig[:])
	}
	hdr := c2.Header(smb2.CmdCreate)
	hdr.SessionID, hdr.TreeID = c1.Session.ID, c1.TreeID
	h, _ := c2.Send(hdr, servertest.Body(servertest.CreateRequest("stray")))
	if st := smb2.Status(h.Status); st != smb2.StatusUserSessionDeleted {
		t.Fatalf("got %v, want STATUS_USER_SESSION_DELETED", st)
	}
	if h.Flags&smb2.FlagSigned == 0 || h.Signature != sig {
		t.Fatalf("flags %#x signature %x: want the request's signature echoed", h.Flags, h.Signature)
	}
}

// ntlmAuthenticate builds an NTLMSSP AUTHENTICATE_MESSAGE without Version
// and MIC ([MS-NLMP] 2.2.1.3): user (Unicode) and an NT response.
func ntlmAuthenticate(user string, nt []byte) []byte {
	u := make([]byte, 0, 2*len(user))
	for _, r := range user {
		u = binary.LittleEndian.AppendUint16(u, uint16(r))
	}
	const fixed = 64
	msg := make([]byte, fixed, fixed+len(u)+len(nt))
	copy(msg, "NTLMSSP\x00")
	binary.LittleEndian.PutUint32(msg[8:], 3)
	field := func(off int, p []byte) {
		binary.LittleEndian.PutUint16(msg[off:], uint16(len(p)))
		binary.LittleEndian.PutUint16(msg[off+2:], uint16(len(p)))
		binary.LittleEndian.PutUint32(msg[off+4:], uint32(len(msg)))
		msg = append(msg, p...)
	}
	field(12, nil) // LmChallengeResponse
	field(20, nt)
	field(28, nil) // DomainName
	field(36, u)
	field(44, nil)                                                            // Workstation
	field(52, nil)                                                            // EncryptedRandomSessionKey
	binary.LittleEndian.PutUint32(msg[60:], 0x00000001|0x00000200|0x00000800) // UNICODE|NTLM|ANONYMOUS
	return msg
}

// setup sends one SESSION_SETUP of session id (0: a new one) carrying token.
func setup(t *testing.T, c *servertest.Conn, id uint64, token []byte) (smb2.Header, []byte) {
	t.Helper()
	h := c.Header(smb2.CmdSessionSetup)
	h.SessionID = id
	return c.Send(h, servertest.Body(&smb2.SessionSetupRequest{SecurityMode: 1, SecurityBuffer: token}))
}

// reauth runs a re-authentication of c's session that ends with authMsg.
func reauth(t *testing.T, c *servertest.Conn, authMsg []byte) (smb2.Header, []byte) {
	t.Helper()
	h, _ := setup(t, c, c.Session.ID, auth.NTLMNegotiate(true))
	if st := smb2.Status(h.Status); st != smb2.StatusMoreProcessingRequired || h.Flags&smb2.FlagSigned == 0 {
		t.Fatalf("re-authentication NEGOTIATE: %v flags %#x", st, h.Flags)
	}
	return setup(t, c, c.Session.ID, authMsg)
}

// TestReauthAnonymous: a session re-authenticates as anonymous (smbtorture
// reauth2-4) and keeps its keys, tree and opens.
func TestReauthAnonymous(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	for _, d := range []uint16{smb2.Dialect210, smb2.Dialect311} {
		t.Run(servertest.DialectName(d), func(t *testing.T) {
			c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName, d)
			c.Sign = true
			fid, err := c.Create("reauth-anon")
			if err != nil {
				t.Fatal(err)
			}
			h, _ := reauth(t, c, ntlmAuthenticate("", nil))
			if st := smb2.Status(h.Status); st != smb2.StatusSuccess || h.Flags&smb2.FlagSigned == 0 {
				t.Fatalf("anonymous re-authentication: %v flags %#x, want signed success", st, h.Flags)
			}
			if _, err := c.Write(fid, 0, []byte("still mine")); err != nil {
				t.Fatalf("WRITE after re-authentication: %v", err)
			}
			if err := c.CloseFile(fid); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestReauthFailureEndsSession: a failed re-authentication answers
// STATUS_LOGON_FAILURE signed with the channel's key and ends the session
// ([MS-SMB2] 3.3.5.5.3; smbtorture bind_invalid_auth).
func TestReauthFailureEndsSession(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName, smb2.Dialect311)
	nt := make([]byte, 16+28+4) // wrong NTProofStr, client challenge, MsvAvEOL
	nt[16], nt[17] = 1, 1
	h, _ := reauth(t, c, ntlmAuthenticate(servertest.Alice, nt))
	if st := smb2.Status(h.Status); st != smb2.StatusLogonFailure || h.Flags&smb2.FlagSigned == 0 {
		t.Fatalf("re-authentication with a bad proof: %v flags %#x, want signed STATUS_LOGON_FAILURE", st, h.Flags)
	}
	h, _ = c.Call(smb2.CmdEcho, &smb2.EchoRequest{})
	if h.Status != 0 {
		t.Fatalf("ECHO: %v", smb2.Status(h.Status))
	}
	h, _ = c.Call(smb2.CmdCreate, servertest.CreateRequest("gone"))
	if st := smb2.Status(h.Status); st != smb2.StatusUserSessionDeleted {
		t.Fatalf("CREATE after the failed re-authentication: %v, want STATUS_USER_SESSION_DELETED", st)
	}
}

// TestMalformedNTLMv2 (smbtorture ntlmssp_bug14932): an NTLMv2 response
// whose client challenge has broken AV pairs is STATUS_INVALID_PARAMETER.
func TestMalformedNTLMv2(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c := servertest.Dial(t, srv.Addr)
	if err := c.Negotiate(smb2.Dialect311); err != nil {
		t.Fatal(err)
	}
	h, _ := setup(t, c, 0, auth.NTLMNegotiate(true))
	if st := smb2.Status(h.Status); st != smb2.StatusMoreProcessingRequired {
		t.Fatalf("NEGOTIATE: %v", st)
	}
	nt := make([]byte, 16+28, 95)
	nt[16], nt[17] = 1, 1
	nt = append(nt, 0x11, 0xa2, 0x08, 0x81) // an AV pair far longer than the message
	nt = append(nt, make([]byte, 95-len(nt))...)
	h, _ = setup(t, c, h.SessionID, ntlmAuthenticate(servertest.Alice, nt))
	if st := smb2.Status(h.Status); st != smb2.StatusInvalidParameter {
		t.Fatalf("got %v, want STATUS_INVALID_PARAMETER", st)
	}
}
