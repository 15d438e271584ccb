package share

import (
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/vfs"
)

// allocationUnit is the cluster size allocations are rounded up to.
const allocationUnit = 4096

// allocationSize is the AllocationSize an open reports for its file: the
// data's allocation (the vfs's, which leaves out the blocks of extended
// attributes), or the allocation the client set through this open when
// that is larger, as Samba keeps it per open. A directory reports 0.
func (o *open) allocationSize(fi vfs.FileInfo) int64 {
	if fi.IsDir {
		return 0
	}
	o.mu.Lock()
	a := o.allocation
	o.mu.Unlock()
	return max(fi.AllocationSize, a)
}

// setAllocationHint records an allocation the client asked for, rounded up
// to the allocation unit.
func (o *open) setAllocationHint(n int64) {
	if n < 0 {
		n = 0
	}
	n = (n + allocationUnit - 1) &^ (allocationUnit - 1)
	o.mu.Lock()
	o.allocation = n
	o.mu.Unlock()
}

// applyAllocSize applies SMB2_CREATE_ALLOCATION_SIZE ("AlSi", [MS-SMB2]
// 2.2.13.2.6) to a file the CREATE made or overwrote. The space is not
// reserved (as Samba without "strict allocate"); the open reports it.
func (o *open) applyAllocSize(req *smb2.CreateRequest, action uint32) error {
	k := req.Known()
	if !k.Present(smb2.CtxAllocationSize) || o.isDir || action == smb2.FileOpened {
		return nil
	}
	if !k.Valid(smb2.CtxAllocationSize) {
		return smb2.StatusInvalidParameter
	}
	o.setAllocationHint(int64(k.AllocationSize & (1<<62 - 1)))
	return nil
}
