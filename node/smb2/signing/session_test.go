package signing

import (
	"bytes"
	"testing"
)

// TestNewSessionSides checks that the two ends of a session mirror each
// other: what one side seals the other opens, each direction with its own
// key, and both sign alike; 2.x and cipherless sessions get no ciphers.
func TestNewSessionSides(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	preauth := bytes.Repeat([]byte{9}, 64)
	for _, cipherID := range []uint16{AES128CCM, AES128GCM, AES256CCM, AES256GCM} {
		srv, err := NewSession(Server, 0x0311, cipherID, AESGMAC, key, preauth)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := NewSession(Client, 0x0311, cipherID, AESGMAC, key, preauth)
		if err != nil {
			t.Fatal(err)
		}
		msg := bytes.Repeat([]byte("smb2"), 20)
		for _, dir := range []struct {
			name     string
			from, to *Session
		}{{"client to server", cl, srv}, {"server to client", srv, cl}} {
			sealed := Seal(nil, dir.from.Encrypter, dir.from.Nonces, 1, msg)
			got, err := Open(nil, dir.to.Decrypter, sealed)
			if err != nil || !bytes.Equal(got, msg) {
				t.Errorf("cipher %#x, %s: open = %v", cipherID, dir.name, err)
			}
			if _, err := Open(nil, dir.from.Decrypter, sealed); err == nil {
				t.Errorf("cipher %#x, %s: the sender's own decrypter opened its message", cipherID, dir.name)
			}
		}
		if srv.Signer.Sign(msg) != cl.Signer.Sign(msg) {
			t.Errorf("cipher %#x: the two sides sign differently", cipherID)
		}
	}
	for _, tc := range []struct{ dialect, cipherID uint16 }{{0x0210, 0}, {0x0210, AES128GCM}, {0x0300, 0}} {
		s, err := NewSession(Client, tc.dialect, tc.cipherID, HMACSHA256, key, nil)
		if err != nil {
			t.Fatal(err)
		}
		if s.Encrypter != nil || s.Decrypter != nil || s.Nonces != nil {
			t.Errorf("dialect %#x cipher %#x: ciphers set", tc.dialect, tc.cipherID)
		}
	}
	if _, err := NewSession(Server, 0x0311, AES128GCM, 7, key, preauth); err == nil {
		t.Error("an unknown signing algorithm was accepted")
	}
}
