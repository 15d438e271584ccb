package nthash

import (
	"encoding/hex"
	"testing"
)

// TestOf checks NTOWFv1 against [MS-NLMP] 4.2.2.1.2 and MD4 of nothing.
// including a character outside the BMP (a surrogate pair on the wire).
func TestOf(t *testing.T) {
	for _, tc := range []struct{ password, want string }{
		{"Password", "a4f49c406510bdcab6824ee7c30fd852"},
		{"", "31d6cfe0d16ae931b73c59d7e0c089c0"},
	} {
		sum := Of(tc.password)
		if got := hex.EncodeToString(sum[:]); got != tc.want {
			t.Errorf("Of(%q) = %s, want %s", tc.password, got, tc.want)
		}
	}
}
