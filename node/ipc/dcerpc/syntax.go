package dcerpc

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
)

// UUID is a DCE UUID in its NDR wire order: the first three fields
// little-endian, the last eight bytes as they are ([C706] appendix A).
type UUID [16]byte

// ParseUUID parses the textual form "8a885d04-1ceb-11c9-9fe8-08002b104860".
func ParseUUID(s string) (UUID, error) {
	var u UUID
	h := strings.ReplaceAll(s, "-", "")
	if len(s) != 36 || len(h) != 32 {
		return u, fmt.Errorf("dcerpc: bad UUID %q", s)
	}
	var raw [16]byte
	if _, err := hex.Decode(raw[:], []byte(h)); err != nil {
		return u, fmt.Errorf("dcerpc: bad UUID %q", s)
	}
	binary.LittleEndian.PutUint32(u[0:], binary.BigEndian.Uint32(raw[0:]))
	binary.LittleEndian.PutUint16(u[4:], binary.BigEndian.Uint16(raw[4:]))
	binary.LittleEndian.PutUint16(u[6:], binary.BigEndian.Uint16(raw[6:]))
	copy(u[8:], raw[8:])
	return u, nil
}

// MustParseUUID is ParseUUID for constants; it panics on a malformed literal.
func MustParseUUID(s string) UUID {
	u, err := ParseUUID(s)
	if err != nil {
		panic(err)
	}
	return u
}

// String returns the textual form.
func (u UUID) String() string {
	return fmt.Sprintf("%08x-%04x-%04x-%x-%x",
		binary.LittleEndian.Uint32(u[0:]), binary.LittleEndian.Uint16(u[4:]),
		binary.LittleEndian.Uint16(u[6:]), u[8:10], u[10:])
}

// SyntaxID names an interface or a transfer syntax and its version
// (p_syntax_id_t, [C706] 12.6.3.1): if_version carries the major version in
// its low 16 bits and the minor version in its high 16 bits.
type SyntaxID struct {
	UUID         UUID
	Major, Minor uint16
}

// syntaxSize is the wire size of a SyntaxID.
const syntaxSize = 20

func (s *SyntaxID) decode(b []byte) {
	copy(s.UUID[:], b[:16])
	s.Major = binary.LittleEndian.Uint16(b[16:])
	s.Minor = binary.LittleEndian.Uint16(b[18:])
}

func (s *SyntaxID) encode(b []byte) {
	copy(b[:16], s.UUID[:])
	binary.LittleEndian.PutUint16(b[16:], s.Major)
	binary.LittleEndian.PutUint16(b[18:], s.Minor)
}

// Well-known transfer syntaxes.
var (
	// NDR is the 32-bit NDR transfer syntax, version 2.0 ([C706] appendix I).
	NDR = SyntaxID{UUID: MustParseUUID("8a885d04-1ceb-11c9-9fe8-08002b104860"), Major: 2}
	// NDR64 is the 64-bit transfer syntax ([MS-RPCE] 2.2.5.1), accepted
	// for interfaces that speak it (Interface.NDR64).
	NDR64 = SyntaxID{UUID: MustParseUUID("71710533-beba-4937-8319-b5dbef9ccc36"), Major: 1}
)

// bindTimeFeaturePrefix is the first 8 bytes, in wire order, of the UUIDs
// that carry the bind time feature negotiation bitmask ([MS-RPCE] 3.3.1.5.3):
// 6CB71C2C-9812-4540-xxxx-xxxxxxxxxxxx.
var bindTimeFeaturePrefix = [8]byte{0x2c, 0x1c, 0xb7, 0x6c, 0x12, 0x98, 0x40, 0x45}

// featureBitmask reports whether s is a bind time feature negotiation
// transfer syntax and, if so, its BindTimeFeatureNegotiationBitmask's first
// octet ([MS-RPCE] 2.2.2.14).
func featureBitmask(s SyntaxID) (uint8, bool) {
	if [8]byte(s.UUID[:8]) != bindTimeFeaturePrefix {
		return 0, false
	}
	return s.UUID[8], true
}
