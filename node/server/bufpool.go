package server

import (
	"math/bits"
	"sync"
)

// Buffers are pooled in power-of-two size classes from 4 KiB to 16 MiB.
const (
	minBufShift = 12
	maxBufShift = 24
)

var bufPools [maxBufShift - minBufShift + 1]sync.Pool

// getBuf returns a buffer of length n from the pool for its size class.
// Buffers above the largest class are allocated and not pooled.
func getBuf(n int) *[]byte {
	c := sizeClass(n)
	if c < 0 {
		b := make([]byte, n)
		return &b
	}
	if p, ok := bufPools[c].Get().(*[]byte); ok {
		*p = (*p)[:n]
		return p
	}
	b := make([]byte, n, 1<<(c+minBufShift))
	return &b
}

// putBuf returns a buffer obtained from getBuf.
func putBuf(p *[]byte) {
	if p == nil {
		return
	}
	c := sizeClass(cap(*p))
	if c < 0 || cap(*p) != 1<<(c+minBufShift) {
		return
	}
	bufPools[c].Put(p)
}

func sizeClass(n int) int {
	if n <= 1<<minBufShift {
		return 0
	}
	c := bits.Len(uint(n-1)) - minBufShift
	if c > maxBufShift-minBufShift {
		return -1
	}
	return c
}

// GetBuffer returns a pooled buffer of length n; return it with PutBuffer.
func GetBuffer(n int) *[]byte { return getBuf(n) }

// PutBuffer returns a buffer obtained from GetBuffer to its pool.
func PutBuffer(p *[]byte) { putBuf(p) }
