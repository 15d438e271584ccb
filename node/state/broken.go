//go:build !robustnessbroken

package state

// The checks a deliberately broken build skips (broken_robustness.go, the
// robustnessbroken build tag): in every other build they are constants,
// and the branches on them are compiled away.
const (
	skipShareModeCheck = false
	skipLockCheck      = false
)
