package server

import (
	"crypto/rand"
	"time"
)

// filetime converts t to a Windows FILETIME (100 ns intervals since 1601).
func filetime(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(t.UnixNano()/100 + 116444736000000000)
}

func randRead(b []byte) { rand.Read(b) }
