package share

import (
	"errors"
	"time"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
	"github.com/smbcluster/smbcluster/node/vfs"
)

// setSparse serves FSCTL_SET_SPARSE ([MS-FSA] 2.1.5.10.38): the
// FILE_ATTRIBUTE_SPARSE_FILE bit is kept with the stored DOS attributes.
// The FILE_SET_SPARSE_BUFFER is optional: without it the file becomes
// sparse; bytes after its SetSparse byte are ignored, as Windows does.
func (o *open) setSparse(req *smb2.IoctlRequest) (server.Response, error) {
	if o.isDir {
		return nil, smb2.StatusInvalidParameter
	}
	if o.access&(smb2.FileWriteData|smb2.FileWriteAttributes|smb2.FileAppendData) == 0 {
		return nil, smb2.StatusAccessDenied
	}
	sparse := len(req.Input) == 0 || req.Input[0] != 0
	fi, err := o.f.Stat()
	if err != nil {
		return nil, err
	}
	if (fi.Attributes&vfs.AttrSparse != 0) == sparse {
		return ioctlOut(req, nil), nil
	}
	attrs := fi.Attributes & vfs.StoredAttrs &^ vfs.AttrSparse
	if sparse {
		attrs |= vfs.AttrSparse
	}
	var zero time.Time
	if err := o.f.SetInfo(zero, zero, zero, zero, &attrs); err != nil {
		return nil, err
	}
	o.postModified(smb2.FileNotifyChangeAttributes) // notify.go
	o.changedEntry()
	return ioctlOut(req, nil), nil
}

// setZeroData serves FSCTL_SET_ZERO_DATA ([MS-FSA] 2.1.5.10.39): the
// range, clipped to the end of file, reads as zeros afterwards; on a
// sparse file it is deallocated. A byte-range lock of another open over
// the range fails it with STATUS_FILE_LOCK_CONFLICT.
func (o *open) setZeroData(req *smb2.IoctlRequest) (server.Response, error) {
	var z fscc.FileZeroDataInformation
	if err := z.Decode(req.Input); err != nil {
		return nil, smb2.StatusInvalidParameter
	}
	if o.isDir {
		return nil, smb2.StatusInvalidParameter
	}
	if err := o.need(smb2.FileWriteData); err != nil {
		return nil, err
	}
	if z.BeyondFinalZero == z.FileOffset {
		return ioctlOut(req, nil), nil
	}
	if err := o.checkLocks(uint64(z.FileOffset), uint64(z.BeyondFinalZero-z.FileOffset), true); err != nil {
		return nil, err
	}
	fi, err := o.f.Stat()
	if err != nil {
		return nil, err
	}
	end := min(z.BeyondFinalZero, fi.Size)
	if z.FileOffset < end {
		if err := zeroRange(o.f, z.FileOffset, end, fi.Attributes&vfs.AttrSparse != 0); err != nil {
			return nil, err
		}
		o.postModified(smb2.FileNotifyChangeLastWrite)
	}
	return ioctlOut(req, nil), nil
}

// zeroRange zeroes [off, end) of f: a hole punched when the file is
// sparse and the backend can, zeros written otherwise.
func zeroRange(f vfs.File, off, end int64, sparse bool) error {
	if sf, ok := f.(vfs.SparseFile); ok && sparse {
		err := sf.PunchHole(off, end-off)
		if !errors.Is(err, errors.ErrUnsupported) {
			return err
		}
	}
	zeros := make([]byte, min(end-off, 64<<10))
	for off < end {
		n := min(int64(len(zeros)), end-off)
		if _, err := f.WriteAt(zeros[:n], off); err != nil {
			return err
		}
		off += n
	}
	return nil
}

// queryAllocatedRanges serves FSCTL_QUERY_ALLOCATED_RANGES ([MS-FSA]
// 2.1.5.10.22): the ranges of a sparse file that hold data, from the
// backend; a file that is not sparse, or a backend that cannot tell,
// reports the queried range below the end of file as one range. An
// output buffer too small for one range fails with
// STATUS_BUFFER_TOO_SMALL; one too small for all of them gets those that
// fit with STATUS_BUFFER_OVERFLOW, as Windows and Samba answer.
func (o *open) queryAllocatedRanges(req *smb2.IoctlRequest) (server.Response, error) {
	var q fscc.FileAllocatedRangeBuffer
	if err := q.Decode(req.Input); err != nil { // bytes beyond the buffer are ignored
		return nil, smb2.StatusInvalidParameter
	}
	if o.isDir {
		return nil, smb2.StatusInvalidParameter
	}
	if err := o.need(smb2.FileReadData); err != nil {
		return nil, err
	}
	fi, err := o.f.Stat()
	if err != nil {
		return nil, err
	}
	end := min(q.FileOffset+q.Length, fi.Size)
	if q.FileOffset >= end {
		return ioctlOut(req, nil), nil
	}
	limit := int(req.MaxOutputResponse / 16)
	if limit == 0 {
		return nil, smb2.StatusBufferTooSmall
	}
	rs := []vfs.Range{{Off: q.FileOffset, Len: end - q.FileOffset}}
	if sf, ok := o.f.(vfs.SparseFile); ok && fi.Attributes&vfs.AttrSparse != 0 {
		if rs, err = sf.AllocatedRanges(q.FileOffset, end, limit+1); err != nil {
			return nil, err
		}
	}
	var status error
	if len(rs) > limit {
		rs, status = rs[:limit], smb2.StatusBufferOverflow
	}
	out := make([]fscc.FileAllocatedRangeBuffer, len(rs))
	for i, r := range rs {
		out[i] = fscc.FileAllocatedRangeBuffer{FileOffset: r.Off, Length: r.Len}
	}
	return ioctlOut(req, fscc.EncodeAllocatedRanges(out)), status
}
