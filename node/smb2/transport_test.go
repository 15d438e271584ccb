package smb2

import (
	"bytes"
	"testing"
)

func TestTransportHeader(t *testing.T) {
	for _, n := range []int{0, 4, 0x1234, 0x10000, MaxTransportLength} {
		var b [TransportHeaderSize]byte
		PutTransportHeader(b[:], n)
		if typ, got := ParseTransportHeader(b[:]); typ != 0 || got != n {
			t.Errorf("%#x: parsed type %#x, length %#x", n, typ, got)
		}
		if a := AppendTransportHeader([]byte{9}, n); !bytes.Equal(a[1:], b[:]) {
			t.Errorf("%#x: appended % x, put % x", n, a[1:], b)
		}
	}
	b := [TransportHeaderSize]byte{0xFE, 0xFE, 0xFE, 0xFE}
	PutTransportHeader(b[:], 20)
	if want := []byte{0, 0, 0, 20}; !bytes.Equal(b[:], want) {
		t.Errorf("header over other bytes % x, want % x", b, want)
	}
}
