package smb2

import (
	"github.com/smbcluster/smbcluster/node/smb2/utf16le"
)

// NegotiateContext is one SMB2 NEGOTIATE_CONTEXT ([MS-SMB2] 2.2.3.1); Data
// is the context payload, decoded by the typed helpers below.
type NegotiateContext struct {
	Type uint16
	Data []byte
}

// Negotiate context types ([MS-SMB2] 2.2.3.1).
const (
	PreauthIntegrityCapabilities uint16 = 0x0001
	EncryptionCapabilities       uint16 = 0x0002
	CompressionCapabilities      uint16 = 0x0003
	NetnameNegotiateContextID    uint16 = 0x0005
	TransportCapabilities        uint16 = 0x0006
	RDMATransformCapabilities    uint16 = 0x0007
	SigningCapabilities          uint16 = 0x0008
)

// HashSHA512 is the only preauth integrity hash ([MS-SMB2] 2.2.3.1.1).
const HashSHA512 uint16 = 0x0001

// Ciphers ([MS-SMB2] 2.2.3.1.2).
const (
	CipherAES128CCM uint16 = 0x0001
	CipherAES128GCM uint16 = 0x0002
	CipherAES256CCM uint16 = 0x0003
	CipherAES256GCM uint16 = 0x0004
)

// Signing algorithms ([MS-SMB2] 2.2.3.1.7).
const (
	SigningHMACSHA256 uint16 = 0x0000
	SigningAESCMAC    uint16 = 0x0001
	SigningAESGMAC    uint16 = 0x0002
)

// Compression algorithms and flags ([MS-SMB2] 2.2.3.1.3).
const (
	CompressionNone        uint16 = 0x0000
	CompressionLZNT1       uint16 = 0x0001
	CompressionLZ77        uint16 = 0x0002
	CompressionLZ77Huffman uint16 = 0x0003
	CompressionPatternV1   uint16 = 0x0004
	CompressionLZ4         uint16 = 0x0005

	CompressionCapabilitiesFlagChained uint32 = 0x00000001
)

// TransportCapsAcceptTransportLevelSecurity is the only transport flag
// ([MS-SMB2] 2.2.3.1.5).
const TransportCapsAcceptTransportLevelSecurity uint32 = 0x00000001

const negotiateContextHeaderSize = 8

// decodeNegotiateContexts parses count contexts starting at the
// header-relative offset off; each one is 8-byte aligned.
func decodeNegotiateContexts(msg []byte, off uint32, count int, lo int) ([]NegotiateContext, error) {
	if count == 0 {
		return nil, nil
	}
	if uint64(off) < uint64(lo) || uint64(off) > uint64(len(msg)) {
		return nil, ErrBadOffset
	}
	out := make([]NegotiateContext, 0, min(count, 16))
	p := int(off)
	for i := 0; i < count; i++ {
		if i > 0 {
			p = align8(p)
		}
		if p > len(msg)-negotiateContextHeaderSize {
			return nil, ErrBadOffset
		}
		n := int(le.Uint16(msg[p+2:]))
		start := p + negotiateContextHeaderSize
		if n > len(msg)-start {
			return nil, ErrBadOffset
		}
		out = append(out, NegotiateContext{Type: le.Uint16(msg[p:]), Data: msg[start : start+n : start+n]})
		p = start + n
	}
	return out, nil
}

// negotiateContextsSize is the encoded size of cs, padding between contexts
// but not after the last.
func negotiateContextsSize(cs []NegotiateContext) int {
	n := 0
	for i, c := range cs {
		if i > 0 {
			n = align8(n)
		}
		n += negotiateContextHeaderSize + len(c.Data)
	}
	return n
}

// encodeNegotiateContexts writes cs into b, which starts 8-byte aligned.
func encodeNegotiateContexts(b []byte, cs []NegotiateContext) {
	p := 0
	for i, c := range cs {
		if i > 0 {
			q := align8(p)
			zero(b[p:q])
			p = q
		}
		put16(b[p:], c.Type)
		put16(b[p+2:], uint16(len(c.Data)))
		put32(b[p+4:], 0)
		copy(b[p+8:], c.Data)
		p += negotiateContextHeaderSize + len(c.Data)
	}
}

// decodeUint16List reads count little-endian uint16s from b.
func decodeUint16List(b []byte, count int) ([]uint16, error) {
	if len(b) < 2*count {
		return nil, ErrShortMessage
	}
	out := make([]uint16, count)
	for i := range out {
		out[i] = le.Uint16(b[2*i:])
	}
	return out, nil
}

func appendUint16s(b []byte, vs []uint16) []byte {
	for _, v := range vs {
		b = le.AppendUint16(b, v)
	}
	return b
}

// PreauthIntegrity is SMB2_PREAUTH_INTEGRITY_CAPABILITIES ([MS-SMB2] 2.2.3.1.1).
type PreauthIntegrity struct {
	HashAlgorithms []uint16
	Salt           []byte
}

// Decode parses the context data.
func (c *PreauthIntegrity) Decode(data []byte) error {
	if len(data) < 4 {
		return ErrShortMessage
	}
	count, saltLen := int(le.Uint16(data)), int(le.Uint16(data[2:]))
	if count == 0 {
		return ErrMalformed
	}
	if len(data) < 4+2*count+saltLen {
		return ErrShortMessage
	}
	c.HashAlgorithms, _ = decodeUint16List(data[4:], count)
	s := 4 + 2*count
	c.Salt = data[s : s+saltLen : s+saltLen]
	return nil
}

// Append appends the context data to b.
func (c *PreauthIntegrity) Append(b []byte) []byte {
	b = le.AppendUint16(b, uint16(len(c.HashAlgorithms)))
	b = le.AppendUint16(b, uint16(len(c.Salt)))
	b = appendUint16s(b, c.HashAlgorithms)
	return append(b, c.Salt...)
}

// EncryptionCaps is SMB2_ENCRYPTION_CAPABILITIES ([MS-SMB2] 2.2.3.1.2).
type EncryptionCaps struct {
	Ciphers []uint16
}

// Decode parses the context data.
func (c *EncryptionCaps) Decode(data []byte) error {
	var err error
	c.Ciphers, err = decodeCountedList(data)
	return err
}

// Append appends the context data to b.
func (c *EncryptionCaps) Append(b []byte) []byte {
	b = le.AppendUint16(b, uint16(len(c.Ciphers)))
	return appendUint16s(b, c.Ciphers)
}

// SigningCaps is SMB2_SIGNING_CAPABILITIES ([MS-SMB2] 2.2.3.1.7).
type SigningCaps struct {
	Algorithms []uint16
}

// Decode parses the context data.
func (c *SigningCaps) Decode(data []byte) error {
	var err error
	c.Algorithms, err = decodeCountedList(data)
	return err
}

// Append appends the context data to b.
func (c *SigningCaps) Append(b []byte) []byte {
	b = le.AppendUint16(b, uint16(len(c.Algorithms)))
	return appendUint16s(b, c.Algorithms)
}

// decodeCountedList reads a uint16 count (which must not be 0) followed by
// that many uint16s.
func decodeCountedList(data []byte) ([]uint16, error) {
	if len(data) < 2 {
		return nil, ErrShortMessage
	}
	count := int(le.Uint16(data))
	if count == 0 {
		return nil, ErrMalformed
	}
	return decodeUint16List(data[2:], count)
}

// CompressionCaps is SMB2_COMPRESSION_CAPABILITIES ([MS-SMB2] 2.2.3.1.3).
type CompressionCaps struct {
	Flags      uint32
	Algorithms []uint16
}

// Decode parses the context data.
func (c *CompressionCaps) Decode(data []byte) error {
	if len(data) < 8 {
		return ErrShortMessage
	}
	count := int(le.Uint16(data))
	if count == 0 {
		return ErrMalformed
	}
	c.Flags = le.Uint32(data[4:])
	var err error
	c.Algorithms, err = decodeUint16List(data[8:], count)
	return err
}

// Append appends the context data to b.
func (c *CompressionCaps) Append(b []byte) []byte {
	b = le.AppendUint16(b, uint16(len(c.Algorithms)))
	b = le.AppendUint16(b, 0) // Padding
	b = le.AppendUint32(b, c.Flags)
	return appendUint16s(b, c.Algorithms)
}

// TransportCaps is SMB2_TRANSPORT_CAPABILITIES ([MS-SMB2] 2.2.3.1.5).
type TransportCaps struct {
	Flags uint32
}

// Decode parses the context data.
func (c *TransportCaps) Decode(data []byte) error {
	if len(data) < 4 {
		return ErrShortMessage
	}
	c.Flags = le.Uint32(data)
	return nil
}

// Append appends the context data to b.
func (c *TransportCaps) Append(b []byte) []byte { return le.AppendUint32(b, c.Flags) }

// Netname is SMB2_NETNAME_NEGOTIATE_CONTEXT_ID ([MS-SMB2] 2.2.3.1.4): the
// server name the client connected to, in UTF-16LE (not terminated).
type Netname struct {
	Name string
}

// Decode parses the context data.
func (c *Netname) Decode(data []byte) error {
	s, err := utf16le.Decode(data)
	if err != nil {
		return err
	}
	c.Name = s
	return nil
}

// Append appends the context data to b.
func (c *Netname) Append(b []byte) []byte { return utf16le.Append(b, c.Name) }
