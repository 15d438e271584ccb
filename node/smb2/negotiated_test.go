package smb2

import (
	"errors"
	"testing"
)

// TestNegotiated checks a client's reading of each dialect's NEGOTIATE
// response ([MS-SMB2] 3.2.5.2) and the refusal of a 3.1.1 context that
// names more than one algorithm.
func TestNegotiated(t *testing.T) {
	enc := func(ids ...uint16) NegotiateContext {
		return NegotiateContext{Type: EncryptionCapabilities, Data: (&EncryptionCaps{Ciphers: ids}).Append(nil)}
	}
	sig := func(ids ...uint16) NegotiateContext {
		return NegotiateContext{Type: SigningCapabilities, Data: (&SigningCaps{Algorithms: ids}).Append(nil)}
	}
	for _, tc := range []struct {
		name        string
		resp        NegotiateResponse
		alg, cipher uint16
	}{
		{"2.1", NegotiateResponse{DialectRevision: Dialect210, Capabilities: CapEncryption}, SigningHMACSHA256, 0},
		{"3.0 without encryption", NegotiateResponse{DialectRevision: Dialect300}, SigningAESCMAC, 0},
		{"3.0.2 with encryption", NegotiateResponse{DialectRevision: Dialect302, Capabilities: CapEncryption}, SigningAESCMAC, CipherAES128CCM},
		{"3.1.1 without contexts", NegotiateResponse{DialectRevision: Dialect311}, SigningAESCMAC, 0},
		{"3.1.1 GMAC and GCM", NegotiateResponse{DialectRevision: Dialect311, Contexts: []NegotiateContext{enc(CipherAES256GCM), sig(SigningAESGMAC)}}, SigningAESGMAC, CipherAES256GCM},
	} {
		alg, cipher, err := tc.resp.Negotiated()
		if err != nil || alg != tc.alg || cipher != tc.cipher {
			t.Errorf("%s: %#x, %#x, %v; want %#x, %#x", tc.name, alg, cipher, err, tc.alg, tc.cipher)
		}
	}
	for _, ctx := range []NegotiateContext{enc(CipherAES128GCM, CipherAES128CCM), sig(), {Type: SigningCapabilities, Data: []byte{1}}} {
		r := NegotiateResponse{DialectRevision: Dialect311, Contexts: []NegotiateContext{ctx}}
		if _, _, err := r.Negotiated(); !errors.Is(err, ErrMalformed) {
			t.Errorf("context %x: %v, want ErrMalformed", ctx.Data, err)
		}
	}
	if DialectName(Dialect311) != "3.1.1" || DialectName(Dialect210) != "2.1" || DialectName(0x02ff) != "0x02ff" {
		t.Error("DialectName")
	}
}
