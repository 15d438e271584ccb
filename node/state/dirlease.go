package state

// Directory leases ([MS-SMB2] 3.3.1.4, 3.3.5.9.11): a lease on a directory
// lets its client cache the directory's listing and handle. It is granted
// R or RH, never W, and breaks to none when an entry of the directory is
// created, deleted, renamed or changed — except when the change comes from
// an open whose lease names that directory lease as its ParentLeaseKey,
// since that client knows of the change already ([MS-FSA] 2.1.4.12 with
// PARENT_OBJECT, 2.1.4.12.2). Such a break does not hold up the operation
// that caused it.

// DirLeases reports whether any directory holds a lease, so that changes
// in directories look up their parent only while one does.
func (t *Table) DirLeases() bool { return t.dirLeases.Load() > 0 }

// ParentLeaseOf returns the lease o's client said it holds on o's parent
// directory (the ParentLeaseKey of o's version 2 lease), if any.
func (t *Table) ParentLeaseOf(o *Open) (LeaseID, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := o.h
	if h == nil || !h.isLease || !h.hasParent {
		return LeaseID{}, false
	}
	return LeaseID{Client: h.id.Client, Key: h.parentKey}, true
}

// BreakDirLeases breaks to none the read and handle caching of the leases
// on directory dir, but the lease except names when hasExcept, as a change
// of one of its entries does. It does not wait for acknowledgments.
func (t *Table) BreakDirLeases(dir FileKey, except LeaseID, hasExcept bool) {
	t.mu.Lock()
	var msgs []*breakMsg
	if f := t.files[dir]; f != nil {
		for _, h := range holders(f, nil) {
			if !h.isLease || !h.dir || hasExcept && h.id == except || h.state&(LeaseRead|LeaseHandle) == 0 {
				continue
			}
			if m := t.startBreak(h, LeaseNone, false); m != nil {
				msgs = append(msgs, m)
			}
		}
	}
	t.mu.Unlock()
	t.send(msgs)
}

// grantDirLease grants a lease on a directory: as grantLease does, but
// without write caching. The caller holds t.mu.
func (t *Table) grantDirLease(o *Open, own *holder, r *LeaseRequest, allowed uint32) *LeaseGrant {
	dr := *r
	dr.State &^= LeaseWrite
	g := t.grantLease(o, own, &dr, allowed&^LeaseWrite)
	if own == nil {
		o.h.dir = true
		t.dirLeases.Add(1)
	}
	return g
}
