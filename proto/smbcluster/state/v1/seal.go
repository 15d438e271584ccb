package statev1

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
)

// MinSecretLen is the shortest cluster secret accepted, in bytes.
const MinSecretLen = 32

// ErrSealedOpen reports a sealed value that does not open: another cluster
// secret sealed it, it was stored under another key, or it was altered.
var ErrSealedOpen = errors.New("statev1: sealed value does not open with this cluster secret")

// Sealer seals secrets kept in etcd (NT hashes, session keys) with the
// cluster secret: AES-256-GCM under a key derived from the secret, a random
// nonce per seal, and the record's etcd key as additional authenticated
// data.
type Sealer struct {
	aead  cipher.AEAD
	keyID string
}

// NewSealer derives the sealing key from secret (at least MinSecretLen
// bytes) as HMAC-SHA256(secret, "smbcluster seal v1").
func NewSealer(secret []byte) (*Sealer, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("statev1: cluster secret is %d bytes, need at least %d (e.g. `head -c 32 /dev/urandom | base64`)", len(secret), MinSecretLen)
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("smbcluster seal v1"))
	key := mac.Sum(nil)
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	id := sha256.Sum256(key)
	return &Sealer{aead: aead, keyID: hex.EncodeToString(id[:8])}, nil
}

// LoadSecretFile reads a cluster secret from path, without surrounding
// white space.
func LoadSecretFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cluster secret: %w", err)
	}
	b = bytes.TrimSpace(b)
	if len(b) < MinSecretLen {
		return nil, fmt.Errorf("cluster secret %s: %d bytes, need at least %d", path, len(b), MinSecretLen)
	}
	return b, nil
}

// GenerateSecret returns a fresh cluster secret (64 hex digits), for
// development setups that create one on first start.
func GenerateSecret() []byte {
	var b [32]byte
	rand.Read(b[:])
	return []byte(hex.EncodeToString(b[:]))
}

// KeyID names the derived key; Sealed.KeyId carries it.
func (s *Sealer) KeyID() string { return s.keyID }

// Seal encrypts plaintext for storage under etcd key key.
func (s *Sealer) Seal(plaintext []byte, key string) *Sealed {
	nonce := make([]byte, s.aead.NonceSize())
	rand.Read(nonce)
	return &Sealed{
		KeyId:      s.keyID,
		Nonce:      nonce,
		Ciphertext: s.aead.Seal(nil, nonce, plaintext, []byte(key)),
	}
}

// Open decrypts a value Seal sealed for etcd key key.
func (s *Sealer) Open(v *Sealed, key string) ([]byte, error) {
	if v == nil || len(v.Nonce) != s.aead.NonceSize() {
		return nil, ErrSealedOpen
	}
	if v.KeyId != "" && v.KeyId != s.keyID {
		return nil, fmt.Errorf("%w (sealed by key %s, have %s)", ErrSealedOpen, v.KeyId, s.keyID)
	}
	pt, err := s.aead.Open(nil, v.Nonce, v.Ciphertext, []byte(key))
	if err != nil {
		return nil, ErrSealedOpen
	}
	return pt, nil
}
