package auth

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// TestInitiatorNTLMv2Vectors checks the initiator against [MS-NLMP]
// 4.2.4.1.3 (temp), 4.2.4.2.2 (NTProofStr), 4.2.4.1.2 (SessionBaseKey) and
// 4.2.4.2.3 (EncryptedRandomSessionKey).
func TestInitiatorNTLMv2Vectors(t *testing.T) {
	var av []byte
	av = appendAVPair(av, avNbDomainName, unicode("Domain"))
	av = appendAVPair(av, avNbComputerName, unicode("Server"))
	av = appendAVPair(av, avEOL, nil)
	server := [8]byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}
	client := [8]byte{0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa}
	nt, base := ntlmv2Response(NTHash("Password"), "User", "Domain", server, client, 0, av)
	if got, want := hex.EncodeToString(nt[:16]), "68cd0ab851e51c96aabc927bebef6a1c"; got != want {
		t.Errorf("NTProofStr = %s, want %s", got, want)
	}
	if got, want := hex.EncodeToString(base), "8de40ccadbc14a82f15cb0ad0de95ca3"; got != want {
		t.Errorf("SessionBaseKey = %s, want %s", got, want)
	}
	enc := rc4K(base, bytes.Repeat([]byte{0x55}, 16))
	if got, want := hex.EncodeToString(enc), "c5dad2544fc9799094ce1ce90bc9d03e"; got != want {
		t.Errorf("EncryptedRandomSessionKey = %s, want %s", got, want)
	}
}

// FuzzParseChallenge: the CHALLENGE_MESSAGE decoder never panics.
func FuzzParseChallenge(f *testing.F) {
	f.Add([]byte("NTLMSSP\x00\x02\x00\x00\x00" + string(make([]byte, 40))))
	f.Fuzz(func(t *testing.T, b []byte) {
		ch, err := ParseChallenge(b)
		if err == nil {
			challengeTimestamp(ch.TargetInfo)
		}
	})
}
