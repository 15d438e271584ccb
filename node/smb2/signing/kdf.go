package signing

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
)

// Signing algorithm ids ([MS-SMB2] 2.2.3.1.7).
const (
	HMACSHA256 uint16 = 0
	AESCMAC    uint16 = 1
	AESGMAC    uint16 = 2
)

// Cipher ids ([MS-SMB2] 2.2.3.1.2).
const (
	AES128CCM uint16 = 1
	AES128GCM uint16 = 2
	AES256CCM uint16 = 3
	AES256GCM uint16 = 4
)

// Dialects that change key derivation ([MS-SMB2] 2.2.3).
const (
	dialect300 uint16 = 0x0300
	dialect311 uint16 = 0x0311
)

// KDF is the SP800-108 KDF in counter mode with HMAC-SHA256 as PRF and r=32,
// as [MS-SMB2] 3.1.4.2 uses it: the i-th block is
// HMAC-SHA256(key, [i]32 || label || 0x00 || context || [bits]32), big endian.
// label and context are used as given: the SMB labels include their
// terminating NUL ("SMB2AESCMAC\x00"), which SessionKeys supplies. bits must
// be a positive multiple of 8; the result has bits/8 bytes.
func KDF(key, label, context []byte, bits int) []byte {
	out := make([]byte, 0, bits/8+sha256.Size)
	var word [4]byte
	mac := hmac.New(sha256.New, key)
	for i := uint32(1); len(out) < bits/8; i++ {
		mac.Reset()
		binary.BigEndian.PutUint32(word[:], i)
		mac.Write(word[:])
		mac.Write(label)
		mac.Write([]byte{0})
		mac.Write(context)
		binary.BigEndian.PutUint32(word[:], uint32(bits))
		mac.Write(word[:])
		out = mac.Sum(out)
	}
	return out[:bits/8]
}

// Keys are the keys of one session ([MS-SMB2] 3.3.1.8 Session.SigningKey,
// Session.DecryptionKey, Session.EncryptionKey, Session.ApplicationKey),
// named from the server's point of view.
type Keys struct {
	Signing     []byte // signs messages; Channel.SigningKey of the first channel
	ServerIn    []byte // client-to-server: the server decrypts with it (Session.DecryptionKey)
	ServerOut   []byte // server-to-client: the server encrypts with it (Session.EncryptionKey)
	Application []byte // handed to applications such as RPC (Session.ApplicationKey)
}

// SessionKeys derives the keys of a session ([MS-SMB2] 3.3.5.5.3, 3.2.5.3.1).
//
// sessionKey is the full cryptographic key from authentication
// (Session.FullSessionKey); Session.SessionKey is its first 16 bytes, right
// padded with zeros. Signing and application keys always derive from
// Session.SessionKey with L=128. For the 2.x dialects the signing key (and
// the application key) is Session.SessionKey itself and there are no
// encryption keys. For 3.0 and 3.0.2 the labels are the fixed
// "SMB2AESCMAC"/"SmbSign", "SMB2AESCCM"/"ServerIn "/"ServerOut" and
// "SMB2APP"/"SmbRpc"; for 3.1.1 they are "SMBSigningKey", "SMBC2SCipherKey",
// "SMBS2CCipherKey" and "SMBAppKey" with preauthHash as context, and for the
// AES-256 ciphers the two cipher keys derive from the full session key with
// L=256.
func SessionKeys(dialect uint16, cipher uint16, sessionKey []byte, preauthHash []byte) Keys {
	key16 := make([]byte, 16)
	copy(key16, sessionKey)
	switch {
	case dialect < dialect300:
		return Keys{Signing: key16, Application: append([]byte(nil), key16...)}
	case dialect < dialect311:
		return Keys{
			Signing:     KDF(key16, []byte("SMB2AESCMAC\x00"), []byte("SmbSign\x00"), 128),
			ServerIn:    KDF(key16, []byte("SMB2AESCCM\x00"), []byte("ServerIn \x00"), 128),
			ServerOut:   KDF(key16, []byte("SMB2AESCCM\x00"), []byte("ServerOut\x00"), 128),
			Application: KDF(key16, []byte("SMB2APP\x00"), []byte("SmbRpc\x00"), 128),
		}
	}
	cipherKey, bits := key16, 128
	if cipher == AES256CCM || cipher == AES256GCM {
		cipherKey, bits = sessionKey, 256
	}
	return Keys{
		Signing:     KDF(key16, []byte("SMBSigningKey\x00"), preauthHash, 128),
		ServerIn:    KDF(cipherKey, []byte("SMBC2SCipherKey\x00"), preauthHash, bits),
		ServerOut:   KDF(cipherKey, []byte("SMBS2CCipherKey\x00"), preauthHash, bits),
		Application: KDF(key16, []byte("SMBAppKey\x00"), preauthHash, 128),
	}
}
