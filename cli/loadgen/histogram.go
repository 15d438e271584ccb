package loadgen

import "math/bits"

// Histogram buckets: values below 2^subBits are exact; above, each power of
// two is split into 2^subBits linear sub-buckets, so a bucket's width is at
// most 1/2^subBits (1.6%) of its value, like an HDR histogram.
const (
	subBits    = 6
	subCount   = 1 << subBits
	maxExp     = 42 // values up to 2^42 ns (~73 minutes); larger ones clamp
	numBuckets = (maxExp - subBits + 1) * subCount
)

// Histogram counts latencies in nanoseconds. It is not safe for concurrent
// use: each worker owns one and Merge combines them at the end.
type Histogram struct {
	counts [numBuckets]uint64
	n      uint64
	sum    uint64
	max    uint64
}

// bucketOf returns the bucket index of v.
func bucketOf(v uint64) int {
	if v < subCount {
		return int(v)
	}
	e := bits.Len64(v) - 1 // 2^e <= v < 2^(e+1), e >= subBits
	if e > maxExp {
		return numBuckets - 1
	}
	sub := (v >> (e - subBits)) & (subCount - 1)
	return (e-subBits+1)*subCount + int(sub)
}

// bucketHigh returns the largest value that falls in bucket i.
func bucketHigh(i int) uint64 {
	if i < subCount {
		return uint64(i)
	}
	e := i/subCount + subBits - 1
	sub := uint64(i % subCount)
	low := (subCount + sub) << (e - subBits)
	return low + (1 << (e - subBits)) - 1
}

// Record adds one value in nanoseconds.
func (h *Histogram) Record(ns uint64) {
	h.counts[bucketOf(ns)]++
	h.n++
	h.sum += ns
	if ns > h.max {
		h.max = ns
	}
}

// Merge adds o's counts to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.max = max(h.max, o.max)
}

// Count returns the number of recorded values.
func (h *Histogram) Count() uint64 { return h.n }

// Max returns the largest recorded value.
func (h *Histogram) Max() uint64 { return h.max }

// Mean returns the mean of the recorded values, 0 if there are none.
func (h *Histogram) Mean() float64 {
	if h.n == 0 {
		return 0
	}
	return float64(h.sum) / float64(h.n)
}

// Quantile returns the value at quantile q (0 < q <= 1): the upper bound of
// the bucket holding the ceil(q*n)-th smallest value, never above Max.
// It returns 0 for an empty histogram.
func (h *Histogram) Quantile(q float64) uint64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q * float64(h.n))
	if float64(rank) < q*float64(h.n) {
		rank++
	}
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(bucketHigh(i), h.max)
		}
	}
	return h.max
}
