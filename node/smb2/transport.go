package smb2

// The Direct TCP transport ([MS-SMB2] 2.1): every message travels on the
// stream behind a 4-byte header, the NetBIOS session message header of
// RFC 1002 — a type byte (0 for a session message) and the message's
// length in 24 bits, big-endian. This file is the one place that writes
// and reads it.

// TransportHeaderSize is the size of the Direct TCP transport header.
const TransportHeaderSize = 4

// MaxTransportLength is the largest message length the header can carry.
const MaxTransportLength = 1<<24 - 1

// PutTransportHeader writes to b[:4] the header of a session message of n
// bytes. n must not exceed MaxTransportLength: the length field has 24
// bits, and only they are written.
func PutTransportHeader(b []byte, n int) {
	_ = b[3]
	b[0], b[1], b[2], b[3] = 0, byte(n>>16), byte(n>>8), byte(n)
}

// AppendTransportHeader appends the header of a session message of n
// bytes to b.
func AppendTransportHeader(b []byte, n int) []byte {
	return append(b, 0, byte(n>>16), byte(n>>8), byte(n))
}

// ParseTransportHeader returns the type byte of the header in b[:4] and
// the length of the message that follows it.
func ParseTransportHeader(b []byte) (typ byte, n int) {
	_ = b[3]
	return b[0], int(b[1])<<16 | int(b[2])<<8 | int(b[3])
}
