package auth

import (
	"bytes"
	"testing"

	"github.com/jcmturner/gofork/encoding/asn1"
	"github.com/jcmturner/gokrb5/v8/asn1tools"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/iana/asnAppTag"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/iana/msgtype"
	"github.com/jcmturner/gokrb5/v8/messages"
)

// dceClient is the initiator's side of a DCE-style exchange: it reads
// the acceptor's raw AP-REP and builds its own ([MS-KILE] 3.4.5.1).
type dceClient struct {
	req messages.APReq
}

func newDCEClient(t *testing.T, tok []byte, spec apReqSpec) *dceClient {
	t.Helper()
	var c dceClient
	_, msg, _ := parseKRB5Token(tok)
	if err := c.req.Unmarshal(msg); err != nil {
		t.Fatal(err)
	}
	if err := c.req.Ticket.DecryptEncPart(spec.kt, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.req.DecryptAuthenticator(c.req.Ticket.DecryptedEncPart.Key); err != nil {
		t.Fatal(err)
	}
	return &c
}

// reply decrypts the acceptor's AP-REP and returns the client's AP-REP
// echoing seq (the acceptor's, unless changed).
func (c *dceClient) reply(t *testing.T, rep []byte, change func(*messages.EncAPRepPart)) (messages.EncAPRepPart, []byte) {
	t.Helper()
	var ar messages.APRep
	if err := ar.Unmarshal(rep); err != nil {
		t.Fatalf("acceptor's AP-REP %x is not a raw AP-REP: %v", rep, err)
	}
	key := c.req.Ticket.DecryptedEncPart.Key
	plain, err := crypto.DecryptEncPart(ar.EncPart, key, keyusage.AP_REP_ENCPART)
	if err != nil {
		t.Fatal(err)
	}
	var part messages.EncAPRepPart
	if err := part.Unmarshal(plain); err != nil {
		t.Fatal(err)
	}
	mine := messages.EncAPRepPart{CTime: part.CTime, Cusec: part.Cusec, SequenceNumber: part.SequenceNumber}
	if change != nil {
		change(&mine)
	}
	b, _ := asn1.Marshal(mine)
	b = asn1tools.AddASNAppTag(b, asnAppTag.EncAPRepPart)
	enc, err := crypto.GetEncryptedData(b, key, keyusage.AP_REP_ENCPART, 0)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := asn1.Marshal(messages.APRep{PVNO: 5, MsgType: msgtype.KRB_AP_REP, EncPart: enc})
	return part, asn1tools.AddASNAppTag(out, asnAppTag.APREP)
}

// TestKerberosDCE: the three legs, then per-message tokens both ways with
// the acceptor's subkey and the sequence numbers of the exchange.
func TestKerberosDCE(t *testing.T) {
	kt := testKeytab(t, "service-key", 1, testSPN)
	spec := apReqSpec{client: "alice", kt: kt, dce: true, mutual: true}
	tok, _, _ := forge(t, spec)
	cl := newDCEClient(t, tok, spec)
	for _, raw := range []bool{false, true} {
		in := tok
		if raw { // a fresh authenticator, sent without the GSS-API framing
			tok, _, _ = forge(t, spec)
			cl = newDCEClient(t, tok, spec)
			_, in, _ = parseKRB5Token(tok)
		}
		k := NewKerberosDCE(krbConfig(kt, testSPN))
		rep, done, err := k.Step(in)
		if err != nil || done {
			t.Fatalf("AP-REQ (raw %v): done %v, %v (%v)", raw, done, err, k.KerberosError())
		}
		part, mine := cl.reply(t, rep, nil)
		if _, err := k.CFX(); err == nil {
			t.Fatal("per-message tokens before the client's AP-REP")
		}
		out, done, err := k.Step(mine)
		if err != nil || !done || out != nil {
			t.Fatalf("client AP-REP: out %x, done %v, %v (%v)", out, done, err, k.KerberosError())
		}
		if r := k.Result(); r.User != "alice" || r.Principal != "alice@"+testRealm {
			t.Errorf("result %+v", r)
		}
		acc, err := k.CFX()
		if err != nil {
			t.Fatal(err)
		}
		ini, err := NewCFX(part.Subkey, true, true, uint64(cl.req.Authenticator.SeqNumber), uint64(part.SequenceNumber))
		if err != nil {
			t.Fatal(err)
		}
		pre, post := []byte("header"), []byte("trailer")
		for i := 0; i < 3; i++ {
			data := bytes.Repeat([]byte{byte(i)}, 32)
			sig := ini.WrapDCE(pre, data, post)
			if err := acc.UnwrapDCE(pre, data, post, sig); err != nil || !bytes.Equal(data, bytes.Repeat([]byte{byte(i)}, 32)) {
				t.Fatalf("request %d: %v", i, err)
			}
			mic := acc.MIC(data)
			if err := ini.VerifyMIC(data, mic); err != nil {
				t.Fatalf("response %d: %v", i, err)
			}
		}
	}
}

// TestKerberosDCERefused: the client's AP-REP must decrypt with the
// ticket's session key and echo the acceptor's sequence number.
func TestKerberosDCERefused(t *testing.T) {
	kt := testKeytab(t, "service-key", 1, testSPN)
	spec := apReqSpec{client: "alice", kt: kt, dce: true, mutual: true}
	for name, change := range map[string]func(*messages.EncAPRepPart){
		"sequence": func(p *messages.EncAPRepPart) { p.SequenceNumber++ },
	} {
		tok, _, _ := forge(t, spec)
		cl := newDCEClient(t, tok, spec)
		k := NewKerberosDCE(krbConfig(kt))
		rep, _, err := k.Step(tok)
		if err != nil {
			t.Fatal(err)
		}
		_, mine := cl.reply(t, rep, change)
		if _, done, err := k.Step(mine); err == nil || done {
			t.Errorf("%s: accepted", name)
		}
	}
	tok, _, _ := forge(t, spec)
	k := NewKerberosDCE(krbConfig(kt))
	rep, _, err := k.Step(tok)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := k.Step(rep); err == nil {
		t.Error("the acceptor's own AP-REP was accepted reflected")
	}
	if _, _, err := NewKerberosDCE(krbConfig(kt)).Step([]byte{0x6e, 0x03, 0x01, 0x02}); err == nil {
		t.Error("garbage accepted as an AP-REQ")
	}
	// Not DCE style: the framed AP-REP completes the context at once.
	tok, _, _ = forge(t, apReqSpec{client: "alice", kt: kt, mutual: true})
	k = NewKerberosDCE(krbConfig(kt))
	out, done, err := k.Step(tok)
	if err != nil || !done || !isKRB5Token(out) {
		t.Errorf("non-DCE AP-REQ: done %v, %v, out %x", done, err, out)
	}
}

// TestSPNEGODCE: Kerberos in SPNEGO for DCE/RPC — the AP-REP in an
// accept-incomplete NegTokenResp, then the client's AP-REP with its
// mechListMIC answered by accept-completed and the acceptor's.
func TestSPNEGODCE(t *testing.T) {
	kt := testKeytab(t, "service-key", 1, testSPN)
	spec := apReqSpec{client: "alice", kt: kt, dce: true, mutual: true}
	tok, _, _ := forge(t, spec)
	cl := newDCEClient(t, tok, spec)
	init := spnegoInitKRB(oidKRB5, tok)
	if SPNEGOKerberosDCE(krbConfig(kt), spnegoInitKRB(oidNTLMSSP, []byte("NTLMSSP\x00"))) != nil {
		t.Fatal("an NTLMSSP NegTokenInit taken for Kerberos")
	}
	s := SPNEGOKerberosDCE(krbConfig(kt), init)
	if s == nil {
		t.Fatal("Kerberos NegTokenInit not taken")
	}
	out, done, err := s.Step(init)
	if err != nil || done {
		t.Fatalf("NegTokenInit: %v, done %v", err, done)
	}
	var resp negTokenResp
	if err := resp.Decode(out); err != nil || resp.NegState != negStateAcceptIncomplete || !bytes.Equal(resp.SupportedMech, oidKRB5) {
		t.Fatalf("response %+v: %v", resp, err)
	}
	part, mine := cl.reply(t, resp.ResponseToken, nil)
	ini, _ := NewCFX(part.Subkey, true, true, uint64(cl.req.Authenticator.SeqNumber), uint64(part.SequenceNumber))
	var it negTokenInit
	it.Decode(init)
	r := negTokenResp{NegState: negStateAcceptIncomplete, ResponseToken: mine, MechListMIC: ini.MIC(it.MechTypesDER)}
	out, done, err = s.Step(r.Append(nil))
	if err != nil || !done {
		t.Fatalf("NegTokenResp: %v, done %v", err, done)
	}
	if err := resp.Decode(out); err != nil || resp.NegState != negStateAcceptCompleted {
		t.Fatalf("final %+v: %v", resp, err)
	}
	if err := ini.VerifyMIC(it.MechTypesDER, resp.MechListMIC); err != nil {
		t.Fatalf("acceptor's mechListMIC: %v", err)
	}
	acc, _ := s.CFX()
	data := []byte("0123456789abcdef")
	if err := acc.VerifyMIC(data, ini.MIC(data)); err != nil {
		t.Fatalf("first request after the mechListMIC: %v", err)
	}
	// A bad mechListMIC is refused.
	tok, _, _ = forge(t, spec)
	cl = newDCEClient(t, tok, spec)
	init = spnegoInitKRB(oidKRB5, tok)
	s = SPNEGOKerberosDCE(krbConfig(kt), init)
	out, _, _ = s.Step(init)
	resp.Decode(out)
	_, mine = cl.reply(t, resp.ResponseToken, nil)
	r = negTokenResp{NegState: negStateAcceptIncomplete, ResponseToken: mine, MechListMIC: ini.MIC([]byte("other mechs"))}
	if _, done, err := s.Step(r.Append(nil)); err == nil || done {
		t.Error("a bad mechListMIC accepted")
	}
}
