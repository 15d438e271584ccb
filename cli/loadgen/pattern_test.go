package loadgen

import (
	"fmt"
	"testing"
)

func TestPatternRoundTrip(t *testing.T) {
	p := NewPattern(7)
	for _, tc := range []struct {
		off int64
		n   int
	}{{0, 512}, {512, 4096}, {patternPeriod - 1024, 8192}, {3 << 30, 1 << 20}} {
		b := make([]byte, tc.n)
		p.Fill(b, tc.off)
		if bad := p.Check(b, tc.off); bad != 0 {
			t.Errorf("off %d n %d: %d bad sectors in freshly filled data", tc.off, tc.n, bad)
		}
	}
}

func TestPatternDetects(t *testing.T) {
	p := NewPattern(7)
	b := make([]byte, 64<<10)
	p.Fill(b, 1<<20)

	b[700] ^= 1 // one flipped bit in sector 1
	if bad := p.Check(b, 1<<20); bad != 1 {
		t.Errorf("flipped bit: %d bad sectors, want 1", bad)
	}
	b[700] ^= 1

	// The same bytes a whole pattern period away: base bytes repeat, stamps do not.
	if bad := p.Check(b, 1<<20+patternPeriod); bad != len(b)/SectorSize {
		t.Errorf("wrong offset: %d bad sectors, want %d", bad, len(b)/SectorSize)
	}
	if bad := NewPattern(8).Check(b, 1<<20); bad != len(b)/SectorSize {
		t.Errorf("other seed: %d bad sectors, want all", bad)
	}
	clear(b[4096:8192]) // a hole that reads as zeros
	if bad := p.Check(b, 1<<20); bad != 8 {
		t.Errorf("zeroed 4 KiB: %d bad sectors, want 8", bad)
	}
}

func TestPatternSectorsDistinct(t *testing.T) {
	p := NewPattern(1)
	seen := map[string]int64{}
	b := make([]byte, SectorSize)
	for off := int64(0); off < patternPeriod; off += SectorSize {
		p.Fill(b, off)
		k := string(b[stampSize:])
		if prev, ok := seen[k]; ok {
			t.Fatalf("sectors %d and %d share their base bytes", prev, off)
		}
		seen[k] = off
	}
}

func TestCheckAllocs(t *testing.T) {
	p := NewPattern(3)
	b := make([]byte, 1<<20)
	p.Fill(b, 0)
	if n := testing.AllocsPerRun(10, func() { p.Check(b, 0) }); n != 0 {
		t.Fatalf("Check allocates %v times", n)
	}
}

// BenchmarkCheck measures the verification cost per byte read (SetBytes),
// to compare with the throughput being measured.
func BenchmarkCheck(b *testing.B) {
	for _, n := range []int{4 << 10, 64 << 10, 1 << 20} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			p := NewPattern(3)
			buf := make([]byte, n)
			p.Fill(buf, 0)
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for range b.N {
				if p.Check(buf, 0) != 0 {
					b.Fatal("mismatch")
				}
			}
		})
	}
}

func BenchmarkFill(b *testing.B) {
	p := NewPattern(3)
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(buf)))
	for i := range b.N {
		p.Fill(buf, int64(i%64)<<20)
	}
}
