package auth

import (
	"bytes"
	"encoding/binary"
	"errors"
)

// NTLMSSP negotiate flags ([MS-NLMP] 2.2.2.5).
const (
	negotiateUnicode        = 0x00000001 // NTLMSSP_NEGOTIATE_UNICODE
	negotiateOEM            = 0x00000002 // NTLM_NEGOTIATE_OEM
	requestTarget           = 0x00000004 // NTLMSSP_REQUEST_TARGET
	negotiateSign           = 0x00000010 // NTLMSSP_NEGOTIATE_SIGN
	negotiateSeal           = 0x00000020 // NTLMSSP_NEGOTIATE_SEAL
	negotiateNTLM           = 0x00000200 // NTLMSSP_NEGOTIATE_NTLM
	negotiateAlwaysSign     = 0x00008000 // NTLMSSP_NEGOTIATE_ALWAYS_SIGN
	targetTypeServer        = 0x00020000 // NTLMSSP_TARGET_TYPE_SERVER
	negotiateExtendedSec    = 0x00080000 // NTLMSSP_NEGOTIATE_EXTENDED_SESSIONSECURITY
	negotiateTargetInfo     = 0x00800000 // NTLMSSP_NEGOTIATE_TARGET_INFO
	negotiateVersion        = 0x02000000 // NTLMSSP_NEGOTIATE_VERSION
	negotiate128            = 0x20000000 // NTLMSSP_NEGOTIATE_128
	negotiateKeyExch        = 0x40000000 // NTLMSSP_NEGOTIATE_KEY_EXCH
	negotiate56             = 0x80000000 // NTLMSSP_NEGOTIATE_56
	negotiateFlagsEchoed    = negotiateAlwaysSign | negotiateExtendedSec | negotiateVersion | negotiate128 | negotiate56 | negotiateKeyExch | negotiateSign | negotiateSeal
	negotiateFlagsAlways    = negotiateNTLM | negotiateTargetInfo | requestTarget | targetTypeServer
	ntlmMessageNegotiate    = 1
	ntlmMessageChallenge    = 2
	ntlmMessageAuthenticate = 3
)

// AV pair identifiers ([MS-NLMP] 2.2.2.1).
const (
	avEOL             = 0   // MsvAvEOL
	avNbComputerName  = 1   // MsvAvNbComputerName
	avNbDomainName    = 2   // MsvAvNbDomainName
	avDNSComputerName = 3   // MsvAvDnsComputerName
	avDNSDomainName   = 4   // MsvAvDnsDomainName
	avFlags           = 6   // MsvAvFlags
	avTimestamp       = 7   // MsvAvTimestamp
	avFlagMIC         = 0x2 // MsvAvFlags: the AUTHENTICATE_MESSAGE carries a MIC
)

// Fixed sizes of the NTLMSSP messages ([MS-NLMP] 2.2.1).
const (
	negotiateFixedSize    = 32 // through WorkstationFields
	challengeFixedSize    = 56 // through Version
	authenticateFixedSize = 64 // through NegotiateFlags
	authenticateMICOffset = 72 // after Version
	authenticateMICEnd    = 88
	ntlmVersionSize       = 8
)

var (
	ntlmSignature = []byte("NTLMSSP\x00")
	errNTLMFormat = errors.New("auth: malformed NTLMSSP message")
)

// serverVersion is the VERSION structure the server sends ([MS-NLMP]
// 2.2.2.10): 10.0 build 20348, NTLMSSP_REVISION_W2K3.
var serverVersion = [ntlmVersionSize]byte{10, 0, 0x4c, 0x4f, 0, 0, 0, 0x0f}

// isNTLMSSP reports whether b starts with the NTLMSSP signature.
func isNTLMSSP(b []byte) bool { return bytes.HasPrefix(b, ntlmSignature) }

// ntlmType returns the MessageType of an NTLMSSP message, 0 if b is not one.
func ntlmType(b []byte) uint32 {
	if len(b) < 12 || !isNTLMSSP(b) {
		return 0
	}
	return binary.LittleEndian.Uint32(b[8:])
}

// readField returns the payload a Len/MaxLen/Offset field at off designates,
// checked against the whole message msg.
func readField(msg []byte, off int) ([]byte, error) {
	n := int(binary.LittleEndian.Uint16(msg[off:]))
	if n == 0 {
		return nil, nil
	}
	start := int(binary.LittleEndian.Uint32(msg[off+4:]))
	if start > len(msg) || n > len(msg)-start {
		return nil, errNTLMFormat
	}
	return msg[start : start+n : start+n], nil
}

// putField writes a field at off for payload p copied to b[*pos:], advancing *pos.
func putField(b []byte, off int, pos *int, p []byte) {
	binary.LittleEndian.PutUint16(b[off:], uint16(len(p)))
	binary.LittleEndian.PutUint16(b[off+2:], uint16(len(p)))
	binary.LittleEndian.PutUint32(b[off+4:], uint32(*pos))
	*pos += copy(b[*pos:], p)
}

func putHeader(b []byte, msgType uint32) {
	copy(b, ntlmSignature)
	binary.LittleEndian.PutUint32(b[8:], msgType)
}

// negotiateMessage is NEGOTIATE_MESSAGE ([MS-NLMP] 2.2.1.1). Very old
// clients send only the first 16 bytes; the domain and workstation are then
// empty.
type negotiateMessage struct {
	Flags       uint32
	Domain      []byte // OEM, aliases the message
	Workstation []byte // OEM, aliases the message
	Version     [ntlmVersionSize]byte
}

func (m *negotiateMessage) Decode(msg []byte) error {
	if len(msg) < 16 || ntlmType(msg) != ntlmMessageNegotiate {
		return errNTLMFormat
	}
	*m = negotiateMessage{Flags: binary.LittleEndian.Uint32(msg[12:])}
	if len(msg) < negotiateFixedSize {
		return nil
	}
	var err error
	if m.Domain, err = readField(msg, 16); err != nil {
		return err
	}
	if m.Workstation, err = readField(msg, 24); err != nil {
		return err
	}
	if m.Flags&negotiateVersion != 0 && len(msg) >= negotiateFixedSize+ntlmVersionSize {
		copy(m.Version[:], msg[negotiateFixedSize:])
	}
	return nil
}

func (m *negotiateMessage) Size() int {
	return negotiateFixedSize + ntlmVersionSize + len(m.Domain) + len(m.Workstation)
}

func (m *negotiateMessage) Encode(b []byte) {
	clear(b[:negotiateFixedSize+ntlmVersionSize])
	putHeader(b, ntlmMessageNegotiate)
	binary.LittleEndian.PutUint32(b[12:], m.Flags)
	copy(b[negotiateFixedSize:], m.Version[:])
	pos := negotiateFixedSize + ntlmVersionSize
	putField(b, 16, &pos, m.Domain)
	putField(b, 24, &pos, m.Workstation)
}

// challengeMessage is CHALLENGE_MESSAGE ([MS-NLMP] 2.2.1.2).
type challengeMessage struct {
	Flags           uint32
	TargetName      []byte
	ServerChallenge [8]byte
	TargetInfo      []byte // AV pairs
	Version         [ntlmVersionSize]byte
}

func (m *challengeMessage) Decode(msg []byte) error {
	if len(msg) < 48 || ntlmType(msg) != ntlmMessageChallenge {
		return errNTLMFormat
	}
	*m = challengeMessage{Flags: binary.LittleEndian.Uint32(msg[20:])}
	copy(m.ServerChallenge[:], msg[24:32])
	var err error
	if m.TargetName, err = readField(msg, 12); err != nil {
		return err
	}
	if m.TargetInfo, err = readField(msg, 40); err != nil {
		return err
	}
	if len(msg) >= challengeFixedSize {
		copy(m.Version[:], msg[48:challengeFixedSize])
	}
	return nil
}

func (m *challengeMessage) Size() int {
	return challengeFixedSize + len(m.TargetName) + len(m.TargetInfo)
}

func (m *challengeMessage) Encode(b []byte) {
	clear(b[:challengeFixedSize])
	putHeader(b, ntlmMessageChallenge)
	binary.LittleEndian.PutUint32(b[20:], m.Flags)
	copy(b[24:32], m.ServerChallenge[:])
	copy(b[48:challengeFixedSize], m.Version[:])
	pos := challengeFixedSize
	putField(b, 12, &pos, m.TargetName)
	putField(b, 40, &pos, m.TargetInfo)
}

// authenticateMessage is AUTHENTICATE_MESSAGE ([MS-NLMP] 2.2.1.3). Whether
// the 16 bytes at MIC are a MIC depends on MsvAvFlags in the NTLMv2
// response, so Decode only records whether the message is long enough.
type authenticateMessage struct {
	LmResponse, NtResponse    []byte
	Domain, User, Workstation []byte // UNICODE or OEM per Flags
	EncryptedRandomSessionKey []byte
	Flags                     uint32
	Version                   [ntlmVersionSize]byte
	MIC                       [16]byte
	HasMICSpace               bool // the message reaches past the MIC field
}

func (m *authenticateMessage) Decode(msg []byte) error {
	if len(msg) < authenticateFixedSize || ntlmType(msg) != ntlmMessageAuthenticate {
		return errNTLMFormat
	}
	*m = authenticateMessage{Flags: binary.LittleEndian.Uint32(msg[60:])}
	for _, f := range []struct {
		off int
		p   *[]byte
	}{{12, &m.LmResponse}, {20, &m.NtResponse}, {28, &m.Domain}, {36, &m.User}, {44, &m.Workstation}, {52, &m.EncryptedRandomSessionKey}} {
		var err error
		if *f.p, err = readField(msg, f.off); err != nil {
			return err
		}
	}
	if len(msg) >= authenticateMICOffset {
		copy(m.Version[:], msg[authenticateFixedSize:])
	}
	if len(msg) >= authenticateMICEnd {
		copy(m.MIC[:], msg[authenticateMICOffset:])
		m.HasMICSpace = true
	}
	return nil
}

// Size assumes the Version and MIC fields are present.
func (m *authenticateMessage) Size() int {
	return authenticateMICEnd + len(m.LmResponse) + len(m.NtResponse) + len(m.Domain) +
		len(m.User) + len(m.Workstation) + len(m.EncryptedRandomSessionKey)
}

func (m *authenticateMessage) Encode(b []byte) {
	clear(b[:authenticateMICEnd])
	putHeader(b, ntlmMessageAuthenticate)
	binary.LittleEndian.PutUint32(b[60:], m.Flags)
	copy(b[authenticateFixedSize:], m.Version[:])
	copy(b[authenticateMICOffset:], m.MIC[:])
	pos := authenticateMICEnd
	putField(b, 28, &pos, m.Domain)
	putField(b, 36, &pos, m.User)
	putField(b, 44, &pos, m.Workstation)
	putField(b, 12, &pos, m.LmResponse)
	putField(b, 20, &pos, m.NtResponse)
	putField(b, 52, &pos, m.EncryptedRandomSessionKey)
}

// avPair finds the value of AV pair id in a list ([MS-NLMP] 2.2.2.1). The
// list must be well formed up to the pair found or up to MsvAvEOL.
func avPair(list []byte, id uint16) (value []byte, ok bool, err error) {
	for len(list) >= 4 {
		aid := binary.LittleEndian.Uint16(list)
		n := int(binary.LittleEndian.Uint16(list[2:]))
		if n > len(list)-4 {
			return nil, false, errNTLMFormat
		}
		if aid == avEOL {
			return nil, false, nil
		}
		if aid == id {
			return list[4 : 4+n], true, nil
		}
		list = list[4+n:]
	}
	return nil, false, errNTLMFormat // no MsvAvEOL
}

// appendAVPair appends one AV pair.
func appendAVPair(b []byte, id uint16, value []byte) []byte {
	b = binary.LittleEndian.AppendUint16(b, id)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(value)))
	return append(b, value...)
}

// ntlmv2 views an NTLMv2_RESPONSE ([MS-NLMP] 2.2.2.8): NTProofStr followed
// by the NTLMv2_CLIENT_CHALLENGE ("temp" of 3.3.2), whose AV pairs start 28
// bytes in.
const (
	ntProofStrSize        = 16
	ntlmv2ClientFixedSize = 28
)

// ntlmv2AVPairs returns the AV pairs of an NTLMv2 response's client challenge.
func ntlmv2AVPairs(nt []byte) []byte {
	return nt[ntProofStrSize+ntlmv2ClientFixedSize:]
}
