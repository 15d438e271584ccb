package share

import "github.com/smbcluster/smbcluster/node/state"

// Directory leases: a 3.x client that negotiated
// SMB2_GLOBAL_CAP_DIRECTORY_LEASING may hold an R or RH lease on a
// directory (admit in create.go, state/dirlease.go). A change of one of the
// directory's entries breaks those leases to none ([MS-SMB2] 3.3.4.7): a
// file or directory created, overwritten, deleted or renamed into or out
// of it, its basic information set, or an open that wrote data closed.
// The lease the changing open's client named as its parent lease is
// spared ([MS-SMB2] 3.3.5.9.11, ParentLeaseKey).

// breakParentLeases breaks the leases on the directory that holds name,
// but except (the changing client's parent lease), if not nil. It costs
// nothing while no directory holds a lease.
func (d *Disk) breakParentLeases(name string, except *state.LeaseID) {
	if name == "" || !d.table.DirLeases() {
		return
	}
	fi, err := d.fs.Stat(parentOf(name)) // set_info.go
	if err != nil {
		return
	}
	var id state.LeaseID
	if except != nil {
		id = *except
	}
	d.table.BreakDirLeases(state.FileKey{Volume: d.volumeID, FileID: fi.FileID}, id, except != nil)
}

// parentLease is the lease the open's client holds on its parent
// directory, as it named it in the open's lease, or nil.
func (o *open) parentLease() *state.LeaseID {
	if o.so == nil || !o.d.table.DirLeases() {
		return nil
	}
	id, ok := o.d.table.ParentLeaseOf(o.so)
	if !ok {
		return nil
	}
	return &id
}

// changedEntry breaks the parent directory's leases for a change made
// through the open to its file.
func (o *open) changedEntry() {
	o.d.breakParentLeases(o.currentName(), o.parentLease())
}

// renamedEntry breaks the leases of the directories a rename took the
// file out of and into.
func (o *open) renamedEntry(old, new string) {
	except := o.parentLease()
	o.d.breakParentLeases(old, except)
	if parentOf(old) != parentOf(new) {
		o.d.breakParentLeases(new, except)
	}
}

// closedEntry breaks the parent directory's leases when the open that
// closes wrote data or deleted its file; except was taken before the
// close ended the open's lease.
func (o *open) closedEntry(name string, except *state.LeaseID, deleted bool) {
	if deleted || o.written.Load() {
		o.d.breakParentLeases(name, except)
	}
}
