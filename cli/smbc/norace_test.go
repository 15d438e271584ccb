//go:build !race

package smbc

const raceEnabled = false
