package dcerpc

import "encoding/binary"

const (
	requestFixed  = HeaderSize + 8
	responseFixed = HeaderSize + 8
	faultSize     = HeaderSize + 16
)

// Request is a request PDU ([C706] 12.6.4.9).
type Request struct {
	Header
	AllocHint uint32
	ContextID uint16
	Opnum     uint16
	Object    UUID   // valid if Flags&FlagObjectUUID
	Stub      []byte // aliases the decoded message; auth verifier excluded
}

// Decode parses a request PDU.
func (r *Request) Decode(msg []byte) error {
	if err := r.Header.Decode(msg); err != nil {
		return err
	}
	end, ok := bodyEnd(&r.Header)
	if !ok || end < requestFixed {
		return ErrFormat
	}
	r.AllocHint = binary.LittleEndian.Uint32(msg[16:])
	r.ContextID = binary.LittleEndian.Uint16(msg[20:])
	r.Opnum = binary.LittleEndian.Uint16(msg[22:])
	off := requestFixed
	if r.Flags&FlagObjectUUID != 0 {
		if end-off < 16 {
			return ErrFormat
		}
		copy(r.Object[:], msg[off:])
		off += 16
	}
	r.Stub = msg[off:end]
	return nil
}

// Size returns the encoded size of the whole PDU.
func (r *Request) Size() int {
	n := requestFixed + len(r.Stub)
	if r.Flags&FlagObjectUUID != 0 {
		n += 16
	}
	return n
}

// Encode writes the whole PDU, without auth verifier, into b[:r.Size()].
func (r *Request) Encode(b []byte) {
	h := r.Header
	h.FragLength, h.AuthLength = uint16(r.Size()), 0
	h.Type = TypeRequest
	h.Encode(b)
	binary.LittleEndian.PutUint32(b[16:], r.AllocHint)
	binary.LittleEndian.PutUint16(b[20:], r.ContextID)
	binary.LittleEndian.PutUint16(b[22:], r.Opnum)
	off := requestFixed
	if r.Flags&FlagObjectUUID != 0 {
		copy(b[off:], r.Object[:])
		off += 16
	}
	copy(b[off:], r.Stub)
}

// Response is a response PDU ([C706] 12.6.4.10).
type Response struct {
	Header
	AllocHint   uint32
	ContextID   uint16
	CancelCount uint8
	Stub        []byte
}

// Size returns the encoded size of the whole PDU.
func (r *Response) Size() int { return responseFixed + len(r.Stub) }

// Encode writes the whole PDU into b[:r.Size()].
func (r *Response) Encode(b []byte) {
	h := r.Header
	h.Type, h.FragLength, h.AuthLength = TypeResponse, uint16(r.Size()), 0
	h.Encode(b)
	binary.LittleEndian.PutUint32(b[16:], r.AllocHint)
	binary.LittleEndian.PutUint16(b[20:], r.ContextID)
	b[22], b[23] = r.CancelCount, 0
	copy(b[responseFixed:], r.Stub)
}

// Decode parses a response PDU (tests and fuzzing).
func (r *Response) Decode(msg []byte) error {
	if err := r.Header.Decode(msg); err != nil {
		return err
	}
	end, ok := bodyEnd(&r.Header)
	if !ok || end < responseFixed {
		return ErrFormat
	}
	r.AllocHint = binary.LittleEndian.Uint32(msg[16:])
	r.ContextID = binary.LittleEndian.Uint16(msg[20:])
	r.CancelCount = msg[22]
	r.Stub = msg[responseFixed:end]
	return nil
}

// Fault is a fault PDU ([C706] 12.6.4.7; [MS-RPCE] 2.2.2.6).
type Fault struct {
	Header
	ContextID uint16
	Status    uint32
}

// Size returns the encoded size.
func (f *Fault) Size() int { return faultSize }

// Encode writes the whole PDU into b[:f.Size()].
func (f *Fault) Encode(b []byte) {
	clear(b[:faultSize])
	h := f.Header
	h.Type, h.FragLength, h.AuthLength = TypeFault, faultSize, 0
	h.Encode(b)
	binary.LittleEndian.PutUint16(b[20:], f.ContextID)
	binary.LittleEndian.PutUint32(b[24:], f.Status)
}

// Decode parses a fault PDU (tests and fuzzing).
func (f *Fault) Decode(msg []byte) error {
	if err := f.Header.Decode(msg); err != nil {
		return err
	}
	if f.FragLength < faultSize-4 { // reserved2 is optional in [C706]
		return ErrFormat
	}
	f.ContextID = binary.LittleEndian.Uint16(msg[20:])
	f.Status = binary.LittleEndian.Uint32(msg[24:])
	return nil
}
