package dcerpc

import (
	"encoding/binary"
	"errors"
)

// PDU types, the PTYPE field ([C706] 12.6.4).
const (
	TypeRequest          = 0
	TypeResponse         = 2
	TypeFault            = 3
	TypeBind             = 11
	TypeBindAck          = 12
	TypeBindNak          = 13
	TypeAlterContext     = 14
	TypeAlterContextResp = 15
	TypeAuth3            = 16
	TypeShutdown         = 17
	TypeCoCancel         = 18
	TypeOrphaned         = 19
)

// pfc_flags ([C706] 12.6.3.1; [MS-RPCE] 2.2.2.3).
const (
	FlagFirstFrag         = 0x01 // PFC_FIRST_FRAG
	FlagLastFrag          = 0x02 // PFC_LAST_FRAG
	FlagPendingCancel     = 0x04 // PFC_PENDING_CANCEL
	FlagSupportHeaderSign = 0x04 // PFC_SUPPORT_HEADER_SIGN (bind only)
	FlagConcMpx           = 0x10 // PFC_CONC_MPX
	FlagDidNotExecute     = 0x20 // PFC_DID_NOT_EXECUTE
	FlagMaybe             = 0x40 // PFC_MAYBE
	FlagObjectUUID        = 0x80 // PFC_OBJECT_UUID
)

// HeaderSize is the size of the common header of every connection-oriented PDU.
const HeaderSize = 16

// dataRep is the packed_drep of little-endian integers, ASCII characters and
// IEEE floats ([C706] 14.1), the only one this package speaks.
var dataRep = [4]byte{0x10, 0, 0, 0}

// Errors reported by Decode.
var (
	ErrShort   = errors.New("dcerpc: PDU too short")
	ErrVersion = errors.New("dcerpc: unsupported RPC version")
	ErrDataRep = errors.New("dcerpc: unsupported data representation")
	ErrFormat  = errors.New("dcerpc: malformed PDU")
)

// Header is the common header of connection-oriented PDUs ([C706] 12.6.3.1).
type Header struct {
	Type       uint8 // PTYPE
	Flags      uint8 // pfc_flags
	FragLength uint16
	AuthLength uint16
	CallID     uint32
}

// Decode parses the header at the start of msg and checks rpc_vers 5.0 or 5.1,
// the data representation, and that frag_length fits msg.
func (h *Header) Decode(msg []byte) error {
	if len(msg) < HeaderSize {
		return ErrShort
	}
	if msg[0] != 5 || msg[1] > 1 {
		return ErrVersion
	}
	h.Type = msg[2]
	h.Flags = msg[3]
	h.FragLength = binary.LittleEndian.Uint16(msg[8:])
	h.AuthLength = binary.LittleEndian.Uint16(msg[10:])
	h.CallID = binary.LittleEndian.Uint32(msg[12:])
	if int(h.FragLength) < HeaderSize || int(h.FragLength) > len(msg) {
		return ErrShort
	}
	if msg[4]&0xf0 != 0x10 || msg[4]&0x0f != 0 || msg[5] != 0 {
		return ErrDataRep
	}
	return nil
}

// Encode writes the header into b[:HeaderSize] as rpc_vers 5.0 with
// little-endian NDR.
func (h *Header) Encode(b []byte) {
	b[0], b[1], b[2], b[3] = 5, 0, h.Type, h.Flags
	copy(b[4:8], dataRep[:])
	binary.LittleEndian.PutUint16(b[8:], h.FragLength)
	binary.LittleEndian.PutUint16(b[10:], h.AuthLength)
	binary.LittleEndian.PutUint32(b[12:], h.CallID)
}

// FragLength returns the frag_length of the PDU starting at b, or 0 if b is
// shorter than a header. It is what a byte-stream transport needs to frame
// PDUs before decoding them.
func FragLength(b []byte) int {
	if len(b) < HeaderSize {
		return 0
	}
	return int(binary.LittleEndian.Uint16(b[8:]))
}
