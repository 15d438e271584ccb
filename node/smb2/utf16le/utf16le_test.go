package utf16le

import "testing"

func TestRoundTrip(t *testing.T) {
	for _, s := range []string{"", "a", "share\\dir\\file.txt", "Grüße", "日本語", "emoji 😀 x"} {
		b := Append(nil, s)
		if len(b) != Len(s) {
			t.Fatalf("%q: Len %d, encoded %d", s, Len(s), len(b))
		}
		got, err := Decode(b)
		if err != nil || got != s {
			t.Fatalf("%q: got %q, %v", s, got, err)
		}
	}
}

func TestInvalid(t *testing.T) {
	for _, b := range [][]byte{{0x41}, {0x00, 0xd8}, {0x00, 0xdc, 0x41, 0x00}, {0x00, 0xd8, 0x41, 0x00}} {
		if _, err := Decode(b); err == nil {
			t.Errorf("% x: decoded, want error", b)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte{0x41, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Decode(b)
		if err == nil && Len(s) != len(b) {
			t.Fatalf("len mismatch %d vs %d", Len(s), len(b))
		}
	})
}
