package ndr

import (
	"encoding/binary"
	"errors"

	"github.com/smbcluster/smbcluster/node/smb2/utf16le"
)

// ErrMalformed reports stub data that does not follow NDR.
var ErrMalformed = errors.New("ndr: malformed stub data")

// MaxString bounds the characters of a decoded string, so that a hostile
// maximum count cannot make a caller allocate much.
const MaxString = 32 << 10

// Reader decodes NDR from a byte slice. See the package invariant.
type Reader struct {
	b   []byte
	off int
	err error
	// NDR64 reads the 64-bit transfer syntax ([MS-RPCE] 2.2.5): pointers
	// and counts are 8 bytes, aligned to 8.
	NDR64 bool
}

// NewReader returns a Reader of b; b is aliased, not copied.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Err returns the first decoding error, or nil.
func (r *Reader) Err() error { return r.err }

// Offset returns how many bytes have been consumed.
func (r *Reader) Offset() int { return r.off }

// Fail marks the input malformed, for a violation only the caller can see
// (say, a union discriminant that disagrees with its switch_is parameter).
func (r *Reader) Fail() {
	if r.err == nil {
		r.err = ErrMalformed
	}
}

// Align skips padding to a multiple of n. The padding's value is not checked
// ([C706] 14.2.2 leaves it unspecified).
func (r *Reader) Align(n int) {
	if r.err != nil {
		return
	}
	pad := (n - r.off%n) % n
	if pad > len(r.b)-r.off {
		r.Fail()
		return
	}
	r.off += pad
}

// take returns the next n bytes, or nil after failing.
func (r *Reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.Fail()
		return nil
	}
	p := r.b[r.off : r.off+n]
	r.off += n
	return p
}

// Uint16 reads a 2-aligned unsigned short.
func (r *Reader) Uint16() uint16 {
	r.Align(2)
	if p := r.take(2); p != nil {
		return binary.LittleEndian.Uint16(p)
	}
	return 0
}

// Uint32 reads a 4-aligned unsigned long.
func (r *Reader) Uint32() uint32 {
	r.Align(4)
	if p := r.take(4); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

// Uint64 reads an 8-aligned hyper.
func (r *Reader) Uint64() uint64 {
	r.Align(8)
	if p := r.take(8); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

// Count reads a conformance, offset or variance count: 4 bytes, 8 with NDR64.
func (r *Reader) Count() uint64 {
	if r.NDR64 {
		return r.Uint64()
	}
	return uint64(r.Uint32())
}

// Pointer reads a unique pointer's referent id and reports whether it is
// non-NULL; the pointee follows in deferred position.
func (r *Reader) Pointer() bool { return r.Count() != 0 }

// String reads a conformant varying UTF-16 string ([C706] 14.3.4) and returns
// it without its terminating NUL. It requires offset 0, actual count <=
// maximum count <= MaxString, and valid UTF-16.
func (r *Reader) String() string {
	maxCount := r.Count()
	offset := r.Count()
	actual := r.Count()
	if r.err != nil {
		return ""
	}
	if offset != 0 || actual > maxCount || maxCount > MaxString {
		r.Fail()
		return ""
	}
	p := r.take(int(actual) * 2)
	if p == nil {
		return ""
	}
	if n := len(p); n >= 2 && p[n-2] == 0 && p[n-1] == 0 {
		p = p[:n-2]
	}
	s, err := utf16le.Decode(p)
	if err != nil {
		r.Fail()
		return ""
	}
	return s
}

// UniqueString reads a unique pointer to a string that is not deferred
// (a top-level [in, string, unique] parameter) and reports whether it was
// non-NULL.
func (r *Reader) UniqueString() (string, bool) {
	if !r.Pointer() {
		return "", false
	}
	return r.String(), true
}

// Bytes reads n bytes without alignment; the slice aliases the input.
func (r *Reader) Bytes(n int) []byte { return r.take(n) }
