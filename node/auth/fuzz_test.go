package auth

import (
	"bytes"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/types"
)

// FuzzSPNEGO decodes arbitrary bytes as both SPNEGO token kinds; whatever
// decodes must re-encode to something that decodes the same.
func FuzzSPNEGO(f *testing.F) {
	f.Add(NegTokenInit())
	f.Add((&negTokenInit{MechTypes: [][]byte{oidNTLMSSP}, MechToken: []byte("NTLMSSP\x00"), MechListMIC: []byte{1}}).Append(nil))
	f.Add((&negTokenResp{NegState: 1, SupportedMech: oidNTLMSSP, ResponseToken: []byte{1, 2}, MechListMIC: make([]byte, 16)}).Append(nil))
	f.Add([]byte{0x60, 0x84, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		var init negTokenInit
		if init.Decode(b) == nil {
			var again negTokenInit
			if err := again.Decode(init.Append(nil)); err != nil {
				t.Fatalf("re-encoded NegTokenInit does not decode: %v", err)
			}
			if len(again.MechTypes) != len(init.MechTypes) || !bytes.Equal(again.MechToken, init.MechToken) {
				t.Fatalf("NegTokenInit round trip changed: %+v → %+v", init, again)
			}
		}
		var resp negTokenResp
		if resp.Decode(b) == nil && resp.NegState >= 0 && resp.NegState < 0x80 {
			var again negTokenResp
			if err := again.Decode(resp.Append(nil)); err != nil || again.NegState != resp.NegState ||
				!bytes.Equal(again.ResponseToken, resp.ResponseToken) || !bytes.Equal(again.MechListMIC, resp.MechListMIC) {
				t.Fatalf("NegTokenResp round trip: %v %+v → %+v", err, resp, again)
			}
		}
	})
}

// FuzzNTLMSSP decodes arbitrary bytes as each NTLMSSP message and walks the
// AV pairs; nothing may panic.
func FuzzNTLMSSP(f *testing.F) {
	f.Add(unhex(f, specChallengeMessage))
	f.Add(unhex(f, specAuthenticateMessage))
	neg := negotiateMessage{Flags: testClientFlags, Domain: []byte("D")}
	nb := make([]byte, neg.Size())
	neg.Encode(nb)
	f.Add(nb)
	f.Fuzz(func(t *testing.T, b []byte) {
		var n negotiateMessage
		_ = n.Decode(b)
		var c challengeMessage
		if c.Decode(b) == nil {
			avPair(c.TargetInfo, avTimestamp)
		}
		var a authenticateMessage
		if a.Decode(b) == nil && len(a.NtResponse) >= ntProofStrSize+ntlmv2ClientFixedSize {
			avPair(ntlmv2AVPairs(a.NtResponse), avFlags)
		}
		avPair(b, avFlags)
	})
}

// FuzzContext feeds a server context a valid NEGOTIATE and then arbitrary
// bytes, raw and in both SPNEGO framings.
func FuzzContext(f *testing.F) {
	f.Add(unhex(f, specAuthenticateMessage), uint8(0))
	f.Add(unhex(f, specAuthenticateMessage), uint8(1))
	f.Add([]byte{}, uint8(2))
	f.Fuzz(func(t *testing.T, b []byte, mode uint8) {
		cfg := testConfig()
		cfg.AllowAnonymous, cfg.AllowGuest = mode&4 != 0, mode&8 != 0
		c := NewContext(cfg)
		var cl testClient
		switch mode & 3 {
		case 0:
			c.Step(cl.negotiateMessage())
			c.Step(b)
		case 1:
			c.Step((&negTokenInit{MechTypes: [][]byte{oidNTLMSSP}, MechToken: cl.negotiateMessage()}).Append(nil))
			c.Step((&negTokenResp{NegState: negStateAbsent, ResponseToken: b, MechListMIC: b}).Append(nil))
		default:
			c.Step(b)
			c.Step(b)
		}
	})
}

// FuzzKerberosDCE feeds the DCE-style acceptor arbitrary first and third
// legs (a real AP-REQ among the seeds); nothing may panic, and nothing
// but the real exchange completes it.
func FuzzKerberosDCE(f *testing.F) {
	kt := keytab.New()
	if err := kt.AddEntry(testSPN, testRealm, "service-key", time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
		f.Fatal(err)
	}
	tok, _, _ := forge(f, apReqSpec{client: "alice", kt: kt, dce: true, mutual: true})
	f.Add(tok, []byte{})
	f.Add(tok, []byte{0x6f, 0x84, 0xff, 0xff, 0xff, 0xff})
	f.Add(tok[:len(tok)/2], []byte{})
	f.Fuzz(func(t *testing.T, first, third []byte) {
		k := NewKerberosDCE(krbConfig(kt)) // a replay cache of its own: the seed's AP-REQ passes each time
		if _, done, err := k.Step(first); err != nil || done {
			return
		}
		if _, done, err := k.Step(third); err == nil && done {
			t.Fatalf("a made-up third leg %x completed the exchange", third)
		}
	})
}

// FuzzCFXTokens verifies and unwraps arbitrary tokens over arbitrary
// PDUs: an error or success, never a panic, and a failed unwrap leaves
// the data as it was.
func FuzzCFXTokens(f *testing.F) {
	key := types.EncryptionKey{KeyType: etypeID.AES256_CTS_HMAC_SHA1_96, KeyValue: bytes.Repeat([]byte{7}, 32)}
	ini, err := NewCFX(key, true, true, 1, 1)
	if err != nil {
		f.Fatal(err)
	}
	data := []byte("a stub of sixteen bytes or more..")
	f.Add([]byte("hdr"), append([]byte(nil), data...), ini.WrapDCE([]byte("hdr"), append([]byte(nil), data...), nil))
	f.Add([]byte("pdu"), []byte{}, ini.MIC([]byte("pdu")))
	f.Fuzz(func(t *testing.T, pre, data, tok []byte) {
		acc, err := NewCFX(key, false, true, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		_ = acc.VerifyMIC(pre, tok)
		before := append([]byte(nil), data...)
		if acc.UnwrapDCE(pre, data, nil, tok) != nil && !bytes.Equal(before, data) {
			t.Fatal("a failed unwrap changed the data")
		}
	})
}
