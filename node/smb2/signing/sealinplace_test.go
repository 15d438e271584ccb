package signing

import (
	"bytes"
	"crypto/rand"
	"testing"
)

// TestSealInPlace: a message sealed in place opens to the same plaintext
// with every cipher, and a flipped bit is detected.
func TestSealInPlace(t *testing.T) {
	for _, id := range []uint16{AES128CCM, AES128GCM, AES256CCM, AES256GCM} {
		key := make([]byte, 16)
		if id == AES256CCM || id == AES256GCM {
			key = make([]byte, 32)
		}
		rand.Read(key)
		aead, err := NewCipher(id, key)
		if err != nil {
			t.Fatal(err)
		}
		nonces := NewNonceSource()
		for _, n := range []int{1, 80, 4096, 70000} {
			plain := make([]byte, n)
			rand.Read(plain)
			msg := make([]byte, TransformHeaderSize+n, TransformHeaderSize+n+aead.Overhead())
			copy(msg[TransformHeaderSize:], plain)
			out := SealInPlace(aead, nonces, 0x1234, msg)
			if sid, err := ParseTransformHeader(out); err != nil || sid != 0x1234 {
				t.Fatalf("cipher %d size %d: header %v sid %#x", id, n, err, sid)
			}
			got, err := Open(nil, aead, out)
			if err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("cipher %d size %d: open: %v", id, n, err)
			}
			out[len(out)-1] ^= 1
			if _, err := Open(nil, aead, out); err == nil {
				t.Fatalf("cipher %d size %d: tampered message opened", id, n)
			}
		}
	}
}
