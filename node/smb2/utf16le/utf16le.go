package utf16le

import (
	"encoding/binary"
	"errors"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrInvalid is returned for an odd-length buffer or an unpaired surrogate.
var ErrInvalid = errors.New("utf16le: invalid UTF-16")

// Len returns the encoded size of s in bytes.
func Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 4
		} else {
			n += 2
		}
	}
	return n
}

// Encode writes s into b and returns the bytes written; b must hold Len(s).
func Encode(b []byte, s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			r1, r2 := utf16.EncodeRune(r)
			binary.LittleEndian.PutUint16(b[n:], uint16(r1))
			binary.LittleEndian.PutUint16(b[n+2:], uint16(r2))
			n += 4
			continue
		}
		binary.LittleEndian.PutUint16(b[n:], uint16(r))
		n += 2
	}
	return n
}

// Append appends the encoding of s to b.
func Append(b []byte, s string) []byte {
	n := len(b)
	b = append(b, make([]byte, Len(s))...)
	Encode(b[n:], s)
	return b
}

// Decode converts b to a string. It fails with ErrInvalid on an odd length
// or an unpaired surrogate.
func Decode(b []byte) (string, error) {
	if len(b)%2 != 0 {
		return "", ErrInvalid
	}
	ascii := true
	for i := 0; i < len(b); i += 2 {
		if b[i+1] != 0 || b[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		s := make([]byte, len(b)/2)
		for i := range s {
			s[i] = b[2*i]
		}
		return string(s), nil
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i += 2 {
		u := rune(binary.LittleEndian.Uint16(b[i:]))
		switch {
		case utf16.IsSurrogate(u):
			if u >= 0xdc00 || i+3 >= len(b) {
				return "", ErrInvalid
			}
			u2 := rune(binary.LittleEndian.Uint16(b[i+2:]))
			r := utf16.DecodeRune(u, u2)
			if r == utf8.RuneError {
				return "", ErrInvalid
			}
			out = utf8.AppendRune(out, r)
			i += 2
		default:
			out = utf8.AppendRune(out, u)
		}
	}
	return string(out), nil
}
