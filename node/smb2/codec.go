package smb2

import (
	"encoding/binary"
	"errors"
)

var le = binary.LittleEndian

// ErrShortMessage is returned when a message ends before its fixed body does.
var ErrShortMessage = errors.New("smb2: message shorter than its structure")

// ErrBadOffset is returned when an offset/length pair points outside the message.
var ErrBadOffset = errors.New("smb2: offset or length outside the message")

// ErrMalformed is returned for any other inconsistency in a message.
var ErrMalformed = errors.New("smb2: malformed message")

// requestBody checks the StructureSize of a request and returns the body
// (msg[HeaderSize:]). An odd StructureSize means "fixed part plus a variable
// buffer"; like Samba (smbd_smb2_request_verify_sizes) it requires the
// buffer's first byte to be present even when the buffer is empty.
func requestBody(msg []byte, structSize uint16) ([]byte, error) {
	if len(msg) < HeaderSize+int(structSize) {
		return nil, ErrShortMessage
	}
	return fixedBody(msg, structSize)
}

// fixedBody is requestBody for responses, and for the requests (IOCTL,
// QUERY_INFO, WRITE) that clients send without the odd byte: only the even
// fixed part of StructureSize must be present.
func fixedBody(msg []byte, structSize uint16) ([]byte, error) {
	if len(msg) < HeaderSize+int(structSize&^1) || len(msg) < HeaderSize+2 {
		return nil, ErrShortMessage
	}
	b := msg[HeaderSize:]
	if le.Uint16(b) != structSize {
		return nil, ErrBadStructureSize
	}
	return b, nil
}

// span returns msg[off:off+n] for a header-relative offset, or nil when n is
// zero (the offset of an empty buffer is not checked: clients put anything
// there). lo is the smallest offset allowed, normally the end of the fixed
// body, so a buffer cannot overlap the fields that describe it.
func span(msg []byte, off, n uint32, lo int) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	end := uint64(off) + uint64(n)
	if uint64(off) < uint64(lo) || end > uint64(len(msg)) {
		return nil, ErrBadOffset
	}
	return msg[off:end:end], nil
}

// align8 rounds n up to a multiple of 8.
func align8(n int) int { return (n + 7) &^ 7 }

// putBuffer writes buf at b[pos:] and returns its header-relative offset and
// length for the Offset/Length fields.
func putBuffer(b []byte, pos int, buf []byte) (off uint32, n uint32) {
	copy(b[pos:], buf)
	return uint32(HeaderSize + pos), uint32(len(buf))
}

// put16 and friends shorten the encoders.
func put16(b []byte, v uint16) { le.PutUint16(b, v) }
func put32(b []byte, v uint32) { le.PutUint32(b, v) }
func put64(b []byte, v uint64) { le.PutUint64(b, v) }

// zero zeroes b (reserved fields and padding).
func zero(b []byte) {
	for i := range b {
		b[i] = 0
	}
}

// bodySize is the encoded size of a body whose StructureSize is structSize
// (fixed part = structSize rounded down to even) and whose variable part has
// n bytes. A body with an empty buffer still carries the odd byte of
// StructureSize, as Windows sends it; the encoder zeroes that byte.
func bodySize(structSize uint16, n int) int {
	fixed := int(structSize &^ 1)
	if n == 0 {
		return int(structSize)
	}
	return fixed + n
}
