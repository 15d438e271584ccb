package ndr

import (
	"encoding/binary"

	"github.com/smbcluster/smbcluster/node/smb2/utf16le"
)

// firstReferent is the first referent id a Writer hands out; Windows uses the
// same base and the same step of 4.
const firstReferent = 0x00020000

// Writer appends NDR-encoded data to Buf.
type Writer struct {
	Buf []byte
	ref uint32 // last referent id handed out
	// NDR64 writes the 64-bit transfer syntax ([MS-RPCE] 2.2.5): pointers
	// and counts are 8 bytes, aligned to 8.
	NDR64 bool
}

// Uint64 appends an 8-aligned hyper.
func (w *Writer) Uint64(v uint64) {
	w.Align(8)
	w.Buf = binary.LittleEndian.AppendUint64(w.Buf, v)
}

// Count appends a conformance, offset or variance count: 4 bytes, 8 with
// NDR64.
func (w *Writer) Count(v uint64) {
	if w.NDR64 {
		w.Uint64(v)
		return
	}
	w.Uint32(uint32(v))
}

// Align pads Buf with zeros to a multiple of n (1, 2, 4 or 8).
func (w *Writer) Align(n int) {
	for len(w.Buf)%n != 0 {
		w.Buf = append(w.Buf, 0)
	}
}

// Uint16 appends a 2-aligned unsigned short.
func (w *Writer) Uint16(v uint16) {
	w.Align(2)
	w.Buf = binary.LittleEndian.AppendUint16(w.Buf, v)
}

// Uint32 appends a 4-aligned unsigned long.
func (w *Writer) Uint32(v uint32) {
	w.Align(4)
	w.Buf = binary.LittleEndian.AppendUint32(w.Buf, v)
}

// Pointer appends the representation of a unique or embedded full pointer
// ([C706] 14.3.11.3): a fresh non-zero referent id, or 0 for NULL. The
// caller writes the pointee later, in the position NDR defers it to.
func (w *Writer) Pointer(nonNull bool) {
	if !nonNull {
		w.Count(0)
		return
	}
	if w.ref == 0 {
		w.ref = firstReferent - 4
	}
	w.ref += 4
	w.Count(uint64(w.ref))
}

// String appends s as a conformant varying string of UTF-16 code units
// including the terminating NUL ([C706] 14.3.4; [string] wchar_t*): maximum
// count, offset 0, actual count, the characters.
func (w *Writer) String(s string) {
	n := uint64(utf16le.Len(s)/2 + 1)
	w.Count(n)
	w.Count(0)
	w.Count(n)
	w.Buf = utf16le.Append(w.Buf, s)
	w.Buf = append(w.Buf, 0, 0)
}

// Bytes appends b without alignment.
func (w *Writer) Bytes(b []byte) { w.Buf = append(w.Buf, b...) }
