package auth

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
)

// The client side of NTLMv2 ([MS-NLMP] 3.1.5): what a test client or the
// load generator needs to log on to an SMB server. It sends no MIC and no
// VERSION, which servers accept ([MS-NLMP] 3.1.5.1.2: the MIC is optional).

// initiatorFlags are the NEGOTIATE_MESSAGE flags the initiator asks for.
const initiatorFlags = negotiateUnicode | requestTarget | negotiateSign | negotiateSeal | negotiateNTLM |
	negotiateAlwaysSign | negotiateExtendedSec | negotiateTargetInfo | negotiate128 | negotiate56

// ErrChallenge reports a CHALLENGE_MESSAGE that does not decode.
var ErrChallenge = errors.New("auth: malformed NTLMSSP CHALLENGE_MESSAGE")

// NTLMNegotiate returns a NEGOTIATE_MESSAGE ([MS-NLMP] 2.2.1.1) without
// domain, workstation or version; keyExch asks for NTLMSSP_NEGOTIATE_KEY_EXCH.
func NTLMNegotiate(keyExch bool) []byte {
	b := make([]byte, negotiateFixedSize)
	putHeader(b, ntlmMessageNegotiate)
	flags := uint32(initiatorFlags)
	if keyExch {
		flags |= negotiateKeyExch
	}
	binary.LittleEndian.PutUint32(b[12:], flags)
	return b
}

// Challenge is the part of a CHALLENGE_MESSAGE ([MS-NLMP] 2.2.1.2) the
// initiator uses.
type Challenge struct {
	Flags           uint32
	ServerChallenge [8]byte
	TargetInfo      []byte
}

// ParseChallenge decodes a CHALLENGE_MESSAGE, checking every field against msg.
func ParseChallenge(msg []byte) (Challenge, error) {
	var c Challenge
	if len(msg) < 48 || !isNTLMSSP(msg) || binary.LittleEndian.Uint32(msg[8:]) != ntlmMessageChallenge {
		return c, ErrChallenge
	}
	c.Flags = binary.LittleEndian.Uint32(msg[20:])
	copy(c.ServerChallenge[:], msg[24:32])
	n := int(binary.LittleEndian.Uint16(msg[40:]))
	off := int(binary.LittleEndian.Uint32(msg[44:]))
	if n > 0 {
		if off < 48 || off > len(msg) || n > len(msg)-off {
			return c, ErrChallenge
		}
		c.TargetInfo = msg[off : off+n : off+n]
	}
	return c, nil
}

// ntlmv2Response computes NTLMv2_RESPONSE and SessionBaseKey ([MS-NLMP]
// 3.3.2) for a client challenge and timestamp.
func ntlmv2Response(ntHash [16]byte, user, domain string, serverChallenge, clientChallenge [8]byte, time uint64, targetInfo []byte) (ntResponse, sessionBaseKey []byte) {
	key := ntowfv2(ntHash, user, domain)
	temp := []byte{1, 1, 0, 0, 0, 0, 0, 0}
	temp = binary.LittleEndian.AppendUint64(temp, time)
	temp = append(temp, clientChallenge[:]...)
	temp = append(temp, 0, 0, 0, 0)
	temp = append(temp, targetInfo...)
	temp = append(temp, 0, 0, 0, 0)
	proof := hmacMD5(key, serverChallenge[:], temp)
	return append(proof, temp...), hmacMD5(key, proof)
}

// NTLMAuthenticate answers a challenge with an AUTHENTICATE_MESSAGE
// ([MS-NLMP] 3.1.5.1.2) and returns it with the ExportedSessionKey, the key
// SMB derives its session keys from.
func NTLMAuthenticate(ch Challenge, user, domain string, ntHash [16]byte) (msg, exportedKey []byte) {
	var cc [8]byte
	rand.Read(cc[:])
	ts := challengeTimestamp(ch.TargetInfo)
	nt, base := ntlmv2Response(ntHash, user, domain, ch.ServerChallenge, cc, ts, ch.TargetInfo)
	flags := ch.Flags & (initiatorFlags | negotiateKeyExch)
	exported, encKey := base, []byte(nil)
	if flags&negotiateKeyExch != 0 {
		exported = make([]byte, 16)
		rand.Read(exported)
		encKey = rc4K(base, exported)
	}
	fields := [][]byte{
		make([]byte, 24), // LmChallengeResponse: Z(24) with NTLMv2 and a timestamp
		nt, unicode(domain), unicode(user), nil, encKey,
	}
	size := authenticateFixedSize
	for _, f := range fields {
		size += len(f)
	}
	b := make([]byte, authenticateFixedSize, size)
	putHeader(b, ntlmMessageAuthenticate)
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

// challengeTimestamp returns MsvAvTimestamp from an AV pair list, 0 if
// absent or malformed.
func challengeTimestamp(list []byte) uint64 {
	v, ok, err := avPair(list, avTimestamp)
	if err != nil || !ok || len(v) != 8 {
		return 0
	}
	return binary.LittleEndian.Uint64(v)
}

// SPNEGOInit wraps an initiator's first NTLMSSP message in a SPNEGO
// NegTokenInit offering NTLMSSP ([MS-SPNG] 3.1.5.1, RFC 4178 4.2.1).
func SPNEGOInit(ntlmToken []byte) []byte {
	t := negTokenInit{MechTypes: [][]byte{oidNTLMSSP}, MechToken: ntlmToken}
	return t.Append(nil)
}

// SPNEGOResponse wraps a later NTLMSSP message in a NegTokenResp.
func SPNEGOResponse(ntlmToken []byte) []byte {
	t := negTokenResp{NegState: negStateAbsent, ResponseToken: ntlmToken}
	return t.Append(nil)
}

// SPNEGOToken returns the mechanism token of a server's NegTokenResp, or b
// itself when b is a bare NTLMSSP message. A rejecting NegTokenResp is an
// error.
func SPNEGOToken(b []byte) ([]byte, error) {
	if isNTLMSSP(b) {
		return b, nil
	}
	var t negTokenResp
	if err := t.Decode(b); err != nil {
		return nil, err
	}
	if t.NegState == negStateReject {
		return nil, errors.New("auth: SPNEGO negotiation rejected")
	}
	return t.ResponseToken, nil
}
