//go:build robustnessbroken

package state

import (
	"os"
	"strings"
)

// A deliberately broken build, for showing that the robustness suite's
// checker catches what it must (integration/robustness): built with the
// robustnessbroken tag, a node skips the checks that SMBCLUSTER_BROKEN
// names ("sharemode": the owner's share-mode conflict check; "locks": the
// byte-range lock conflict checks of LOCK, READ and WRITE). Never part of
// a release build.
var (
	skipShareModeCheck = brokenCheck("sharemode")
	skipLockCheck      = brokenCheck("locks")
)

func brokenCheck(name string) bool {
	for _, s := range strings.Split(os.Getenv("SMBCLUSTER_BROKEN"), ",") {
		if s == name {
			return true
		}
	}
	return false
}
