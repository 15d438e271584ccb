//go:build !race

package sockio

const raceEnabled = false
