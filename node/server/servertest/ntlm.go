package servertest

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/rand"
	"crypto/rc4"
	"encoding/binary"
	"errors"
	"strings"
	"unicode/utf16"
)

// NTLMSSP negotiate flags the initiator asks for ([MS-NLMP] 2.2.2.5).
const (
	ntlmUnicode      = 0x00000001
	ntlmRequestTgt   = 0x00000004
	ntlmSign         = 0x00000010
	ntlmSeal         = 0x00000020
	ntlmNTLM         = 0x00000200
	ntlmAlwaysSign   = 0x00008000
	ntlmExtendedSec  = 0x00080000
	ntlmTargetInfo   = 0x00800000
	ntlm128          = 0x20000000
	ntlmKeyExch      = 0x40000000
	ntlm56           = 0x80000000
	ntlmClientFlags  = ntlmUnicode | ntlmRequestTgt | ntlmSign | ntlmSeal | ntlmNTLM | ntlmAlwaysSign | ntlmExtendedSec | ntlmTargetInfo | ntlm128 | ntlm56
	ntlmHeaderSize   = 12
	ntlmNegotiateLen = 32
	ntlmAuthFixed    = 64
)

var ntlmSignature = []byte("NTLMSSP\x00")

var errChallenge = errors.New("servertest: malformed NTLMSSP CHALLENGE_MESSAGE")

// ntlmNegotiate returns a NEGOTIATE_MESSAGE ([MS-NLMP] 2.2.1.1) without
// domain, workstation or version.
func ntlmNegotiate(keyExch bool) []byte {
	b := make([]byte, ntlmNegotiateLen)
	copy(b, ntlmSignature)
	binary.LittleEndian.PutUint32(b[8:], 1)
	flags := uint32(ntlmClientFlags)
	if keyExch {
		flags |= ntlmKeyExch
	}
	binary.LittleEndian.PutUint32(b[12:], flags)
	return b
}

// challenge is the part of a CHALLENGE_MESSAGE ([MS-NLMP] 2.2.1.2) the
// initiator uses.
type challenge struct {
	Flags           uint32
	ServerChallenge [8]byte
	TargetInfo      []byte
}

// parseChallenge decodes a CHALLENGE_MESSAGE, checking every field against msg.
func parseChallenge(msg []byte) (challenge, error) {
	var c challenge
	if len(msg) < 48 || string(msg[:8]) != string(ntlmSignature) || binary.LittleEndian.Uint32(msg[8:]) != 2 {
		return c, errChallenge
	}
	c.Flags = binary.LittleEndian.Uint32(msg[20:])
	copy(c.ServerChallenge[:], msg[24:32])
	n := int(binary.LittleEndian.Uint16(msg[40:]))
	off := int(binary.LittleEndian.Uint32(msg[44:]))
	if n > 0 {
		if off < 48 || off > len(msg) || n > len(msg)-off {
			return c, errChallenge
		}
		c.TargetInfo = msg[off : off+n : off+n]
	}
	return c, nil
}

// ntlmv2 computes NTLMv2_RESPONSE and SessionBaseKey ([MS-NLMP] 3.3.2) for
// a client challenge and timestamp.
func ntlmv2(ntHash [16]byte, user, domain string, serverChallenge [8]byte, clientChallenge [8]byte, time uint64, targetInfo []byte) (ntResponse, sessionBaseKey []byte) {
	key := hmacMD5(ntHash[:], utf16le(strings.ToUpper(user)+domain)) // NTOWFv2
	temp := []byte{1, 1, 0, 0, 0, 0, 0, 0}
	temp = binary.LittleEndian.AppendUint64(temp, time)
	temp = append(temp, clientChallenge[:]...)
	temp = append(temp, 0, 0, 0, 0)
	temp = append(temp, targetInfo...)
	temp = append(temp, 0, 0, 0, 0)
	proof := hmacMD5(key, serverChallenge[:], temp)
	return append(proof, temp...), hmacMD5(key, proof)
}

// ntlmAuthenticate answers a challenge with an AUTHENTICATE_MESSAGE
// ([MS-NLMP] 3.1.5.1.2) and returns it with the ExportedSessionKey. The
// message carries no MIC.
func ntlmAuthenticate(ch challenge, user, domain string, ntHash [16]byte) (msg, exportedKey []byte) {
	var cc [8]byte
	rand.Read(cc[:])
	ts := avTimestamp(ch.TargetInfo)
	nt, base := ntlmv2(ntHash, user, domain, ch.ServerChallenge, cc, ts, ch.TargetInfo)
	flags := ch.Flags & (ntlmClientFlags | ntlmKeyExch)
	exported, encKey := base, []byte(nil)
	if flags&ntlmKeyExch != 0 {
		exported = make([]byte, 16)
		rand.Read(exported)
		encKey = rc4K(base, exported)
	}
	fields := [][]byte{
		make([]byte, 24), // LmChallengeResponse: Z(24) with NTLMv2 and a timestamp
		nt, utf16le(domain), utf16le(user), nil, encKey,
	}
	size := ntlmAuthFixed
	for _, f := range fields {
		size += len(f)
	}
	b := make([]byte, ntlmAuthFixed, size)
	copy(b, ntlmSignature)
	binary.LittleEndian.PutUint32(b[8:], 3)
	for i, f := range fields {
		at := 12 + 8*i
		binary.LittleEndian.PutUint16(b[at:], uint16(len(f)))
		binary.LittleEndian.PutUint16(b[at+2:], uint16(len(f)))
		binary.LittleEndian.PutUint32(b[at+4:], uint32(len(b)))
		b = append(b, f...)
	}
	binary.LittleEndian.PutUint32(b[60:], flags)
	return b, exported
}

// avTimestamp returns MsvAvTimestamp from an AV pair list, 0 if absent.
func avTimestamp(list []byte) uint64 {
	for len(list) >= 4 {
		id, n := binary.LittleEndian.Uint16(list), int(binary.LittleEndian.Uint16(list[2:]))
		if id == 0 || n > len(list)-4 {
			return 0
		}
		if id == 7 && n == 8 {
			return binary.LittleEndian.Uint64(list[4:])
		}
		list = list[4+n:]
	}
	return 0
}

func hmacMD5(key []byte, parts ...[]byte) []byte {
	m := hmac.New(md5.New, key)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

func rc4K(key, data []byte) []byte {
	c, _ := rc4.NewCipher(key)
	out := make([]byte, len(data))
	c.XORKeyStream(out, data)
	return out
}

func utf16le(s string) []byte {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		b = binary.LittleEndian.AppendUint16(b, u)
	}
	return b
}

// NTLMNegotiateMessage is the NTLMSSP NEGOTIATE_MESSAGE SessionSetup sends
// first, for tests that build SESSION_SETUP requests themselves.
func NTLMNegotiateMessage() []byte { return ntlmNegotiate(true) }
