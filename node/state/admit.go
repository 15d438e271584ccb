package state

import "context"

// Request is what a CREATE asks of the table besides the open itself.
type Request struct {
	Oplock    uint8         // the oplock level requested when Lease is nil
	Lease     *LeaseRequest // a lease request, nil for none
	Overwrite bool          // FILE_SUPERSEDE, FILE_OVERWRITE or FILE_OVERWRITE_IF
	NoCaching bool          // grant nothing (a directory), but still check the lease key
	Directory bool          // the open is of a directory: a lease on it never caches writes
	Replay    bool          // the CREATE has SMB2_FLAGS_REPLAY_OPERATION: Open.Create is not checked
}

// Grant is the oplock or lease an admitted open got.
type Grant struct {
	Oplock uint8       // OplockNone when a lease was requested
	Lease  *LeaseGrant // nil unless a lease was requested
}

// Admit adds o to its file's opens if its access and sharing are
// compatible with the opens already there, first breaking the oplocks and
// leases that stand in the way and waiting for their acknowledgment or
// the break timeout ([MS-SMB2] 3.3.5.9, 3.3.4.7; [MS-FSA] 2.1.5.1.2). It
// returns the oplock or lease granted. onWait, if not nil, is called once
// before the first wait.
func (t *Table) Admit(ctx context.Context, o *Open, req Request, onWait func()) (Grant, error) {
	for first := true; ; first = false {
		wait, msgs, g, err := t.tryAdmit(o, req, first)
		t.send(msgs)
		if err != nil || wait == nil {
			return g, err
		}
		if onWait != nil {
			onWait()
			onWait = nil
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return Grant{}, ctx.Err()
		}
	}
}

// isStat reports whether access opens only attributes or the security
// descriptor for reading: such an open neither breaks caching nor is
// refused for it.
func isStat(access uint32) bool {
	return access&^(accessReadAttr|accessWriteAttr|accessSync) == 0
}

// tryAdmit admits o, or starts the breaks it needs and returns a channel
// to wait on before trying again.
func (t *Table) tryAdmit(o *Open, req Request, first bool) (<-chan struct{}, []*breakMsg, Grant, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.files[o.Key]
	if f == nil {
		f = &file{}
		t.files[o.Key] = f
	}
	if f.deletePending || o.Stream != "" && f.streamPending[o.Stream] {
		return nil, nil, Grant{}, ErrDeletePending
	}
	if o.Create != (CreateID{}) && !req.Replay {
		// [MS-SMB2] 3.3.5.9.10 looks the CreateGuid up among all of the
		// client's opens. A node checks its own (node/server/replay.go,
		// with Open.IsReplayEligible); across nodes the check is made
		// here, at the file's owner, which every CREATE of the file
		// already asks: no etcd read or extra call on the CREATE's path.
		// It covers a CreateGuid reused for the same file (a CREATE sent
		// again without the replay flag, on another node), not one reused
		// for another file, and it counts another node's open while it is
		// open (the owner does not see when it stops being eligible for
		// replay).
		for _, e := range f.opens {
			if e != o && e.Create == o.Create && e.Origin != o.Origin {
				return nil, nil, Grant{}, ErrDuplicateCreate
			}
		}
	}
	var own *holder
	if req.Lease != nil {
		own = t.leases[req.Lease.ID]
		if own != nil && (own.file != o.Key || own.stream != o.Stream) {
			return nil, nil, Grant{}, ErrLeaseKeyInUse
		}
	}
	violation := false
	for _, e := range f.opens {
		violation = violation || conflicts(e, o) && !skipShareModeCheck
	}
	var msgs []*breakMsg
	if !isStat(o.Access) || req.Overwrite {
		var wait <-chan struct{}
		wait, msgs = t.breakFor(f, o.Stream, own, req.Overwrite, violation, first, o.Access)
		if wait != nil {
			return wait, msgs, Grant{}, nil
		}
	}
	if violation {
		return nil, msgs, Grant{}, ErrSharingViolation
	}
	var g Grant
	if !req.NoCaching {
		g = t.grant(f, o, own, req)
	}
	f.opens = append(f.opens, o)
	return nil, msgs, g, nil
}

// breakFor breaks what the other holders of f cache that a new open
// cannot live with: write caching, or handle caching when only closing
// their handles could lift a sharing violation, and everything on an
// overwrite. It returns a channel to wait on if the open must wait for
// an acknowledgment: for what it needs broken, or for a break already in
// progress when it retries (first is false). Only the holders of the
// same stream are broken. The caller holds t.mu.
func (t *Table) breakFor(f *file, stream string, own *holder, overwrite, violation, first bool, access uint32) (<-chan struct{}, []*breakMsg) {
	mask := LeaseWrite
	if violation {
		mask = LeaseHandle
	}
	var wait <-chan struct{}
	var msgs []*breakMsg
	leaseStat := !overwrite && access&^(accessReadAttr|accessWriteAttr|accessReadCtl|accessSync) == 0
	for _, h := range streamHolders(f, stream, own) {
		if leaseStat && h.isLease {
			continue // reading the security descriptor breaks an oplock, not a lease
		}
		cur, wasBreaking := h.state, h.breaking
		to := cur &^ mask
		if overwrite {
			to &^= LeaseHandle | LeaseRead
		}
		if cur&^to == 0 {
			if wasBreaking {
				wait = h.acked
			}
			continue
		}
		if !h.isLease {
			to &^= LeaseHandle | LeaseWrite // an oplock breaks to level II or none
		}
		if m := t.startBreak(h, to, false); m != nil {
			msgs = append(msgs, m)
		}
		if h.breaking && (cur&mask != 0 || wasBreaking && !first) {
			wait = h.acked
		}
	}
	return wait, msgs
}

// grant decides the oplock or lease of a new open given the file's other
// opens ([MS-SMB2] 3.3.5.9.8, 3.3.5.9.11): write caching only for the
// sole open, handle caching for a lease only if no oplock is held, and no
// oplock beside a handle lease; opens of other streams do not count.
// The caller holds t.mu.
func (t *Table) grant(f *file, o *Open, own *holder, req Request) Grant {
	var others, oplocks, handleLease, writer bool
	for _, e := range f.opens {
		if own != nil && e.h == own || e.Stream != o.Stream {
			continue
		}
		if e.h == nil || e.h.state == LeaseNone {
			if isStat(e.Access) {
				continue
			}
		} else {
			oplocks = oplocks || !e.h.isLease
			handleLease = handleLease || e.h.isLease && e.h.state&LeaseHandle != 0
			writer = writer || e.h.state&LeaseWrite != 0
		}
		others = true
	}
	allowed := LeaseRead | LeaseHandle | LeaseWrite
	if others {
		allowed &^= LeaseWrite
	}
	if oplocks {
		allowed &^= LeaseHandle
	}
	if req.Lease == nil {
		level := req.Oplock
		switch {
		case level == OplockNone || handleLease || writer:
			return Grant{}
		case others && level > OplockLevelII:
			level = OplockLevelII
		}
		o.h = &holder{file: o.Key, state: stateOf(level), opens: []*Open{o}}
		return Grant{Oplock: level}
	}
	if req.Directory {
		return Grant{Lease: t.grantDirLease(o, own, req.Lease, allowed)} // dirlease.go
	}
	return Grant{Lease: t.grantLease(o, own, req.Lease, allowed)}
}

// grantLease joins o to its lease, creating or upgrading it: an upgrade
// happens only to a strict superset that needs no break of anyone, and
// never while a break is in progress. The caller holds t.mu.
func (t *Table) grantLease(o *Open, h *holder, r *LeaseRequest, allowed uint32) *LeaseGrant {
	want := r.State & (LeaseRead | LeaseHandle | LeaseWrite)
	if want&LeaseRead == 0 {
		want = LeaseNone // H, W and HW alone are not granted
	}
	if h == nil {
		h = &holder{id: r.ID, isLease: true, file: o.Key, stream: o.Stream, state: want & allowed,
			version: r.Version, parentKey: r.ParentKey, hasParent: r.HasParent}
		if r.Version >= 2 {
			h.epoch = r.Epoch + 1
		}
		t.leases[r.ID] = h
	} else if !h.breaking && want&^h.state != 0 && want&h.state == h.state && want&^allowed == 0 {
		h.state = want
		if h.version >= 2 {
			h.epoch++
		}
	}
	h.opens = append(h.opens, o)
	o.h = h
	return &LeaseGrant{Key: r.ID.Key, State: h.state, BreakInProgress: h.breaking,
		Version: h.version, Epoch: h.epoch, ParentKey: h.parentKey, HasParent: h.hasParent}
}
