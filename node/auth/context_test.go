package auth

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"
)

// testUsers maps lower-case user names to passwords.
type testUsers map[string]string

func (u testUsers) NTHash(user, _ string) ([16]byte, bool) {
	p, ok := u[strings.ToLower(user)]
	if !ok {
		return [16]byte{}, false
	}
	return NTHash(p), true
}

func testConfig() *Config {
	return &Config{
		Users:           testUsers{"alice": "Secret1!", "user": "Password"},
		NetBIOSComputer: "NODE1", NetBIOSDomain: "WORKGROUP",
		DNSComputer: "node1.example", DNSDomain: "example",
		Now: func() time.Time { return time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC) },
	}
}

// testClient is a minimal NTLMv2 initiator ([MS-NLMP] 3.1.5) used to drive
// the server end to end.
type testClient struct {
	user, domain, password string
	responseDomain         string // domain NTOWFv2 uses; defaults to domain
	emptyResponseDomain    bool   // NTOWFv2 with the empty domain
	noMIC                  bool   // no MsvAvFlags/MIC in AUTHENTICATE
	noKeyExch              bool
	v1                     bool // send a 24-byte NTLMv1-shaped response
	anonymous              bool

	negotiate, challenge []byte
	flags                uint32
	sessionKey           []byte
}

const testClientFlags = negotiateUnicode | requestTarget | negotiateSign | negotiateSeal | negotiateNTLM |
	negotiateAlwaysSign | negotiateExtendedSec | negotiateTargetInfo | negotiateVersion |
	negotiate128 | negotiateKeyExch | negotiate56

func (tc *testClient) negotiateMessage() []byte {
	flags := uint32(testClientFlags)
	if tc.noKeyExch {
		flags &^= negotiateKeyExch
	}
	m := negotiateMessage{Flags: flags, Version: [8]byte{10, 0, 0x61, 0x4a, 0, 0, 0, 15}}
	tc.negotiate = make([]byte, m.Size())
	m.Encode(tc.negotiate)
	return tc.negotiate
}

func (tc *testClient) authenticateMessage(t *testing.T, challenge []byte) []byte {
	t.Helper()
	var ch challengeMessage
	if err := ch.Decode(challenge); err != nil {
		t.Fatalf("client: CHALLENGE: %v", err)
	}
	tc.challenge, tc.flags = challenge, ch.Flags
	am := authenticateMessage{Flags: ch.Flags, User: unicode(tc.user), Domain: unicode(tc.domain), Workstation: unicode("CLIENT")}
	if tc.anonymous {
		am.LmResponse = []byte{0}
		return encodeAuthenticate(&am)
	}
	dom := tc.domain
	if tc.responseDomain != "" {
		dom = tc.responseDomain
	}
	if tc.emptyResponseDomain {
		dom = ""
	}
	key := ntowfv2(NTHash(tc.password), tc.user, dom)
	temp := tc.clientChallenge(t, ch.TargetInfo)
	proof := hmacMD5(key, ch.ServerChallenge[:], temp)
	am.NtResponse = append(proof, temp...)
	am.LmResponse = make([]byte, 24)
	if tc.v1 {
		am.NtResponse = am.NtResponse[:24]
	}
	base := hmacMD5(key, proof)
	tc.sessionKey = base
	if ch.Flags&negotiateKeyExch != 0 {
		tc.sessionKey = make([]byte, 16)
		rand.Read(tc.sessionKey)
		am.EncryptedRandomSessionKey = rc4K(base, tc.sessionKey)
	}
	msg := encodeAuthenticate(&am)
	if !tc.noMIC {
		copy(msg[authenticateMICOffset:], hmacMD5(tc.sessionKey, tc.negotiate, challenge, msg))
	}
	return msg
}

// clientChallenge builds NTLMv2_CLIENT_CHALLENGE, adding MsvAvFlags (MIC) to
// the server's AV pairs unless noMIC.
func (tc *testClient) clientChallenge(t *testing.T, targetInfo []byte) []byte {
	ts, ok, err := avPair(targetInfo, avTimestamp)
	if !ok || err != nil || len(ts) != 8 {
		t.Fatalf("client: no MsvAvTimestamp: %v", err)
	}
	av := bytes.Clone(targetInfo[:len(targetInfo)-4]) // drop MsvAvEOL
	if !tc.noMIC {
		av = appendAVPair(av, avFlags, binary.LittleEndian.AppendUint32(nil, avFlagMIC))
	}
	av = appendAVPair(av, avEOL, nil)
	temp := []byte{1, 1, 0, 0, 0, 0, 0, 0}
	temp = append(temp, ts...)
	temp = append(temp, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0)
	temp = append(temp, av...)
	return append(temp, 0, 0, 0, 0)
}

func encodeAuthenticate(am *authenticateMessage) []byte {
	b := make([]byte, am.Size())
	am.Encode(b)
	return b
}

var testMechTypes = tlv(tagSequence, tlv(tagOID, oidNTLMSSP))

// runSPNEGO runs the whole exchange in SPNEGO framing, the client sending a
// mechListMIC when withMechListMIC. It returns the final Step error.
func runSPNEGO(t *testing.T, cfg *Config, tc *testClient, withMechListMIC bool) (*Context, error) {
	t.Helper()
	c := NewContext(cfg)
	init := negTokenInit{MechTypes: [][]byte{oidNTLMSSP}, MechToken: tc.negotiateMessage()}
	out, err := c.Step(init.Append(nil))
	if err != ErrMoreProcessing {
		t.Fatalf("NegTokenInit: %v", err)
	}
	var resp negTokenResp
	if err := resp.Decode(out); err != nil || resp.NegState != negStateAcceptIncomplete || !bytes.Equal(resp.SupportedMech, oidNTLMSSP) {
		t.Fatalf("challenge token %x: %v %+v", out, err, resp)
	}
	final := negTokenResp{NegState: negStateAbsent, ResponseToken: tc.authenticateMessage(t, resp.ResponseToken)}
	if withMechListMIC {
		mic := mechListMIC(tc.sessionKey, tc.flags, true, testMechTypes)
		final.MechListMIC = mic[:]
	}
	out, err = c.Step(final.Append(nil))
	if err != nil {
		if out != nil {
			t.Errorf("failure with a token %x", out)
		}
		return c, err
	}
	if err := resp.Decode(out); err != nil || resp.NegState != negStateAcceptCompleted {
		t.Fatalf("final token %x: %v %+v", out, err, resp)
	}
	switch {
	case !withMechListMIC || c.Result().SessionKey == nil:
		if resp.MechListMIC != nil {
			t.Errorf("unexpected server mechListMIC")
		}
	default:
		want := mechListMIC(tc.sessionKey, tc.flags, false, testMechTypes)
		if !bytes.Equal(resp.MechListMIC, want[:]) {
			t.Errorf("server mechListMIC %x, want %x", resp.MechListMIC, want)
		}
	}
	return c, nil
}

func TestSPNEGOEndToEnd(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client testClient
		mlMIC  bool
	}{
		{"MIC and mechListMIC", testClient{user: "alice", domain: "WORKGROUP", password: "Secret1!"}, true},
		{"no MIC", testClient{user: "alice", domain: "WORKGROUP", password: "Secret1!", noMIC: true}, false},
		{"MIC without mechListMIC", testClient{user: "Alice", domain: "wg", password: "Secret1!"}, false},
		{"no key exchange", testClient{user: "alice", domain: "", password: "Secret1!", noKeyExch: true}, true},
		{"domain upper-cased", testClient{user: "alice", domain: "wg", responseDomain: "WG", password: "Secret1!"}, true},
		{"empty response domain", testClient{user: "alice", domain: "wg", emptyResponseDomain: true, password: "Secret1!"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := tc.client
			c, err := runSPNEGO(t, testConfig(), &cl, tc.mlMIC)
			if err != nil {
				t.Fatal(err)
			}
			r := c.Result()
			if r.User != cl.user || r.Domain != cl.domain || r.Workstation != "CLIENT" || r.Guest || r.Anonymous {
				t.Errorf("result %+v", r)
			}
			if !bytes.Equal(r.SessionKey, cl.sessionKey) || len(r.SessionKey) != 16 {
				t.Errorf("session key %x, client has %x", r.SessionKey, cl.sessionKey)
			}
			if _, err := c.Step(nil); err != ErrInvalidToken {
				t.Errorf("Step after success: %v", err)
			}
		})
	}
}

func TestLogonFailures(t *testing.T) {
	alice := testClient{user: "alice", domain: "WORKGROUP", password: "Secret1!"}
	for _, tc := range []struct {
		name    string
		client  testClient
		cfg     func(*Config)
		want    error
		guest   bool
		anonymo bool
	}{
		{name: "wrong password", client: testClient{user: "alice", password: "wrong"}, want: ErrLogonFailure},
		{name: "unknown user", client: testClient{user: "mallory", password: "x"}, want: ErrLogonFailure},
		{name: "wrong password as guest", client: testClient{user: "alice", password: "wrong"}, cfg: func(c *Config) { c.AllowGuest = true }, guest: true},
		{name: "unknown user as guest", client: testClient{user: "mallory", password: "x"}, cfg: func(c *Config) { c.AllowGuest = true }, guest: true},
		{name: "NTLMv1 response", client: testClient{user: "alice", password: "Secret1!", v1: true, noMIC: true}, want: ErrLogonFailure},
		{name: "NTLMv1 response, guest allowed", client: testClient{user: "alice", password: "Secret1!", v1: true, noMIC: true}, cfg: func(c *Config) { c.AllowGuest = true }, want: ErrLogonFailure},
		{name: "anonymous refused", client: testClient{anonymous: true}, want: ErrLogonFailure},
		{name: "anonymous refused, guest allowed", client: testClient{anonymous: true}, cfg: func(c *Config) { c.AllowGuest = true }, want: ErrLogonFailure},
		{name: "anonymous allowed", client: testClient{anonymous: true}, cfg: func(c *Config) { c.AllowAnonymous = true }, anonymo: true},
		{name: "no user database", client: alice, cfg: func(c *Config) { c.Users = nil }, want: ErrLogonFailure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			if tc.cfg != nil {
				tc.cfg(cfg)
			}
			cl := tc.client
			c, err := runSPNEGO(t, cfg, &cl, !cl.anonymous && !cl.v1)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if err != nil {
				return
			}
			r := c.Result()
			if r.Guest != tc.guest || r.Anonymous != tc.anonymo || r.SessionKey != nil {
				t.Errorf("result %+v", r)
			}
		})
	}
}

// TestTampering flips bits the MICs protect.
func TestTampering(t *testing.T) {
	t.Run("AUTHENTICATE MIC", func(t *testing.T) {
		cl := testClient{user: "alice", password: "Secret1!"}
		c := NewContext(testConfig())
		ch, err := c.Step(cl.negotiateMessage())
		if err != ErrMoreProcessing {
			t.Fatal(err)
		}
		msg := cl.authenticateMessage(t, ch)
		msg[authenticateMICOffset] ^= 1
		if _, err := c.Step(msg); err != ErrLogonFailure {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("NEGOTIATE under MIC", func(t *testing.T) {
		cl := testClient{user: "alice", password: "Secret1!"}
		c := NewContext(testConfig())
		ch, _ := c.Step(cl.negotiateMessage())
		cl.negotiate = bytes.Clone(cl.negotiate)
		cl.negotiate[len(cl.negotiate)-1] ^= 1 // the client saw another NEGOTIATE
		if _, err := c.Step(cl.authenticateMessage(t, ch)); err != ErrLogonFailure {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("mechListMIC", func(t *testing.T) {
		cl := testClient{user: "alice", password: "Secret1!"}
		c := NewContext(testConfig())
		init := negTokenInit{MechTypes: [][]byte{oidNTLMSSP}, MechToken: cl.negotiateMessage()}
		out, _ := c.Step(init.Append(nil))
		var resp negTokenResp
		if err := resp.Decode(out); err != nil {
			t.Fatal(err)
		}
		final := negTokenResp{NegState: negStateAbsent, ResponseToken: cl.authenticateMessage(t, resp.ResponseToken)}
		mic := mechListMIC(cl.sessionKey, cl.flags, false, testMechTypes) // wrong direction
		final.MechListMIC = mic[:]
		if _, err := c.Step(final.Append(nil)); err != ErrLogonFailure {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestRawNTLMSSP(t *testing.T) {
	cl := testClient{user: "ALICE", domain: "x", password: "Secret1!"}
	c := NewContext(testConfig())
	ch, err := c.Step(cl.negotiateMessage())
	if err != ErrMoreProcessing || !isNTLMSSP(ch) {
		t.Fatalf("NEGOTIATE: %x %v", ch, err)
	}
	var m challengeMessage
	if err := m.Decode(ch); err != nil {
		t.Fatal(err)
	}
	if m.Flags&testClientFlags != testClientFlags || fromUTF16le(m.TargetName) != "NODE1" {
		t.Errorf("challenge flags %#x target %q", m.Flags, fromUTF16le(m.TargetName))
	}
	for id, want := range map[uint16]string{avNbComputerName: "NODE1", avNbDomainName: "WORKGROUP", avDNSComputerName: "node1.example", avDNSDomainName: "example"} {
		if v, ok, err := avPair(m.TargetInfo, id); !ok || err != nil || fromUTF16le(v) != want {
			t.Errorf("AV pair %d = %q", id, fromUTF16le(v))
		}
	}
	if v, _, _ := avPair(m.TargetInfo, avTimestamp); binary.LittleEndian.Uint64(v) != fileTime(testConfig().Now()) {
		t.Errorf("timestamp %x", v)
	}
	out, err := c.Step(cl.authenticateMessage(t, ch))
	if err != nil || out != nil {
		t.Fatalf("AUTHENTICATE: %x %v", out, err)
	}
	if r := c.Result(); r.User != "ALICE" || !bytes.Equal(r.SessionKey, cl.sessionKey) {
		t.Errorf("result %+v", r)
	}
}

// TestNTLMNotPreferred: the client prefers Kerberos and sends an optimistic
// Kerberos token; the server selects NTLMSSP and asks for its NEGOTIATE.
func TestNTLMNotPreferred(t *testing.T) {
	krb5 := []byte{0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02}
	cl := testClient{user: "alice", password: "Secret1!"}
	c := NewContext(testConfig())
	init := negTokenInit{MechTypes: [][]byte{krb5, oidNTLMSSP}, MechToken: []byte("kerberos AP-REQ")}
	out, err := c.Step(init.Append(nil))
	var resp negTokenResp
	if err != ErrMoreProcessing || resp.Decode(out) != nil || resp.NegState != negStateRequestMIC || !bytes.Equal(resp.SupportedMech, oidNTLMSSP) || resp.ResponseToken != nil {
		t.Fatalf("first reply %x %v %+v", out, err, resp)
	}
	out, err = c.Step((&negTokenResp{NegState: negStateAbsent, ResponseToken: cl.negotiateMessage()}).Append(nil))
	if err != ErrMoreProcessing || resp.Decode(out) != nil || resp.ResponseToken == nil {
		t.Fatalf("challenge %x %v", out, err)
	}
	mechTypes := tlv(tagSequence, tlv(tagOID, krb5), tlv(tagOID, oidNTLMSSP))
	final := negTokenResp{NegState: negStateAbsent, ResponseToken: cl.authenticateMessage(t, resp.ResponseToken)}
	mic := mechListMIC(cl.sessionKey, cl.flags, true, mechTypes)
	final.MechListMIC = mic[:]
	out, err = c.Step(final.Append(nil))
	want := mechListMIC(cl.sessionKey, cl.flags, false, mechTypes)
	if err != nil || resp.Decode(out) != nil || !bytes.Equal(resp.MechListMIC, want[:]) {
		t.Fatalf("final %x %v", out, err)
	}
}

func TestNoCommonMechanism(t *testing.T) {
	krb5 := []byte{0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02}
	init := negTokenInit{MechTypes: [][]byte{krb5}, MechToken: []byte("x")}
	if _, err := NewContext(testConfig()).Step(init.Append(nil)); err != ErrLogonFailure {
		t.Fatalf("err = %v", err)
	}
}

// TestEmptyFirstToken: an empty buffer starts SPNEGO from the server side.
func TestEmptyFirstToken(t *testing.T) {
	c := NewContext(testConfig())
	out, err := c.Step(nil)
	if err != ErrMoreProcessing || !bytes.Equal(out, NegTokenInit()) {
		t.Fatalf("%x %v", out, err)
	}
	cl := testClient{user: "alice", password: "Secret1!"}
	init := negTokenInit{MechTypes: [][]byte{oidNTLMSSP}, MechToken: cl.negotiateMessage()}
	if _, err := c.Step(init.Append(nil)); err != ErrMoreProcessing {
		t.Fatalf("NegTokenInit after server's: %v", err)
	}
}

func TestOutOfOrder(t *testing.T) {
	cl := testClient{user: "alice", password: "Secret1!"}
	for name, msgs := range map[string][][]byte{
		"AUTHENTICATE first": {unhex(t, specAuthenticateMessage)},
		"CHALLENGE":          {unhex(t, specChallengeMessage)},
		"two NEGOTIATEs":     {cl.negotiateMessage(), cl.negotiateMessage()},
		"garbage":            {[]byte("hello")},
		"empty second":       {cl.negotiateMessage(), nil},
	} {
		c := NewContext(testConfig())
		var err error
		for _, m := range msgs {
			_, err = c.Step(m)
		}
		if err != ErrInvalidToken {
			t.Errorf("%s: err = %v", name, err)
		}
		if _, err := c.Step(cl.negotiateMessage()); err == ErrMoreProcessing {
			t.Errorf("%s: context usable after failure", name)
		}
	}
}

// TestNegTokenInit2 compares with the well-known NTLMSSP-only NegTokenInit2
// servers send ([MS-SPNG] 2.2.1, 3.2.5.2).
func TestNegTokenInit2(t *testing.T) {
	want := "60480606" + "2b0601050502" + "a03e303c" + "a00e300c060a2b06010401823702020a" +
		"a32a3028a0261b24" + hexString(negHintName)
	if got := NegTokenInit(); !bytes.Equal(got, unhex(t, want)) {
		t.Fatalf("NegTokenInit() = %x\nwant %s", got, want)
	}
	var tok negTokenInit
	if err := tok.Decode(NegTokenInit()); err != nil || string(tok.HintName) != negHintName || len(tok.MechTypes) != 1 || !bytes.Equal(tok.MechTypesDER, testMechTypes) {
		t.Fatalf("decode: %v %+v", err, tok)
	}
}

func hexString(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteString(strings.ToLower(string("0123456789ABCDEF"[s[i]>>4]) + string("0123456789ABCDEF"[s[i]&15])))
	}
	return b.String()
}
