package dcerpc

import (
	"encoding/binary"
	"errors"
)

// Authentication levels ([MS-RPCE] 2.2.1.1.8).
const (
	AuthLevelNone      = 1 // RPC_C_AUTHN_LEVEL_NONE
	AuthLevelConnect   = 2 // RPC_C_AUTHN_LEVEL_CONNECT
	AuthLevelCall      = 3 // RPC_C_AUTHN_LEVEL_CALL (treated as packet)
	AuthLevelPacket    = 4 // RPC_C_AUTHN_LEVEL_PKT
	AuthLevelIntegrity = 5 // RPC_C_AUTHN_LEVEL_PKT_INTEGRITY
	AuthLevelPrivacy   = 6 // RPC_C_AUTHN_LEVEL_PKT_PRIVACY
)

// Security providers, auth_type ([MS-RPCE] 2.2.1.1.7).
const (
	AuthTypeSPNEGO   = 9  // RPC_C_AUTHN_GSS_NEGOTIATE
	AuthTypeNTLMSSP  = 10 // RPC_C_AUTHN_WINNT
	AuthTypeKerberos = 16 // RPC_C_AUTHN_GSS_KERBEROS
)

// SecTrailerSize is the size of the sec_trailer that precedes auth_value
// ([MS-RPCE] 2.2.2.11).
const SecTrailerSize = authVerifierTrailerSize

// authPadAlign is the alignment of the stub plus auth padding that this
// server sends, as Windows and Samba do for signed and sealed PDUs.
const authPadAlign = 16

// ErrAuth reports an authentication or verification failure.
var ErrAuth = errors.New("dcerpc: authentication failed")

// SecTrailer is the sec_trailer of an authenticated PDU ([MS-RPCE] 2.2.2.11).
type SecTrailer struct {
	Type      uint8
	Level     uint8
	PadLength uint8
	ContextID uint32
}

// Authenticator is one security context of an association: the exchange
// of tokens that authenticates the client, then the per-message protection
// it set up.
type Authenticator interface {
	// Step consumes a client token and returns the token to send back (nil
	// for none); done reports the exchange complete.
	Step(in []byte) (out []byte, done bool, err error)
	// SignatureSize is the size of the auth_value of a signed or sealed PDU.
	SignatureSize() int
	// Sign returns the signature of an outgoing PDU (msg: header through
	// sec_trailer).
	Sign(msg []byte) []byte
	// Verify checks an incoming PDU's signature.
	Verify(msg, sig []byte) error
	// Seal encrypts data (a sub-slice of msg) in place and returns the
	// signature of msg as it was in plain text.
	Seal(data, msg []byte) []byte
	// Unseal decrypts data in place and verifies sig over msg.
	Unseal(data, msg, sig []byte) error
}

// Identifier is an Authenticator that names the user it authenticated,
// which calls find with User.
type Identifier interface {
	User() string
}

// Security configures authentication for a Conn.
type Security struct {
	// New starts a security context for auth_type, or returns nil for an
	// unsupported provider.
	New func(authType uint8) Authenticator
}

// authState is the association's security context.
type authState struct {
	ctx       Authenticator
	typ       uint8
	level     uint8
	contextID uint32
	done      bool
	failed    bool
}

// splitAuth returns the sec_trailer and auth_value of an authenticated PDU
// and where the sec_trailer starts.
func splitAuth(pdu []byte, h *Header) (SecTrailer, []byte, int, error) {
	var t SecTrailer
	if h.AuthLength == 0 {
		return t, nil, 0, ErrFormat
	}
	start := int(h.FragLength) - int(h.AuthLength) - SecTrailerSize
	if start < HeaderSize {
		return t, nil, 0, ErrFormat
	}
	b := pdu[start:h.FragLength]
	t.Type, t.Level, t.PadLength = b[0], b[1], b[2]
	t.ContextID = binary.LittleEndian.Uint32(b[4:])
	return t, b[SecTrailerSize:], start, nil
}

func (t *SecTrailer) encode(b []byte) {
	b[0], b[1], b[2], b[3] = t.Type, t.Level, t.PadLength, 0
	binary.LittleEndian.PutUint32(b[4:], t.ContextID)
}

// appendAuth appends a 4-aligned sec_trailer and token to a bind_ack or
// alter_context_resp and fixes its lengths.
func appendAuth(pdu []byte, t SecTrailer, token []byte) []byte {
	pad := (4 - len(pdu)%4) % 4
	pdu = append(pdu, make([]byte, pad+SecTrailerSize)...)
	t.PadLength = uint8(pad)
	t.encode(pdu[len(pdu)-SecTrailerSize:])
	pdu = append(pdu, token...)
	binary.LittleEndian.PutUint16(pdu[8:], uint16(len(pdu)))
	binary.LittleEndian.PutUint16(pdu[10:], uint16(len(token)))
	return pdu
}

// authStep runs one leg of the exchange carried by a bind, alter_context or
// auth3 PDU; it returns the trailer and token to answer with (token nil:
// none). A bind starts the context; later legs must name the same one.
func (c *Conn) authStep(pdu []byte, h *Header, first bool) (SecTrailer, []byte, error) {
	t, value, _, err := splitAuth(pdu, h)
	if err != nil {
		return t, nil, err
	}
	if first {
		if c.sec == nil || t.Level < AuthLevelConnect || t.Level > AuthLevelPrivacy {
			return t, nil, ErrAuth
		}
		a := c.sec.New(t.Type)
		if a == nil {
			return t, nil, ErrAuth
		}
		if t.Level == AuthLevelCall {
			t.Level = AuthLevelPacket
		}
		c.auth = authState{ctx: a, typ: t.Type, level: t.Level, contextID: t.ContextID}
	} else if c.auth.ctx == nil || c.auth.done || c.auth.failed || t.Type != c.auth.typ || t.ContextID != c.auth.contextID {
		c.auth.failed = true
		return t, nil, ErrAuth
	}
	out, done, err := c.auth.ctx.Step(value)
	if err != nil {
		c.auth.failed = true
		return t, nil, err
	}
	c.auth.done = done
	t.Level = c.auth.level
	return t, out, nil
}

// verify checks the protection of an authenticated request at the
// negotiated level, decrypting its body in place for privacy, and returns
// the stub without auth padding ([MS-RPCE] 3.3.1.5.2).
func (c *Conn) verify(pdu []byte, r *Request) ([]byte, error) {
	a := &c.auth
	if r.AuthLength == 0 {
		if a.ctx == nil || (a.done && a.level == AuthLevelConnect) {
			return r.Stub, nil
		}
		return nil, ErrAuth
	}
	if a.ctx == nil || !a.done || a.failed {
		return nil, ErrAuth
	}
	t, sig, start, err := splitAuth(pdu, &r.Header)
	if err != nil || t.Type != a.typ || t.Level != a.level || t.ContextID != a.contextID || int(t.PadLength) > len(r.Stub) {
		return nil, ErrAuth
	}
	msg := pdu[:start+SecTrailerSize]
	body := pdu[start-len(r.Stub) : start]
	switch a.level {
	case AuthLevelPrivacy:
		err = a.ctx.Unseal(body, msg, sig)
	case AuthLevelIntegrity, AuthLevelPacket:
		err = a.ctx.Verify(msg, sig)
	}
	if err != nil {
		return nil, ErrAuth
	}
	return r.Stub[:len(r.Stub)-int(t.PadLength)], nil
}

// protects reports whether responses carry a verifier.
func (a *authState) protects() bool {
	return a.ctx != nil && a.done && a.level >= AuthLevelPacket
}

// sealResponse appends auth padding, the sec_trailer and the signature to
// an encoded response PDU whose stub ends the slice, and encrypts the stub
// for privacy.
func (c *Conn) sealResponse(pdu []byte) []byte {
	a := &c.auth
	pad := (authPadAlign - (len(pdu)-responseFixed)%authPadAlign) % authPadAlign
	sigSize := a.ctx.SignatureSize()
	pdu = append(pdu, make([]byte, pad+SecTrailerSize)...)
	t := SecTrailer{Type: a.typ, Level: a.level, PadLength: uint8(pad), ContextID: a.contextID}
	t.encode(pdu[len(pdu)-SecTrailerSize:])
	binary.LittleEndian.PutUint16(pdu[8:], uint16(len(pdu)+sigSize))
	binary.LittleEndian.PutUint16(pdu[10:], uint16(sigSize))
	var sig []byte
	if a.level == AuthLevelPrivacy {
		sig = a.ctx.Seal(pdu[responseFixed:len(pdu)-SecTrailerSize], pdu)
	} else {
		sig = a.ctx.Sign(pdu)
	}
	return append(pdu, sig...)
}

// authOverhead is what a protected response fragment spends beyond its
// stub at most: the padding, the sec_trailer and the signature.
func (c *Conn) authOverhead() int {
	if !c.auth.protects() {
		return 0
	}
	return authPadAlign - 1 + SecTrailerSize + c.auth.ctx.SignatureSize()
}

// Protector is an Authenticator told, once the bind is answered, the
// level of the association and whether its protection covers the PDU
// header (PFC_SUPPORT_HEADER_SIGN, [MS-RPCE] 3.3.1.5.2.2): Kerberos, whose
// signature size and signed bytes depend on both. NTLMSSP signs the whole
// PDU either way.
type Protector interface {
	SetProtection(level uint8, headerSign bool)
}

// StubOffset is where the stub of a request or response PDU starts.
func StubOffset(pdu []byte) int {
	off := requestFixed
	if len(pdu) > 3 && pdu[2] == TypeRequest && pdu[3]&FlagObjectUUID != 0 {
		off += 16
	}
	return off
}
