package loadgen

import (
	"bytes"
	"encoding/binary"
)

// The data pattern: the file is a sequence of 512-byte sectors. Sector s
// (at byte offset s*512) holds an 8-byte little-endian stamp, the sector's
// offset XOR the seed, followed by 504 bytes taken from a pseudo-random base
// buffer of period patternPeriod keyed by the seed. The stamp catches data
// from the wrong offset (even a multiple of the period away); the base bytes
// catch torn or corrupted sectors. Verifying costs one integer compare and
// one memcmp per sector, against precomputed memory.
const (
	// SectorSize is the pattern's unit; block sizes and offsets are
	// multiples of it.
	SectorSize    = 512
	stampSize     = 8
	patternPeriod = 1 << 20
)

// Pattern generates and checks the data of one seed. It is immutable after
// NewPattern and safe for concurrent use.
type Pattern struct {
	seed uint64
	base []byte // patternPeriod bytes; stamp positions unused
}

// NewPattern precomputes the base buffer of seed.
func NewPattern(seed uint64) *Pattern {
	p := &Pattern{seed: seed, base: make([]byte, patternPeriod)}
	x := seed*0x9e3779b97f4a7c15 + 0x2545f4914f6cdd1d
	for i := 0; i < len(p.base); i += 8 {
		// xorshift64*: fast and good enough to make every sector distinct.
		x ^= x >> 12
		x ^= x << 25
		x ^= x >> 27
		binary.LittleEndian.PutUint64(p.base[i:], x*0x2545f4914f6cdd1d)
	}
	return p
}

// Fill writes into b the pattern of the len(b) bytes at file offset off.
// off and len(b) must be multiples of SectorSize.
func (p *Pattern) Fill(b []byte, off int64) {
	for i := 0; i+SectorSize <= len(b); i += SectorSize {
		o := off + int64(i)
		binary.LittleEndian.PutUint64(b[i:], uint64(o)^p.seed)
		copy(b[i+stampSize:i+SectorSize], p.sector(o))
	}
}

// Check reports how many of the sectors in b, read from file offset off,
// differ from the pattern. off and len(b) must be multiples of SectorSize.
func (p *Pattern) Check(b []byte, off int64) (bad int) {
	for i := 0; i+SectorSize <= len(b); i += SectorSize {
		o := off + int64(i)
		if binary.LittleEndian.Uint64(b[i:]) != uint64(o)^p.seed ||
			!bytes.Equal(b[i+stampSize:i+SectorSize], p.sector(o)) {
			bad++
		}
	}
	return bad
}

// sector returns the 504 base bytes of the sector at offset o.
func (p *Pattern) sector(o int64) []byte {
	start := int(o%patternPeriod) + stampSize
	return p.base[start : start-stampSize+SectorSize]
}
