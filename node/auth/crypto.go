package auth

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/rc4"
	"encoding/binary"
	"strings"
	"unicode/utf16"

	"github.com/smbcluster/smbcluster/internal/nthash"
	"github.com/smbcluster/smbcluster/node/smb2/utf16le"
)

// NTHash returns the NT hash of a password: MD4(UNICODE(Passwd)), the NTOWFv1
// of [MS-NLMP] 3.3.1, which is also the key NTOWFv2 starts from.
func NTHash(password string) [16]byte {
	return nthash.Of(password)
}

// unicode encodes s as little-endian UTF-16, as NTLM puts strings on the
// wire (UNICODE() in [MS-NLMP]).
func unicode(s string) []byte { return utf16le.Append(nil, s) }

// fromUTF16le decodes little-endian UTF-16; an odd trailing byte is dropped
// and unpaired surrogates become U+FFFD.
func fromUTF16le(b []byte) string {
	u := make([]uint16, len(b)/2)
	for i := range u {
		u[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return string(utf16.Decode(u))
}

func hmacMD5(key []byte, parts ...[]byte) []byte {
	m := hmac.New(md5.New, key)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

// ntowfv2 is NTOWFv2 ([MS-NLMP] 3.3.2):
// HMAC_MD5(NTOWFv1, UNICODE(ConcatenationOf(Uppercase(User), UserDom))).
func ntowfv2(ntHash [16]byte, user, domain string) []byte {
	return hmacMD5(ntHash[:], unicode(strings.ToUpper(user)+domain))
}

// rc4K is RC4K(K, D) of [MS-NLMP] 6: a fresh RC4 keystream over D.
func rc4K(key, data []byte) []byte {
	c, _ := rc4.NewCipher(key) // callers pass 16-byte keys, which RC4 accepts
	out := make([]byte, len(data))
	c.XORKeyStream(out, data)
	return out
}

// The magic constants of SIGNKEY and SEALKEY ([MS-NLMP] 3.4.5.2, 3.4.5.3),
// each including its terminating NUL.
const (
	clientSignMagic = "session key to client-to-server signing key magic constant\x00"
	serverSignMagic = "session key to server-to-client signing key magic constant\x00"
	clientSealMagic = "session key to client-to-server sealing key magic constant\x00"
	serverSealMagic = "session key to server-to-client sealing key magic constant\x00"
)

// signKey is SIGNKEY with extended session security ([MS-NLMP] 3.4.5.2).
func signKey(exportedSessionKey []byte, clientToServer bool) []byte {
	magic := serverSignMagic
	if clientToServer {
		magic = clientSignMagic
	}
	h := md5.New()
	h.Write(exportedSessionKey)
	h.Write([]byte(magic))
	return h.Sum(nil)
}

// sealKey is SEALKEY with extended session security ([MS-NLMP] 3.4.5.3):
// the session key is cut to 128, 56 or 40 bits by the negotiated flags.
func sealKey(exportedSessionKey []byte, flags uint32, clientToServer bool) []byte {
	key := exportedSessionKey
	switch {
	case flags&negotiate128 != 0:
	case flags&negotiate56 != 0:
		key = key[:7]
	default:
		key = key[:5]
	}
	magic := serverSealMagic
	if clientToServer {
		magic = clientSealMagic
	}
	h := md5.New()
	h.Write(key)
	h.Write([]byte(magic))
	return h.Sum(nil)
}

// messageSignature computes an NTLMSSP_MESSAGE_SIGNATURE with extended session
// security ([MS-NLMP] 2.2.2.9.1, 3.4.4.2): Version 1, the first 8 bytes of
// HMAC_MD5(SigningKey, SeqNum || Message), sealed with the direction's RC4
// handle when key exchange was negotiated (seal nil otherwise), and SeqNum.
func messageSignature(signingKey []byte, seal *rc4.Cipher, seqNum uint32, msg []byte) [16]byte {
	var seq [4]byte
	binary.LittleEndian.PutUint32(seq[:], seqNum)
	sum := hmacMD5(signingKey, seq[:], msg)
	var sig [16]byte
	binary.LittleEndian.PutUint32(sig[0:], 1)
	copy(sig[4:12], sum[:8])
	if seal != nil {
		seal.XORKeyStream(sig[4:12], sig[4:12])
	}
	copy(sig[12:], seq[:])
	return sig
}

// mechListMIC returns the signature one direction puts in a SPNEGO
// mechListMIC over the DER MechTypeList, at sequence number 0 with fresh keys.
func mechListMIC(exportedSessionKey []byte, flags uint32, clientToServer bool, mechTypes []byte) [16]byte {
	var seal *rc4.Cipher
	if flags&negotiateKeyExch != 0 {
		seal, _ = rc4.NewCipher(sealKey(exportedSessionKey, flags, clientToServer))
	}
	return messageSignature(signKey(exportedSessionKey, clientToServer), seal, 0, mechTypes)
}
