package server

import (
	"testing"

	"github.com/smbcluster/smbcluster/node/smb2"
)

func TestDispositionOf(t *testing.T) {
	plain, related := &smb2.Header{}, &smb2.Header{Flags: smb2.FlagRelatedOperations}
	for _, tc := range []struct {
		name           string
		h              *smb2.Header
		i, n           int
		sealed, inline bool
		want           disposition
	}{
		{"lone plaintext in the reader", plain, 0, 1, false, true, dispLast | dispLone | dispSingle | dispInline},
		{"lone sealed", plain, 0, 1, true, false, dispLast | dispLone | dispEncrypted},
		{"first of a compound", plain, 0, 3, false, false, 0},
		{"related last of a sealed compound", related, 2, 3, true, false, dispRelated | dispLast | dispEncrypted},
	} {
		d := dispositionOf(tc.h, tc.i, tc.n, tc.sealed, tc.inline)
		if d != tc.want {
			t.Errorf("%s: %08b, want %08b", tc.name, d, tc.want)
		}
		got := [...]bool{d.related(), d.last(), d.lone(), d.single(), d.encrypted(), d.inline(), d.verified()}
		for j, f := range [...]disposition{dispRelated, dispLast, dispLone, dispSingle, dispEncrypted, dispInline, dispVerified} {
			if got[j] != (tc.want&f != 0) {
				t.Errorf("%s: flag %08b reads %v", tc.name, f, got[j])
			}
		}
	}
}
