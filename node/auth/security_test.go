package auth

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// TestSecurityVector checks SEAL against [MS-NLMP] 4.2.4.4: NTLMv2 with
// extended session security and key exchange, the client sealing
// "Plaintext" with sequence number 0.
func TestSecurityVector(t *testing.T) {
	flags := uint32(negotiateKeyExch | negotiate56 | negotiate128 | negotiateVersion | negotiateTargetInfo |
		negotiateExtendedSec | targetTypeServer | negotiateAlwaysSign | negotiateNTLM | negotiateSeal |
		negotiateSign | negotiateOEM | negotiateUnicode)
	client := newSecurity(bytes.Repeat([]byte{0x55}, 16), flags, true)
	msg := unicode("Plaintext")
	plain := bytes.Clone(msg)
	sig := client.Seal(msg, plain)
	if got, want := hex.EncodeToString(msg), "54e50165bf1936dc996020c1811b0f06fb5f"; got != want {
		t.Errorf("sealed %s, want %s", got, want)
	}
	if got, want := hex.EncodeToString(sig[:]), "010000007fb38ec5c55d497600000000"; got != want {
		t.Errorf("signature %s, want %s", got, want)
	}
}

// TestSecurityRoundTrip runs both directions, signed and sealed, through a
// client and a server Security of one session key.
func TestSecurityRoundTrip(t *testing.T) {
	for _, keyExch := range []bool{false, true} {
		flags := uint32(negotiateExtendedSec | negotiate128 | negotiateSign | negotiateSeal)
		if keyExch {
			flags |= negotiateKeyExch
		}
		key := bytes.Repeat([]byte{7}, 16)
		client, server := newSecurity(key, flags, true), newSecurity(key, flags, false)
		for i := range 3 {
			msg := []byte("header|payload of message")
			data := msg[7:]
			sig := client.Seal(data, bytes.Clone(msg))
			if bytes.Contains(msg, []byte("payload")) {
				t.Fatal("not encrypted")
			}
			// The signature covers the plain text: the receiver decrypts in
			// place, then checks the whole message.
			if err := server.Unseal(data, msg, sig[:]); err != nil || string(msg) != "header|payload of message" {
				t.Fatalf("round %d keyExch %v: unseal %v %q", i, keyExch, err, msg)
			}
			s := server.Sign(msg)
			if err := client.Verify(msg, s[:]); err != nil {
				t.Fatalf("round %d: verify %v", i, err)
			}
			s = server.Sign(msg)
			s[5] ^= 1
			if client.Verify(msg, s[:]) == nil {
				t.Fatal("tampered signature verified")
			}
			client = newSecurity(key, flags, true)
			server = newSecurity(key, flags, false)
		}
	}
}
