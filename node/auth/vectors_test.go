package auth

import (
	"bytes"
	"crypto/rc4"
	"encoding/hex"
	"testing"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Common values of [MS-NLMP] 4.2.1.
var (
	specServerChallenge  = []byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}
	specClientChallenge  = bytes.Repeat([]byte{0xaa}, 8)
	specRandomSessionKey = bytes.Repeat([]byte{0x55}, 16)
)

// specTemp is "temp" of [MS-NLMP] 4.2.4.1.3: Time 0, the client challenge and
// the AV pairs NbDomainName "Domain", NbComputerName "Server".
func specTemp() []byte {
	var av []byte
	av = appendAVPair(av, avNbDomainName, unicode("Domain"))
	av = appendAVPair(av, avNbComputerName, unicode("Server"))
	av = appendAVPair(av, avEOL, nil)
	temp := []byte{1, 1, 0, 0, 0, 0, 0, 0}
	temp = append(temp, make([]byte, 8)...) // Time
	temp = append(temp, specClientChallenge...)
	temp = append(temp, 0, 0, 0, 0)
	temp = append(temp, av...)
	return append(temp, 0, 0, 0, 0)
}

// TestNTLMv2Vectors checks [MS-NLMP] 4.2.2.1.2 (NTOWFv1) and 4.2.4.1–4.2.4.2.
func TestNTLMv2Vectors(t *testing.T) {
	nt := NTHash("Password")
	if got, want := nt[:], unhex(t, "a4f49c406510bdcab6824ee7c30fd852"); !bytes.Equal(got, want) {
		t.Errorf("NTOWFv1 = %x, want %x", got, want)
	}
	key := ntowfv2(nt, "User", "Domain")
	check := func(name string, got []byte, want string) {
		t.Helper()
		if !bytes.Equal(got, unhex(t, want)) {
			t.Errorf("%s = %x, want %s", name, got, want)
		}
	}
	check("NTOWFv2 (4.2.4.1.1)", key, "0c868a403bfd7a93a3001ef22ef02e3f")
	check("LMv2 response (4.2.4.2.1)", hmacMD5(key, specServerChallenge, specClientChallenge), "86c35097ac9cec102554764a57cccc19")
	proof := hmacMD5(key, specServerChallenge, specTemp())
	check("NTProofStr (4.2.4.2.2)", proof, "68cd0ab851e51c96aabc927bebef6a1c")
	base := hmacMD5(key, proof)
	check("SessionBaseKey (4.2.4.1.2)", base, "8de40ccadbc14a82f15cb0ad0de95ca3")
	check("EncryptedRandomSessionKey (4.2.4.2.3)", rc4K(base, specRandomSessionKey), "c5dad2544fc9799094ce1ce90bc9d03e")
}

// TestGSSWrapExVector checks the sealing and signing of [MS-NLMP] 4.2.4.4.
func TestGSSWrapExVector(t *testing.T) {
	const flags = negotiateExtendedSec | negotiateKeyExch | negotiate128 | negotiate56
	sk := sealKey(specRandomSessionKey, flags, true)
	if want := unhex(t, "59f600973cc4960a25480a7c196e4c58"); !bytes.Equal(sk, want) {
		t.Errorf("SEALKEY = %x, want %x", sk, want)
	}
	gk := signKey(specRandomSessionKey, true)
	if want := unhex(t, "4788dc861b4782f35d43fd98fe1a2d39"); !bytes.Equal(gk, want) {
		t.Errorf("SIGNKEY = %x, want %x", gk, want)
	}
	plain := unicode("Plaintext")
	seal, _ := rc4.NewCipher(sk)
	data := make([]byte, len(plain))
	seal.XORKeyStream(data, plain)
	if want := unhex(t, "54e50165bf1936dc996020c1811b0f06fb5f"); !bytes.Equal(data, want) {
		t.Errorf("sealed data = %x, want %x", data, want)
	}
	if sum := hmacMD5(gk, []byte{0, 0, 0, 0}, plain)[:8]; !bytes.Equal(sum, unhex(t, "70352851f2564309")) {
		t.Errorf("checksum = %x, want 70352851f2564309", sum)
	}
	sig := messageSignature(gk, seal, 0, plain)
	if want := unhex(t, "010000007fb38ec5c55d497600000000"); !bytes.Equal(sig[:], want) {
		t.Errorf("signature = %x, want %x", sig, want)
	}
}

// Messages of [MS-NLMP] 4.2.4.3.
const (
	specChallengeMessage = "4e544c4d53535000020000000c000c003800000033828ae20123456789abcdef" +
		"00000000000000002400240044000000060070170000000f5300650072007600" +
		"6500720002000c0044006f006d00610069006e0001000c005300650072007600" +
		"6500720000000000"
	specAuthenticateMessage = "4e544c4d5353500003000000180018006c00000054005400840000000c000c00" +
		"480000000800080054000000100010005c00000010001000d8000000358288e2" +
		"0501280a0000000f44006f006d00610069006e00550073006500720043004f00" +
		"4d005000550054004500520086c35097ac9cec102554764a57cccc19aaaaaaaa" +
		"aaaaaaaa68cd0ab851e51c96aabc927bebef6a1c010100000000000000000000" +
		"00000000aaaaaaaaaaaaaaaa0000000002000c0044006f006d00610069006e00" +
		"01000c005300650072007600650072000000000000000000c5dad2544fc97990" +
		"94ce1ce90bc9d03e"
)

func TestSpecChallengeMessage(t *testing.T) {
	msg := unhex(t, specChallengeMessage)
	var ch challengeMessage
	if err := ch.Decode(msg); err != nil {
		t.Fatal(err)
	}
	if ch.Flags != 0xe28a8233 || fromUTF16le(ch.TargetName) != "Server" || !bytes.Equal(ch.ServerChallenge[:], specServerChallenge) {
		t.Errorf("decoded %+v", ch)
	}
	if v, ok, err := avPair(ch.TargetInfo, avNbDomainName); !ok || err != nil || fromUTF16le(v) != "Domain" {
		t.Errorf("NbDomainName = %q %v %v", v, ok, err)
	}
	out := make([]byte, ch.Size())
	ch.Encode(out)
	if !bytes.Equal(out, msg) {
		t.Errorf("re-encoded\n%x\nwant\n%x", out, msg)
	}
}

// TestSpecAuthenticateMessage runs the server over the AUTHENTICATE_MESSAGE
// of [MS-NLMP] 4.2.4.3 and expects RandomSessionKey as the session key.
func TestSpecAuthenticateMessage(t *testing.T) {
	cfg := &Config{
		Users: testUsers{"user": "Password"},
		Rand:  bytes.NewReader(specServerChallenge),
	}
	c := NewContext(cfg)
	neg := negotiateMessage{Flags: 0xe2888235}
	negMsg := make([]byte, neg.Size())
	neg.Encode(negMsg)
	if _, err := c.Step(negMsg); err != ErrMoreProcessing {
		t.Fatalf("NEGOTIATE: %v", err)
	}
	out, err := c.Step(unhex(t, specAuthenticateMessage))
	if err != nil || out != nil {
		t.Fatalf("AUTHENTICATE: %x, %v", out, err)
	}
	r := c.Result()
	if r.User != "User" || r.Domain != "Domain" || r.Workstation != "COMPUTER" || r.Guest || r.Anonymous {
		t.Errorf("result %+v", r)
	}
	if !bytes.Equal(r.SessionKey, specRandomSessionKey) {
		t.Errorf("session key %x, want %x", r.SessionKey, specRandomSessionKey)
	}
}

// TestTruncatedPrefixes: no strict prefix of a message decodes.
func TestTruncatedPrefixes(t *testing.T) {
	resp := (&negTokenResp{NegState: 1, SupportedMech: oidNTLMSSP, ResponseToken: []byte("tok"), MechListMIC: make([]byte, 16)}).Append(nil)
	for name, tc := range map[string]struct {
		msg    []byte
		decode func([]byte) error
	}{
		"NegTokenInit2":        {NegTokenInit(), func(b []byte) error { return new(negTokenInit).Decode(b) }},
		"NegTokenResp":         {resp, func(b []byte) error { return new(negTokenResp).Decode(b) }},
		"CHALLENGE_MESSAGE":    {unhex(t, specChallengeMessage), func(b []byte) error { return new(challengeMessage).Decode(b) }},
		"AUTHENTICATE_MESSAGE": {unhex(t, specAuthenticateMessage), func(b []byte) error { return new(authenticateMessage).Decode(b) }},
	} {
		if err := tc.decode(tc.msg); err != nil {
			t.Fatalf("%s: whole message: %v", name, err)
		}
		for n := range len(tc.msg) {
			if tc.decode(tc.msg[:n]) == nil {
				t.Errorf("%s: %d-byte prefix decodes", name, n)
			}
		}
	}
}
