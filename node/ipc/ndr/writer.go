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
		w.Uint32(0)
		return
	}
	if w.ref == 0 {
		w.ref = firstReferent - 4
	}
	w.ref += 4
	w.Uint32(w.ref)
}

// String appends s as a conformant varying string of UTF-16 code units
// including the terminating NUL ([C706] 14.3.4; [string] wchar_t*): maximum
// count, offset 0, actual count, the characters.
func (w *Writer) String(s string) {
	n := uint32(utf16le.Len(s)/2 + 1)
	w.Uint32(n)
	w.Uint32(0)
	w.Uint32(n)
	w.Buf = utf16le.Append(w.Buf, s)
	w.Buf = append(w.Buf, 0, 0)
}

// Bytes appends b without alignment.
func (w *Writer) Bytes(b []byte) { w.Buf = append(w.Buf, b...) }
