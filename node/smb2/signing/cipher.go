package signing

import (
	"crypto/aes"
	"crypto/cipher"
	"fmt"
)

// NewCipher returns the AEAD for an SMB cipher id ([MS-SMB2] 2.2.3.1.2,
// 3.1.4.3): AES-CCM with an 11-byte nonce and a 16-byte tag, or AES-GCM with
// a 12-byte nonce and a 16-byte tag. The key has 16 bytes for the AES-128
// ciphers and 32 for the AES-256 ones. The AEAD is safe for concurrent use.
func NewCipher(id uint16, key []byte) (cipher.AEAD, error) {
	want := 16
	if id == AES256CCM || id == AES256GCM {
		want = 32
	}
	switch id {
	case AES128CCM, AES128GCM, AES256CCM, AES256GCM:
	default:
		return nil, fmt.Errorf("signing: unknown cipher %#04x", id)
	}
	if len(key) != want {
		return nil, fmt.Errorf("signing: %d-byte key for cipher %#04x, want %d", len(key), id, want)
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	if id == AES128CCM || id == AES256CCM {
		return newCCM(b, 11, 16)
	}
	return cipher.NewGCM(b)
}
