package share

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/smbcluster/smbcluster/node/smb2"
)

// TestOthersMayHold: a CREATE that made its file and was refused keeps
// the file when another open may hold it — the refusal was that open's,
// or the owner did not answer — and removes it when the refusal was its
// own (the robustness suite's history: a file removed under an admitted
// open, issue 23).
func TestOthersMayHold(t *testing.T) {
	for _, tc := range []struct {
		err  error
		keep bool
	}{
		{smb2.StatusSharingViolation, true},
		{smb2.StatusDeletePending, true},
		{smb2.StatusIOTimeout, true},
		{fmt.Errorf("admit: %w", context.DeadlineExceeded), true},
		{errors.New("peer: connection refused"), true},
		{smb2.StatusInvalidParameter, false}, // a lease key in use on another file
		{smb2.StatusAccessDenied, false},
		{smb2.StatusDuplicateObjectid, false},
	} {
		if got := othersMayHold(tc.err); got != tc.keep {
			t.Errorf("othersMayHold(%v) = %v, want %v", tc.err, got, tc.keep)
		}
	}
}
