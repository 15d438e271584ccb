package auth

import (
	"encoding/hex"
	"strings"
	"testing"
)

// TestMD4 checks the test suite of RFC 1320 appendix A.5.
func TestMD4(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "31d6cfe0d16ae931b73c59d7e0c089c0"},
		{"a", "bde52cb31de33e46245e05fbdbd6fb24"},
		{"abc", "a448017aaf21d8525fc10ae87aa6729d"},
		{"message digest", "d9130a8164549fe818874806e1c7014b"},
		{"abcdefghijklmnopqrstuvwxyz", "d79e1c308aa5bbcdeea8ed63df412da9"},
		{"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "043f8582f241db351ce627e153e7f0e4"},
		{strings.Repeat("1234567890", 8), "e33b4ddc9c38f2199c3e7b164fcc0536"},
	} {
		sum := md4Sum([]byte(tc.in))
		if got := hex.EncodeToString(sum[:]); got != tc.want {
			t.Errorf("MD4(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestMD4Lengths exercises every padding boundary around one and two blocks.
func TestMD4Lengths(t *testing.T) {
	seen := map[[16]byte]int{}
	for n := 0; n < 140; n++ {
		sum := md4Sum(make([]byte, n))
		if m, dup := seen[sum]; dup {
			t.Fatalf("MD4 of %d and %d zero bytes collide", m, n)
		}
		seen[sum] = n
	}
}
