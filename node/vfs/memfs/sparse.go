package memfs

import (
	"syscall"

	"github.com/smbcluster/smbcluster/node/vfs"
)

// pageSize is the unit of allocation memfs reports: a page of zeros is a
// hole, as if the filesystem never stored it.
const pageSize = 4096

// PunchHole zeroes [off, off+n) below the size.
func (f *file) PunchHole(off, n int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("punch", true, true); err != nil {
		return err
	}
	if off < 0 || n < 0 {
		return f.pathErr("punch", syscall.EINVAL)
	}
	size := int64(len(f.n.data))
	if off < size && n > 0 {
		clear(f.n.data[off:min(size, off+min(n, size))])
		f.fs.touch(f.n)
	}
	return nil
}

// AllocatedRanges reports the pages of [off, end) that are not all
// zeros, merged and clipped to [off, end).
func (f *file) AllocatedRanges(off, end int64, limit int) ([]vfs.Range, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("seek", true, false); err != nil {
		return nil, err
	}
	end = min(end, int64(len(f.n.data)))
	var out []vfs.Range
	for p := off - off%pageSize; p < end && off >= 0; p += pageSize {
		if allZero(f.n.data[p:min(p+pageSize, int64(len(f.n.data)))]) {
			continue
		}
		lo, hi := max(p, off), min(p+pageSize, end)
		if k := len(out) - 1; k >= 0 && out[k].Off+out[k].Len == lo {
			out[k].Len = hi - out[k].Off
			continue
		}
		if len(out) == limit {
			break
		}
		out = append(out, vfs.Range{Off: lo, Len: hi - lo})
	}
	return out, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
