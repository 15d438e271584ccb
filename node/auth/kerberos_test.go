package auth

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/iana/chksumtype"
	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

// The tests here forge tickets with gokrb5 from a keytab made in the test:
// the KDC's part of the exchange. integration/kerberos_test.go runs the
// same acceptor against a real MIT KDC and real clients.

const (
	testRealm = "TEST.REALM"
	testSPN   = "cifs/files.test"
)

type mapAll struct{}

func (mapAll) MapPrincipal(name, realm string) (string, bool) {
	return name, realm == testRealm && !strings.Contains(name, "/")
}

func testKeytab(t *testing.T, password string, kvno uint8, spns ...string) *keytab.Keytab {
	t.Helper()
	kt := keytab.New()
	for _, spn := range spns {
		if err := kt.AddEntry(spn, testRealm, password, time.Now(), kvno, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
			t.Fatal(err)
		}
	}
	// A round trip through the file format, as smbnode reads it.
	b, err := kt.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	kt, err = ParseKeytab(b)
	if err != nil {
		t.Fatal(err)
	}
	return kt
}

// apReqSpec describes the AP-REQ a test client sends.
type apReqSpec struct {
	client     string
	sname      string        // default testSPN
	start, end time.Time     // ticket validity; default now-1m .. now+1h
	skew       time.Duration // authenticator time - now
	mutual     bool
	dce        bool           // GSS_C_DCE_STYLE (with GSS_C_MUTUAL_FLAG)
	kt         *keytab.Keytab // the KDC's copy of the service key
	kvno       int
}

// forge returns the GSS-API AP-REQ token and the authenticator's subkey.
func forge(t testing.TB, s apReqSpec) ([]byte, types.EncryptionKey, messages.Ticket) {
	t.Helper()
	now := time.Now().UTC()
	if s.sname == "" {
		s.sname = testSPN
	}
	if s.start.IsZero() {
		s.start, s.end = now.Add(-time.Minute), now.Add(time.Hour)
	}
	if s.kvno == 0 {
		s.kvno = 1
	}
	cname := types.NewPrincipalName(1, s.client)
	sname := types.NewPrincipalName(2, s.sname)
	tkt, key, err := messages.NewTicket(cname, testRealm, sname, testRealm, types.NewKrbFlags(), s.kt,
		etypeID.AES256_CTS_HMAC_SHA1_96, s.kvno, s.start, s.start, s.end, s.end)
	if err != nil {
		t.Fatal(err)
	}
	a, err := types.NewAuthenticator(testRealm, cname)
	if err != nil {
		t.Fatal(err)
	}
	a.CTime = a.CTime.Add(s.skew)
	ck := make([]byte, 24)
	binary.LittleEndian.PutUint32(ck, 16)
	if s.mutual {
		binary.LittleEndian.PutUint32(ck[20:], 2) // GSS_C_MUTUAL_FLAG
	}
	if s.dce {
		binary.LittleEndian.PutUint32(ck[20:], 2|gssDCEStyleFlag)
	}
	a.Cksum = types.Checksum{CksumType: chksumtype.GSSAPI, Checksum: ck}
	if err := a.GenerateSeqNumberAndSubKey(key.KeyType, 32); err != nil {
		t.Fatal(err)
	}
	req, err := messages.NewAPReq(tkt, key, a)
	if err != nil {
		t.Fatal(err)
	}
	if s.mutual {
		types.SetFlag(&req.APOptions, flags.APOptionMutualRequired)
	}
	b, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return appendKRB5Token(nil, tokAPReq, b), a.SubKey, tkt
}

// spnegoInit wraps a Kerberos token as the client's optimistic token.
func spnegoInitKRB(mech, tok []byte) []byte {
	t := negTokenInit{MechTypes: [][]byte{mech, oidNTLMSSP}, MechToken: tok}
	return t.Append(nil)
}

func krbConfig(kt *keytab.Keytab, spns ...string) *Config {
	k := &Kerberos{Principals: mapAll{}}
	k.SetKeytab(kt, spns)
	return &Config{Kerberos: k}
}

func TestKerberosAccept(t *testing.T) {
	kt := testKeytab(t, "service-key", 1, testSPN)
	for _, mech := range [][]byte{oidMSKRB5, oidKRB5} {
		tok, subkey, _ := forge(t, apReqSpec{client: "alice", kt: kt})
		c := NewContext(krbConfig(kt, testSPN))
		out, err := c.Step(spnegoInitKRB(mech, tok))
		if err != nil {
			t.Fatalf("Step: %v (%v)", err, c.KerberosError())
		}
		var resp negTokenResp
		if err := resp.Decode(out); err != nil {
			t.Fatal(err)
		}
		if resp.NegState != negStateAcceptCompleted || !bytes.Equal(resp.SupportedMech, mech) || resp.ResponseToken != nil {
			t.Errorf("response %+v: want accept-completed, mech %x, no AP-REP", resp, mech)
		}
		res := c.Result()
		if res.User != "alice" || res.Domain != testRealm || res.Principal != "alice@"+testRealm {
			t.Errorf("result %+v", res)
		}
		// [MS-SMB2] 3.3.5.5.3: the first 16 bytes of the authenticator's subkey.
		if !bytes.Equal(res.SessionKey, subkey.KeyValue[:16]) {
			t.Errorf("session key %x, want %x", res.SessionKey, subkey.KeyValue[:16])
		}
	}
}

// TestKerberosMutual checks the AP-REP: it decrypts with the ticket's
// session key, echoes the authenticator's time, and its subkey is the
// session key ([MS-KILE] 3.1.1.2).
func TestKerberosMutual(t *testing.T) {
	kt := testKeytab(t, "service-key", 1, testSPN)
	tok, _, _ := forge(t, apReqSpec{client: "alice", kt: kt, mutual: true})
	c := NewContext(krbConfig(kt))
	out, err := c.Step(spnegoInitKRB(oidKRB5, tok))
	if err != nil {
		t.Fatalf("Step: %v (%v)", err, c.KerberosError())
	}
	var resp negTokenResp
	if err := resp.Decode(out); err != nil {
		t.Fatal(err)
	}
	id, msg, err := parseKRB5Token(resp.ResponseToken)
	if err != nil || !bytes.Equal(id, tokAPRep) {
		t.Fatalf("response token %x: %v", resp.ResponseToken, err)
	}
	var rep messages.APRep
	if err := rep.Unmarshal(msg); err != nil {
		t.Fatal(err)
	}
	// The ticket's session key, as the client knows it.
	var req messages.APReq
	_, reqMsg, _ := parseKRB5Token(tok)
	if err := req.Unmarshal(reqMsg); err != nil {
		t.Fatal(err)
	}
	if err := req.Ticket.DecryptEncPart(kt, nil); err != nil {
		t.Fatal(err)
	}
	plain, err := crypto.DecryptEncPart(rep.EncPart, req.Ticket.DecryptedEncPart.Key, keyusage.AP_REP_ENCPART)
	if err != nil {
		t.Fatal(err)
	}
	var part messages.EncAPRepPart
	if err := part.Unmarshal(plain); err != nil {
		t.Fatal(err)
	}
	if err := req.DecryptAuthenticator(req.Ticket.DecryptedEncPart.Key); err != nil {
		t.Fatal(err)
	}
	if !part.CTime.Equal(req.Authenticator.CTime) || part.Cusec != req.Authenticator.Cusec {
		t.Errorf("AP-REP time %v.%d, want %v.%d", part.CTime, part.Cusec, req.Authenticator.CTime, req.Authenticator.Cusec)
	}
	if !bytes.Equal(c.Result().SessionKey, part.Subkey.KeyValue[:16]) || bytes.Equal(part.Subkey.KeyValue, req.Authenticator.SubKey.KeyValue) {
		t.Errorf("session key %x: want the AP-REP's fresh subkey %x", c.Result().SessionKey, part.Subkey.KeyValue)
	}
}

// TestKerberosRefused: what the acceptor must refuse, and with which error.
func TestKerberosRefused(t *testing.T) {
	kt := testKeytab(t, "service-key", 1, testSPN, "cifs/other.test")
	now := time.Now().UTC()
	cases := []struct {
		name string
		spec apReqSpec
		cfg  *Config
		want error
	}{
		{"expired ticket", apReqSpec{client: "alice", kt: kt, start: now.Add(-2 * time.Hour), end: now.Add(-time.Hour)}, nil, ErrLogonFailure},
		{"ticket not yet valid", apReqSpec{client: "alice", kt: kt, start: now.Add(time.Hour), end: now.Add(2 * time.Hour)}, nil, ErrLogonFailure},
		{"another service of the keytab", apReqSpec{client: "alice", kt: kt, sname: "cifs/other.test"}, nil, ErrLogonFailure},
		{"service not in the keytab", apReqSpec{client: "alice", kt: testKeytab(t, "x", 1, "cifs/third.test"), sname: "cifs/third.test"}, krbConfig(kt), ErrLogonFailure},
		{"wrong key", apReqSpec{client: "alice", kt: testKeytab(t, "other-key", 1, testSPN)}, nil, ErrLogonFailure},
		{"stale keytab", apReqSpec{client: "alice", kt: testKeytab(t, "new-key", 2, testSPN), kvno: 2}, nil, ErrLogonFailure},
		{"clock skew", apReqSpec{client: "alice", kt: kt, skew: -10 * time.Minute}, nil, ErrClockSkew},
		{"unmapped principal", apReqSpec{client: "host/x.test", kt: kt}, nil, ErrLogonFailure},
		{"no keytab", apReqSpec{client: "alice", kt: kt}, &Config{Kerberos: &Kerberos{Principals: mapAll{}}, NoNTLM: true}, ErrNTLMBlocked},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			if cfg == nil {
				cfg = krbConfig(kt, testSPN)
			}
			tok, _, _ := forge(t, tc.spec)
			c := NewContext(cfg)
			_, err := c.Step(spnegoInitKRB(oidKRB5, tok))
			if !errors.Is(err, tc.want) {
				t.Errorf("Step: %v, want %v (kerberos: %v)", err, tc.want, c.KerberosError())
			}
		})
	}
}

// TestKerberosReplay: the same authenticator twice is refused the second
// time (KRB_AP_ERR_REPEAT, [RFC4120] 3.2.3).
func TestKerberosReplay(t *testing.T) {
	kt := testKeytab(t, "service-key", 1, testSPN)
	tok, _, _ := forge(t, apReqSpec{client: "alice", kt: kt})
	if _, err := NewContext(krbConfig(kt)).Step(spnegoInitKRB(oidKRB5, tok)); err != nil {
		t.Fatalf("first: %v", err)
	}
	c := NewContext(krbConfig(kt))
	if _, err := c.Step(spnegoInitKRB(oidKRB5, tok)); !errors.Is(err, ErrLogonFailure) {
		t.Fatalf("replay: %v, want ErrLogonFailure", err)
	}
	if e := c.KerberosError(); e == nil || !strings.Contains(e.Error(), "KRB_AP_ERR_REPEAT") {
		t.Errorf("replay refused for %v, want KRB_AP_ERR_REPEAT", e)
	}
}

// TestKerberosReplayOtherName: an authenticator replayed under another
// service name of the same key (the ticket's sname is not encrypted) is a
// replay all the same.
func TestKerberosReplayOtherName(t *testing.T) {
	kt := testKeytab(t, "service-key", 1, testSPN)
	host := kt.Entries[0]
	host.Principal.Components = []string{"host", "files.test"}
	kt.Entries = append(kt.Entries, host)
	tok, _, _ := forge(t, apReqSpec{client: "alice", kt: kt})
	if _, err := NewContext(krbConfigShared(kt)).Step(spnegoInitKRB(oidKRB5, tok)); err != nil {
		t.Fatalf("first: %v", err)
	}
	_, msg, _ := parseKRB5Token(tok)
	var req messages.APReq
	if err := req.Unmarshal(msg); err != nil {
		t.Fatal(err)
	}
	req.Ticket.SName = types.NewPrincipalName(2, "host/files.test")
	b, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	c := NewContext(krbConfigShared(kt))
	if _, err := c.Step(spnegoInitKRB(oidKRB5, appendKRB5Token(nil, tokAPReq, b))); !errors.Is(err, ErrLogonFailure) {
		t.Fatalf("replay under host/: %v (%v), want ErrLogonFailure", err, c.KerberosError())
	}
}

// sharedKerberos is one node's acceptor, for the replay tests.
var sharedKerberos = &Kerberos{Principals: mapAll{}}

func krbConfigShared(kt *keytab.Keytab) *Config {
	sharedKerberos.SetKeytab(kt, nil)
	return &Config{Kerberos: sharedKerberos}
}

// TestKerberosSecondRound: the AP-REQ in a NegTokenResp, after the client
// listed Kerberos but sent an optimistic token for another mechanism.
func TestKerberosSecondRound(t *testing.T) {
	kt := testKeytab(t, "service-key", 1, testSPN)
	c := NewContext(krbConfig(kt))
	init := negTokenInit{MechTypes: [][]byte{oidKRB5, oidNTLMSSP}}
	out, err := c.Step(init.Append(nil))
	if err != ErrMoreProcessing {
		t.Fatalf("init: %v", err)
	}
	var resp negTokenResp
	if resp.Decode(out) != nil || !bytes.Equal(resp.SupportedMech, oidKRB5) {
		t.Fatalf("init response %x", out)
	}
	tok, _, _ := forge(t, apReqSpec{client: "alice", kt: kt})
	next := negTokenResp{NegState: negStateAbsent, ResponseToken: tok}
	if _, err := c.Step(next.Append(nil)); err != nil {
		t.Fatalf("AP-REQ: %v (%v)", err, c.KerberosError())
	}
	if c.Result().User != "alice" {
		t.Errorf("user %q", c.Result().User)
	}
}

// TestNoNTLM: with NTLM switched off it is neither offered nor accepted,
// in SPNEGO or bare.
func TestNoNTLM(t *testing.T) {
	kt := testKeytab(t, "service-key", 1, testSPN)
	cfg := krbConfig(kt)
	cfg.NoNTLM = true
	cfg.Users = testUsers{"alice": "pw"}
	var init negTokenInit
	if err := init.Decode(cfg.NegTokenInit()); err != nil {
		t.Fatal(err)
	}
	if len(init.MechTypes) != 2 || !bytes.Equal(init.MechTypes[0], oidMSKRB5) || !bytes.Equal(init.MechTypes[1], oidKRB5) {
		t.Errorf("offered %x, want MS-KRB5, KRB5", init.MechTypes)
	}
	both := (&Config{Kerberos: krbConfig(kt).Kerberos}).NegTokenInit()
	if init.Decode(both) != nil || len(init.MechTypes) != 3 || !bytes.Equal(init.MechTypes[2], oidNTLMSSP) {
		t.Errorf("both: offered %x, want MS-KRB5, KRB5, NTLMSSP", init.MechTypes)
	}
	neg := NTLMNegotiate(false)
	spnego := negTokenInit{MechTypes: [][]byte{oidNTLMSSP}, MechToken: neg}
	for name, in := range map[string][]byte{"spnego": spnego.Append(nil), "raw": neg} {
		if _, err := NewContext(cfg).Step(in); !errors.Is(err, ErrNTLMBlocked) {
			t.Errorf("%s NTLMSSP: %v, want ErrNTLMBlocked", name, err)
		}
	}
}

// FuzzKerberos feeds a Kerberos acceptor arbitrary tokens: bare, as the
// optimistic token of a NegTokenInit and in a second-round NegTokenResp.
// Nothing may panic (gokrb5's decoders included); a logon (a seed's valid
// token, which every fuzzing process forges anew under the same key) is
// alice's, with a 16-byte key.
func FuzzKerberos(f *testing.F) {
	kt := keytab.New()
	if err := kt.AddEntry(testSPN, testRealm, "service-key", time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
		f.Fatal(err)
	}
	cfg := krbConfig(kt)
	tok, _, _ := forge(f, apReqSpec{client: "alice", kt: kt, mutual: true})
	f.Add(tok, uint8(0))
	f.Add(tok[:len(tok)/2], uint8(1))
	f.Add(appendKRB5Token(nil, tokAPReq, []byte{0x6e, 0x84, 0xff, 0xff, 0xff, 0xff}), uint8(2))
	f.Fuzz(func(t *testing.T, b []byte, mode uint8) {
		c := NewContext(cfg)
		var err error
		switch mode % 3 {
		case 0:
			_, err = c.Step(b)
		case 1:
			_, err = c.Step(spnegoInitKRB(oidMSKRB5, b))
		default:
			c.Step((&negTokenInit{MechTypes: [][]byte{oidKRB5}}).Append(nil))
			_, err = c.Step((&negTokenResp{NegState: negStateAbsent, ResponseToken: b}).Append(nil))
		}
		if res := c.Result(); err == nil && (res.User != "alice" || len(res.SessionKey) != 16) {
			t.Fatalf("logged on as %+v with %x", res, b)
		}
	})
}
