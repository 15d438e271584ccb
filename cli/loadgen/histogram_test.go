package loadgen

import (
	"math"
	"testing"
)

func TestBucketBounds(t *testing.T) {
	// Every value lies in its bucket: above the previous bucket's high end,
	// at or below its own, and the bucket is at most 1/64 of the value wide.
	for v := uint64(0); v < 1<<20; v += 1 + v/97 {
		i := bucketOf(v)
		if hi := bucketHigh(i); v > hi {
			t.Fatalf("v=%d bucket %d high %d", v, i, hi)
		}
		if i > 0 && v <= bucketHigh(i-1) {
			t.Fatalf("v=%d also fits bucket %d", v, i-1)
		}
		if w := bucketHigh(i) - v; v >= subCount && float64(w) > float64(v)/subCount {
			t.Fatalf("v=%d bucket too wide: %d", v, w)
		}
	}
	if got := bucketOf(math.MaxUint64); got != numBuckets-1 {
		t.Fatalf("huge value bucket %d, want clamp %d", got, numBuckets-1)
	}
}

func TestQuantiles(t *testing.T) {
	var h Histogram
	if h.Quantile(0.5) != 0 || h.Mean() != 0 {
		t.Fatal("empty histogram not zero")
	}
	for v := uint64(1); v <= 100000; v++ {
		h.Record(v * 1000) // 1 µs .. 100 ms, uniform
	}
	for _, tc := range []struct{ q, want float64 }{
		{0.5, 50000e3}, {0.99, 99000e3}, {0.999, 99900e3}, {1, 100000e3},
	} {
		got := float64(h.Quantile(tc.q))
		if got < tc.want || got > tc.want*(1+1.0/subCount) {
			t.Errorf("Quantile(%v) = %v, want %v within +1/%d", tc.q, got, tc.want, subCount)
		}
	}
	if h.Count() != 100000 || h.Max() != 100000e3 {
		t.Errorf("count %d max %d", h.Count(), h.Max())
	}
	if m := h.Mean(); m != 50000.5e3 {
		t.Errorf("mean %v", m)
	}
}

func TestQuantileExactSmall(t *testing.T) {
	var h Histogram
	for _, v := range []uint64{5, 1, 3, 2, 4} {
		h.Record(v)
	}
	for q, want := range map[float64]uint64{0.2: 1, 0.5: 3, 0.8: 4, 1: 5} {
		if got := h.Quantile(q); got != want {
			t.Errorf("Quantile(%v) = %d, want %d", q, got, want)
		}
	}
}

func TestMerge(t *testing.T) {
	var a, b, all Histogram
	for v := uint64(1); v < 5000; v++ {
		all.Record(v * 37)
		if v%3 == 0 {
			a.Record(v * 37)
		} else {
			b.Record(v * 37)
		}
	}
	a.Merge(&b)
	if a != all {
		t.Fatal("merge differs from recording everything in one histogram")
	}
}

func TestRecordAllocs(t *testing.T) {
	var h Histogram
	v := uint64(1)
	if n := testing.AllocsPerRun(1000, func() { h.Record(v); v = v*3 + 1 }); n != 0 {
		t.Fatalf("Record allocates %v times", n)
	}
}

func BenchmarkRecord(b *testing.B) {
	var h Histogram
	b.ReportAllocs()
	for i := range b.N {
		h.Record(uint64(i) * 977)
	}
}
