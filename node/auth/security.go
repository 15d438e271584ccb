package auth

import (
	"crypto/hmac"
	"crypto/rc4"
	"errors"
)

// SignatureSize is the size of an NTLMSSP_MESSAGE_SIGNATURE ([MS-NLMP] 2.2.2.9.1).
const SignatureSize = 16

// ErrNoSecurity reports that an established Context offers no NTLMSSP
// message security: Kerberos, guest, anonymous, or no extended session
// security.
var ErrNoSecurity = errors.New("auth: no NTLMSSP message security for this context")

// ErrSignature reports a message whose signature does not verify.
var ErrSignature = errors.New("auth: bad NTLMSSP message signature")

// Security is the server side of NTLMSSP message integrity and
// confidentiality with extended session security ([MS-NLMP] 3.4.2–3.4.4):
// each direction has its signing key, its RC4 handle and its sequence
// number, which advance with every message. DCE/RPC uses it for
// authentication levels packet integrity and privacy. It is not safe for
// concurrent use.
type Security struct {
	flags              uint32
	sendSign, recvSign []byte
	sendSeal, recvSeal *rc4.Cipher
	sendSeq, recvSeq   uint32
}

// Security returns the message security of an NTLMSSP exchange that Step
// completed with a session key. The RC4 handles start fresh; so do the
// sequence numbers, unless SPNEGO's mechListMICs used number 0 of each
// direction, when they go on from 1 (the RC4 state is reset after the
// mechListMIC, the sequence numbers only when none was exchanged, as
// Windows and Samba do).
func (c *Context) Security() (*Security, error) {
	r := c.result
	if c.state != stateDone || r.SessionKey == nil || r.Principal != "" || c.flags&negotiateExtendedSec == 0 {
		return nil, ErrNoSecurity
	}
	s := newSecurity(r.SessionKey, c.flags, false)
	if c.micDone {
		s.sendSeq, s.recvSeq = 1, 1
	}
	return s, nil
}

// newSecurity sets up one side: the server sends server-to-client and
// receives client-to-server; client reverses them (tests).
func newSecurity(key []byte, flags uint32, client bool) *Security {
	s := &Security{
		flags:    flags,
		sendSign: signKey(key, client),
		recvSign: signKey(key, !client),
	}
	s.sendSeal, _ = rc4.NewCipher(sealKey(key, flags, client))
	s.recvSeal, _ = rc4.NewCipher(sealKey(key, flags, !client))
	return s
}

// sigSeal returns the RC4 handle that encrypts a signature's checksum, nil
// without key exchange ([MS-NLMP] 3.4.4.2).
func (s *Security) sigSeal(h *rc4.Cipher) *rc4.Cipher {
	if s.flags&negotiateKeyExch == 0 {
		return nil
	}
	return h
}

// Sign returns the signature of an outgoing message ([MS-NLMP] 3.4.3 MAC).
func (s *Security) Sign(msg []byte) [SignatureSize]byte {
	sig := messageSignature(s.sendSign, s.sigSeal(s.sendSeal), s.sendSeq, msg)
	s.sendSeq++
	return sig
}

// Verify checks the signature of an incoming message.
func (s *Security) Verify(msg, sig []byte) error {
	want := messageSignature(s.recvSign, s.sigSeal(s.recvSeal), s.recvSeq, msg)
	s.recvSeq++
	if !hmac.Equal(want[:], sig) {
		return ErrSignature
	}
	return nil
}

// Seal encrypts data in place and returns the signature of msg, which holds
// data in plain text when Seal is called ([MS-NLMP] 3.4.3 SEAL): the
// checksum is taken over the plain text, the data then encrypted, and the
// checksum after it, with one RC4 stream.
func (s *Security) Seal(data, msg []byte) [SignatureSize]byte {
	var seq [4]byte
	seq[0], seq[1], seq[2], seq[3] = byte(s.sendSeq), byte(s.sendSeq>>8), byte(s.sendSeq>>16), byte(s.sendSeq>>24)
	sum := hmacMD5(s.sendSign, seq[:], msg)
	s.sendSeal.XORKeyStream(data, data)
	sig := s.finish(sum, s.sendSeal, seq)
	s.sendSeq++
	return sig
}

// Unseal decrypts data in place and verifies sig over msg, which holds data
// (in plain text once decrypted).
func (s *Security) Unseal(data, msg, sig []byte) error {
	var seq [4]byte
	seq[0], seq[1], seq[2], seq[3] = byte(s.recvSeq), byte(s.recvSeq>>8), byte(s.recvSeq>>16), byte(s.recvSeq>>24)
	s.recvSeal.XORKeyStream(data, data)
	sum := hmacMD5(s.recvSign, seq[:], msg)
	want := s.finish(sum, s.recvSeal, seq)
	s.recvSeq++
	if !hmac.Equal(want[:], sig) {
		return ErrSignature
	}
	return nil
}

func (s *Security) finish(sum []byte, h *rc4.Cipher, seq [4]byte) [SignatureSize]byte {
	var sig [SignatureSize]byte
	sig[0] = 1
	copy(sig[4:12], sum[:8])
	if s.flags&negotiateKeyExch != 0 {
		h.XORKeyStream(sig[4:12], sig[4:12])
	}
	copy(sig[12:], seq[:])
	return sig
}

// NewClientSecurity returns the initiator's side of the message security
// of an exchange NTLMAuthenticate completed (tests and clients): flags are
// the CHALLENGE_MESSAGE's, key the ExportedSessionKey.
func NewClientSecurity(ch Challenge, exportedKey []byte) *Security {
	return newSecurity(exportedKey, ch.Flags&(initiatorFlags|negotiateKeyExch), true)
}
