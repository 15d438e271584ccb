package vfstest

import (
	"bytes"
	"testing"

	"github.com/smbcluster/smbcluster/node/vfs"
)

// testSparse checks vfs.SparseFile: a punched range reads as zeros and
// keeps the size; allocated ranges are ordered, disjoint, clipped to the
// query and the size, at most limit of them, and cover every byte that
// holds data (a backend may report more than is allocated, not less).
func testSparse(t *testing.T, fsys vfs.FS) {
	f := open(t, fsys, "f", rw)
	sf, ok := f.(vfs.SparseFile)
	if !ok {
		t.Skip("no vfs.SparseFile")
	}
	const size = 256 << 10
	data := bytes.Repeat([]byte{0xAA}, 64<<10)
	for _, off := range []int64{0, 128 << 10} {
		if _, err := f.WriteAt(data, off); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	if err := sf.PunchHole(0, 32<<10); err != nil {
		t.Fatalf("PunchHole: %v", err)
	}
	got := make([]byte, size)
	if n, err := f.ReadAt(got, 0); n != size {
		t.Fatalf("read %d: %v", n, err)
	}
	if !allZero(got[:32<<10]) || got[32<<10] != 0xAA {
		t.Fatal("punched range does not read as zeros, or more was punched")
	}
	if fi, err := f.Stat(); err != nil || fi.Size != size {
		t.Fatalf("size after PunchHole = %d, %v", fi.Size, err)
	}
	checkRanges(t, sf, got, 0, size)
	checkRanges(t, sf, got, 40<<10, 150<<10)
	if rs, err := sf.AllocatedRanges(size, size+4096, 8); err != nil || len(rs) != 0 {
		t.Fatalf("ranges beyond the end = %v, %v", rs, err)
	}
	if rs, err := sf.AllocatedRanges(0, size, 1); err != nil || len(rs) != 1 {
		t.Fatalf("ranges with limit 1 = %v, %v", rs, err)
	}
}

// checkRanges checks the allocated ranges of [off, end) against the data.
func checkRanges(t *testing.T, sf vfs.SparseFile, data []byte, off, end int64) {
	t.Helper()
	rs, err := sf.AllocatedRanges(off, end, 100)
	if err != nil {
		t.Fatal(err)
	}
	next := off
	for _, r := range rs {
		if r.Off < next || r.Len <= 0 || r.Off+r.Len > end {
			t.Fatalf("ranges of [%d, %d) = %v: out of order or bounds", off, end, rs)
		}
		if !allZero(data[next:r.Off]) {
			t.Fatalf("ranges of [%d, %d) = %v miss data before %d", off, end, rs, r.Off)
		}
		next = r.Off + r.Len
	}
	if !allZero(data[next:end]) {
		t.Fatalf("ranges of [%d, %d) = %v miss data after %d", off, end, rs, next)
	}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
