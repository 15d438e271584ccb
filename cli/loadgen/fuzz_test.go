package loadgen

import "testing"

// FuzzCheck: Check never panics on arbitrary data, and Fill's output of the
// same length always passes it.
func FuzzCheck(f *testing.F) {
	pats := []*Pattern{NewPattern(0), NewPattern(1), NewPattern(1 << 63)}
	f.Add([]byte("hello"), int64(0), uint64(1))
	f.Add(make([]byte, 1024), int64(512), uint64(0))
	f.Fuzz(func(t *testing.T, b []byte, off int64, seed uint64) {
		if off < 0 || off > 1<<50 {
			return
		}
		off -= off % SectorSize
		b = b[:len(b)-len(b)%SectorSize]
		p := pats[seed%uint64(len(pats))]
		p.Check(b, off)
		good := make([]byte, len(b))
		p.Fill(good, off)
		if bad := p.Check(good, off); bad != 0 {
			t.Fatalf("filled data has %d bad sectors", bad)
		}
	})
}
