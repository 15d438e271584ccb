package auth

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"time"
)

// UserDB looks up the NT hash (MD4 of the UTF-16LE password) of a user;
// lookups are case-insensitive in the user name; domain may be ignored by
// simple implementations.
type UserDB interface {
	NTHash(user, domain string) (hash [16]byte, ok bool)
}

// Config is what the server knows when it authenticates clients. It is
// shared by all Contexts and must not change while they use it.
type Config struct {
	Users          UserDB
	AllowGuest     bool // unknown user or bad password → guest session instead of failure
	AllowAnonymous bool // NULL session: empty user name and empty responses

	// Kerberos, when set and holding a keytab, accepts Kerberos 5
	// (offered ahead of NTLMSSP); NoNTLM refuses NTLMSSP.
	Kerberos *Kerberos
	NoNTLM   bool

	// Target information sent in the CHALLENGE_MESSAGE AV pairs.
	NetBIOSComputer, NetBIOSDomain, DNSComputer, DNSDomain string

	Now  func() time.Time // nil → time.Now (MsvAvTimestamp)
	Rand io.Reader        // nil → crypto/rand (server challenge)
}

// Errors Step returns. ErrMoreProcessing is not a failure: the returned token
// goes to the client with STATUS_MORE_PROCESSING_REQUIRED.
var (
	ErrMoreProcessing = errors.New("auth: more processing required (STATUS_MORE_PROCESSING_REQUIRED)")
	ErrLogonFailure   = errors.New("auth: logon failure (STATUS_LOGON_FAILURE)")
	ErrInvalidToken   = errors.New("auth: invalid security token (STATUS_INVALID_PARAMETER)")
	// ErrNTLMBlocked refuses NTLMSSP when Config.NoNTLM switched it off.
	ErrNTLMBlocked = errors.New("auth: NTLM is switched off (STATUS_NTLM_BLOCKED)")
)

// Result describes an established session.
type Result struct {
	User, Domain, Workstation string
	Principal                 string // Kerberos client principal, "name@REALM"; empty for NTLM
	SessionKey                []byte // 16-byte session key ([MS-SMB2] 3.3.5.5.3); nil for guest and anonymous
	Guest, Anonymous          bool
}

type contextState int

const (
	stateStart         contextState = iota // nothing received yet
	stateWantNegotiate                     // mechanism chosen, NTLMSSP NEGOTIATE not yet received
	stateChallengeSent                     // waiting for AUTHENTICATE
	stateWantAPReq                         // Kerberos chosen, AP-REQ not yet received
	stateDone
	stateFailed
)

// Context is one authentication exchange: one SESSION_SETUP sequence. It is
// not safe for concurrent use.
type Context struct {
	cfg   *Config
	state contextState

	mechTypes       []byte // client's DER MechTypeList, covered by mechListMIC
	negotiate       []byte // the NEGOTIATE_MESSAGE as received
	challenge       []byte // the CHALLENGE_MESSAGE as sent
	serverChallenge [8]byte
	flags           uint32 // negotiated flags (CHALLENGE ∩ AUTHENTICATE)
	result          Result
	krbErr          error // why Kerberos refused the client, for the log
	micDone         bool  // SPNEGO mechListMICs were exchanged (sequence number 0 used)
}

// NewContext starts an authentication exchange.
func NewContext(cfg *Config) *Context { return &Context{cfg: cfg} }

// Result is valid after Step returned nil.
func (c *Context) Result() Result { return c.result }

// Step consumes the client's security buffer — a SPNEGO NegTokenInit (with or
// without an NTLMSSP NEGOTIATE as mechToken), a NegTokenResp, or a raw
// NTLMSSP message — and returns the token to send back, framed like the
// input. It returns ErrMoreProcessing with the token when another round is
// needed, nil with the final token on success (nil for raw NTLMSSP), and
// ErrLogonFailure, ErrInvalidToken or another error on failure. After a
// failure or success every further Step fails.
func (c *Context) Step(in []byte) ([]byte, error) {
	if c.state == stateDone || c.state == stateFailed {
		return nil, ErrInvalidToken
	}
	out, err := c.step(in)
	switch err {
	case nil:
		c.state = stateDone
	case ErrMoreProcessing:
	default:
		c.state = stateFailed
		return nil, err
	}
	return out, err
}

func (c *Context) step(in []byte) ([]byte, error) {
	switch {
	case len(in) == 0 && c.state == stateStart:
		// No token: start SPNEGO from the server side ([MS-SPNG] 3.2.5.2).
		c.state = stateWantNegotiate
		return c.cfg.NegTokenInit(), ErrMoreProcessing
	case isNTLMSSP(in):
		return c.ntlmStep(in)
	case isKRB5Token(in):
		// A bare Kerberos token, without SPNEGO: answered bare too.
		if !c.kerberos() || c.state != stateStart {
			return nil, ErrLogonFailure
		}
		return c.krbAccept(in)
	case len(in) > 0 && (in[0] == tagApplication0 || in[0] == tagContext0):
		return c.spnegoInit(in)
	case len(in) > 0 && in[0] == tagContext1:
		return c.spnegoResp(in)
	}
	return nil, ErrInvalidToken
}

// spnegoInit handles a NegTokenInit (RFC 4178 3.2, [MS-SPNG] 3.2.5.2):
// the first mechanism of the client's list that is enabled here is chosen.
func (c *Context) spnegoInit(in []byte) ([]byte, error) {
	var t negTokenInit
	if c.state >= stateChallengeSent || c.mechTypes != nil || t.Decode(in) != nil {
		return nil, ErrInvalidToken
	}
	c.mechTypes = bytes.Clone(t.MechTypesDER)
	i, mech := c.chooseMech(t.MechTypes)
	switch {
	case i < 0 && c.cfg.NoNTLM && mechIndex(t.MechTypes, oidNTLMSSP) >= 0:
		return nil, ErrNTLMBlocked // the client would have used NTLM
	case i < 0:
		return nil, ErrLogonFailure // no mechanism in common
	case !bytes.Equal(mech, oidNTLMSSP):
		return c.spnegoKerberos(i, mech, t.MechToken)
	}
	resp := negTokenResp{NegState: negStateAcceptIncomplete, SupportedMech: oidNTLMSSP}
	if i != 0 || t.MechToken == nil {
		// The optimistic token, if any, is for another mechanism: ask for
		// an NTLMSSP NEGOTIATE. RFC 4178 5 then expects a mechListMIC; it is
		// verified when sent but not demanded: the mechanisms the client
		// preferred are none this server takes, so there is nothing better
		// to downgrade from.
		if i != 0 {
			resp.NegState = negStateRequestMIC
		}
		c.state = stateWantNegotiate
		return resp.Append(nil), ErrMoreProcessing
	}
	tok, err := c.ntlmStep(t.MechToken)
	if err != ErrMoreProcessing {
		if err == nil {
			err = ErrInvalidToken // a NegTokenInit cannot complete NTLMSSP
		}
		return nil, err
	}
	resp.ResponseToken = tok
	return resp.Append(nil), ErrMoreProcessing
}

// chooseMech returns the index and OID of the first of the client's
// mechanisms enabled here, or -1.
func (c *Context) chooseMech(mechs [][]byte) (int, []byte) {
	for i, m := range mechs {
		switch {
		case bytes.Equal(m, oidNTLMSSP) && !c.cfg.NoNTLM,
			(bytes.Equal(m, oidKRB5) || bytes.Equal(m, oidMSKRB5)) && c.kerberos():
			return i, m
		}
	}
	return -1, nil
}

func (c *Context) kerberos() bool { return c.cfg.Kerberos.HasKeytab() }

// spnegoKerberos answers a NegTokenInit whose chosen mechanism (the
// client's i-th) is Kerberos: with its optimistic AP-REQ when the client
// sent one for it, else by asking for one.
func (c *Context) spnegoKerberos(i int, mech, token []byte) ([]byte, error) {
	resp := negTokenResp{NegState: negStateAcceptIncomplete, SupportedMech: mech}
	if i != 0 || token == nil {
		c.state = stateWantAPReq
		return resp.Append(nil), ErrMoreProcessing
	}
	rep, err := c.krbAccept(token)
	if err != nil {
		return nil, err
	}
	resp.NegState, resp.ResponseToken = negStateAcceptCompleted, rep
	return resp.Append(nil), nil
}

func mechIndex(mechs [][]byte, oid []byte) int {
	for i, m := range mechs {
		if bytes.Equal(m, oid) {
			return i
		}
	}
	return -1
}

// spnegoResp handles a NegTokenResp carrying an NTLMSSP message (RFC 4178 3.2).
func (c *Context) spnegoResp(in []byte) ([]byte, error) {
	var t negTokenResp
	if t.Decode(in) != nil || t.ResponseToken == nil {
		return nil, ErrInvalidToken
	}
	if t.NegState == negStateReject {
		return nil, ErrLogonFailure
	}
	if c.state == stateWantAPReq {
		rep, err := c.krbAccept(t.ResponseToken)
		if err != nil {
			return nil, err
		}
		r := negTokenResp{NegState: negStateAcceptCompleted, ResponseToken: rep}
		return r.Append(nil), nil
	}
	tok, err := c.ntlmStep(t.ResponseToken)
	switch err {
	case ErrMoreProcessing:
		r := negTokenResp{NegState: negStateAcceptIncomplete, ResponseToken: tok}
		return r.Append(nil), ErrMoreProcessing
	case nil:
	default:
		return nil, err
	}
	r := negTokenResp{NegState: negStateAcceptCompleted}
	if t.MechListMIC != nil && c.result.SessionKey != nil {
		mic, err := c.checkMechListMIC(t.MechListMIC)
		if err != nil {
			return nil, err
		}
		r.MechListMIC = mic
		c.micDone = true
	}
	return r.Append(nil), nil
}

// checkMechListMIC verifies the client's mechListMIC over its mechTypes and
// returns the server's ([MS-SPNG] 3.1.5.1, [MS-NLMP] 3.4.4.2).
func (c *Context) checkMechListMIC(clientMIC []byte) ([]byte, error) {
	if c.mechTypes == nil || c.flags&negotiateExtendedSec == 0 {
		return nil, ErrInvalidToken // nothing to check against / NTLMv1-style signing unsupported
	}
	key := c.result.SessionKey
	want := mechListMIC(key, c.flags, true, c.mechTypes)
	if !hmac.Equal(clientMIC, want[:]) {
		return nil, ErrLogonFailure
	}
	mine := mechListMIC(key, c.flags, false, c.mechTypes)
	return mine[:], nil
}

// ntlmStep handles one NTLMSSP message: NEGOTIATE before the challenge,
// AUTHENTICATE after it.
func (c *Context) ntlmStep(msg []byte) ([]byte, error) {
	switch {
	case c.cfg.NoNTLM:
		return nil, ErrNTLMBlocked
	case ntlmType(msg) == ntlmMessageNegotiate && (c.state == stateStart || c.state == stateWantNegotiate):
		return c.serveNegotiate(msg)
	case ntlmType(msg) == ntlmMessageAuthenticate && c.state == stateChallengeSent:
		return c.serveAuthenticate(msg)
	}
	return nil, ErrInvalidToken
}

// serveNegotiate answers a NEGOTIATE_MESSAGE with a CHALLENGE_MESSAGE
// ([MS-NLMP] 3.2.5.1.1).
func (c *Context) serveNegotiate(msg []byte) ([]byte, error) {
	var neg negotiateMessage
	if neg.Decode(msg) != nil {
		return nil, ErrInvalidToken
	}
	rnd := c.cfg.Rand
	if rnd == nil {
		rnd = rand.Reader
	}
	if _, err := io.ReadFull(rnd, c.serverChallenge[:]); err != nil {
		return nil, err
	}
	flags := negotiateFlagsAlways | neg.Flags&negotiateFlagsEchoed
	if neg.Flags&negotiateUnicode != 0 {
		flags |= negotiateUnicode
	} else {
		flags |= negotiateOEM
	}
	ch := challengeMessage{
		Flags:           flags,
		TargetName:      c.encodeString(flags, c.cfg.NetBIOSComputer),
		ServerChallenge: c.serverChallenge,
		TargetInfo:      c.targetInfo(),
		Version:         serverVersion,
	}
	if flags&negotiateVersion == 0 {
		ch.Version = [ntlmVersionSize]byte{}
	}
	out := make([]byte, ch.Size())
	ch.Encode(out)
	c.negotiate = bytes.Clone(msg)
	c.challenge = out
	c.flags = flags
	c.state = stateChallengeSent
	return out, ErrMoreProcessing
}

func (c *Context) encodeString(flags uint32, s string) []byte {
	if flags&negotiateUnicode != 0 {
		return unicode(s)
	}
	return []byte(s)
}

// targetInfo builds the CHALLENGE_MESSAGE AV pairs ([MS-NLMP] 3.2.5.1.1).
func (c *Context) targetInfo() []byte {
	now := time.Now
	if c.cfg.Now != nil {
		now = c.cfg.Now
	}
	var b []byte
	b = appendAVPair(b, avNbDomainName, unicode(c.cfg.NetBIOSDomain))
	b = appendAVPair(b, avNbComputerName, unicode(c.cfg.NetBIOSComputer))
	b = appendAVPair(b, avDNSDomainName, unicode(c.cfg.DNSDomain))
	b = appendAVPair(b, avDNSComputerName, unicode(c.cfg.DNSComputer))
	b = appendAVPair(b, avTimestamp, binary.LittleEndian.AppendUint64(nil, fileTime(now())))
	return appendAVPair(b, avEOL, nil)
}

// fileTime converts t to a FILETIME: 100 ns intervals since 1601-01-01 UTC.
func fileTime(t time.Time) uint64 {
	const epochDelta = 116444736000000000 // 1601 → 1970 in 100 ns
	return uint64(t.UnixNano()/100 + epochDelta)
}

// serveAuthenticate verifies an AUTHENTICATE_MESSAGE ([MS-NLMP] 3.2.5.1.2).
func (c *Context) serveAuthenticate(msg []byte) ([]byte, error) {
	var am authenticateMessage
	if am.Decode(msg) != nil {
		return nil, ErrInvalidToken
	}
	// The client may drop optional flags it was offered, never add them.
	c.flags &= am.Flags | negotiateFlagsAlways | negotiateUnicode | negotiateOEM
	decode := func(b []byte) string {
		if am.Flags&negotiateUnicode != 0 {
			return fromUTF16le(b)
		}
		return string(b)
	}
	c.result = Result{User: decode(am.User), Domain: decode(am.Domain), Workstation: decode(am.Workstation)}

	if c.result.User == "" && len(am.NtResponse) == 0 && (len(am.LmResponse) == 0 || bytes.Equal(am.LmResponse, []byte{0})) {
		if !c.cfg.AllowAnonymous {
			return nil, ErrLogonFailure
		}
		c.result.Anonymous = true
		return nil, nil
	}
	if len(am.NtResponse) < ntProofStrSize+ntlmv2ClientFixedSize {
		return nil, ErrLogonFailure // NTLMv1, LM-only or truncated: refused
	}
	if _, _, err := avPair(ntlmv2AVPairs(am.NtResponse), avEOL); err != nil {
		// A malformed NTLMv2_CLIENT_CHALLENGE is refused before the
		// password is checked, as Samba does ([MS-NLMP] 2.2.2.7, 2.2.2.1).
		return nil, ErrInvalidToken
	}
	key, ok := c.verifyNTLMv2(&am)
	if !ok {
		if !c.cfg.AllowGuest {
			return nil, ErrLogonFailure
		}
		c.result.Guest = true
		return nil, nil
	}
	if err := c.checkMIC(&am, msg, key); err != nil {
		return nil, err
	}
	c.result.SessionKey = key
	return nil, nil
}

// verifyNTLMv2 checks NTProofStr against the user's NT hash and returns the
// ExportedSessionKey ([MS-NLMP] 3.3.2, 3.4.5.1, 3.2.5.1.2). Like Samba, it
// tries the domain as sent, upper-cased, and empty.
func (c *Context) verifyNTLMv2(am *authenticateMessage) ([]byte, bool) {
	if c.cfg.Users == nil {
		return nil, false
	}
	user, domain := c.result.User, c.result.Domain
	hash, ok := c.cfg.Users.NTHash(user, domain)
	if !ok {
		return nil, false
	}
	proof, temp := am.NtResponse[:ntProofStrSize], am.NtResponse[ntProofStrSize:]
	domains := []string{domain}
	if up := strings.ToUpper(domain); up != domain {
		domains = append(domains, up)
	}
	if domain != "" {
		domains = append(domains, "")
	}
	for _, dom := range domains {
		responseKey := ntowfv2(hash, user, dom)
		if !hmac.Equal(proof, hmacMD5(responseKey, c.serverChallenge[:], temp)) {
			continue
		}
		keyExchangeKey := hmacMD5(responseKey, proof) // SessionBaseKey; KXKEY for NTLMv2
		if c.flags&negotiateKeyExch == 0 {
			return keyExchangeKey, true
		}
		if len(am.EncryptedRandomSessionKey) != 16 {
			return nil, false
		}
		return rc4K(keyExchangeKey, am.EncryptedRandomSessionKey), true
	}
	return nil, false
}

// checkMIC verifies the AUTHENTICATE_MESSAGE MIC when MsvAvFlags announces
// one: HMAC_MD5(ExportedSessionKey, NEGOTIATE || CHALLENGE || AUTHENTICATE
// with the MIC zeroed) ([MS-NLMP] 3.2.5.1.2, 3.1.5.1.2).
func (c *Context) checkMIC(am *authenticateMessage, msg, key []byte) error {
	flags, ok, err := avPair(ntlmv2AVPairs(am.NtResponse), avFlags)
	if err != nil {
		return ErrInvalidToken
	}
	if !ok || len(flags) != 4 || binary.LittleEndian.Uint32(flags)&avFlagMIC == 0 {
		return nil
	}
	if !am.HasMICSpace {
		return ErrInvalidToken
	}
	zeroed := bytes.Clone(msg)
	clear(zeroed[authenticateMICOffset:authenticateMICEnd])
	if !hmac.Equal(am.MIC[:], hmacMD5(key, c.negotiate, c.challenge, zeroed)) {
		return ErrLogonFailure
	}
	return nil
}
