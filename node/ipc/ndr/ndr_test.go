package ndr

import (
	"bytes"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	w := &Writer{}
	w.Buf = append(w.Buf, 0xaa) // misalign
	w.Uint16(7)
	w.Pointer(true)
	w.Pointer(false)
	w.Pointer(true)
	w.String("ünï")
	w.String("")
	w.Uint32(0xdeadbeef)
	want := []byte{
		0xaa, 0, 7, 0, // padding to 2
		0, 0, 2, 0, 0, 0, 0, 0, 4, 0, 2, 0, // referents 0x20000, NULL, 0x20004
		4, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0xfc, 0, 'n', 0, 0xef, 0, 0, 0, // "ünï" + NUL
		1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, // "" + NUL + pad
		0xef, 0xbe, 0xad, 0xde,
	}
	if !bytes.Equal(w.Buf, want) {
		t.Fatalf("encoded\n %x\nwant %x", w.Buf, want)
	}
	r := NewReader(w.Buf)
	if r.Uint16() != 0x00aa || r.Uint16() != 7 || !r.Pointer() || r.Pointer() || !r.Pointer() || r.String() != "ünï" || r.String() != "" ||
		r.Uint32() != 0xdeadbeef || r.Err() != nil || r.Offset() != len(want) {
		t.Fatalf("decode mismatch, err %v", r.Err())
	}
	if r.Uint32() != 0 || r.Err() != ErrMalformed {
		t.Fatal("read past end succeeded")
	}
}

func TestStringRejects(t *testing.T) {
	for name, b := range map[string][]byte{
		"offset":     {2, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0},
		"actual>max": {1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 'a', 0, 0, 0},
		"huge":       {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f},
		"short":      {4, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 'a', 0},
		"surrogate":  {2, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0x00, 0xd8, 0, 0},
	} {
		r := NewReader(b)
		if s := r.String(); r.Err() == nil {
			t.Errorf("%s: decoded %q", name, s)
		}
	}
}

// FuzzReader interprets the first byte of each step as an operation.
func FuzzReader(f *testing.F) {
	f.Add([]byte{4, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 'a', 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		ops, data := b[0], b[1:]
		r := NewReader(data)
		for i := range 8 {
			switch (ops >> (i % 4 * 2)) & 3 {
			case 0:
				r.Uint16()
			case 1:
				r.Uint32()
			case 2:
				r.UniqueString()
			case 3:
				_ = r.String()
			}
			if r.Offset() > len(data) {
				t.Fatal("read past end")
			}
		}
	})
}
