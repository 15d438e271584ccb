package state

// Restore puts o back into the table as it was when the node that owned
// its file went away: admitted, with caching c (an oplock, or its share of
// a lease, created if it is the lease's first open), and the file's delete
// pending set if deletePending. It checks nothing: the opens being
// restored were all admitted together before. Used by a node that takes a
// shard over to rebuild its files' state from the nodes holding the opens.
func (t *Table) Restore(o *Open, c Caching, dir bool, deletePending bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.files[o.Key]
	if f == nil {
		f = &file{}
		t.files[o.Key] = f
	}
	for _, e := range f.opens {
		if e == o {
			return
		}
	}
	f.opens = append(f.opens, o)
	if deletePending {
		f.deletePending = true
	}
	switch {
	case c.Lease:
		h := t.leases[c.ID]
		if h == nil {
			h = &holder{id: c.ID, isLease: true, file: o.Key, stream: o.Stream, state: c.State,
				version: c.Version, epoch: c.Epoch, parentKey: c.ParentKey, hasParent: c.HasParent, dir: dir}
			t.leases[c.ID] = h
			if dir {
				t.dirLeases.Add(1)
			}
		}
		h.opens = append(h.opens, o)
		o.h = h
	case c.State != LeaseNone:
		o.h = &holder{file: o.Key, state: c.State, opens: []*Open{o}}
	}
}

// OplockCaching is the Caching of an oplock of level.
func OplockCaching(level uint8) Caching { return Caching{State: stateOf(level)} }

// Locks returns the byte-range locks o holds, in the order granted.
func (t *LockTable) Locks(o *Open) []Lock {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Lock
	if f := t.files[lockKeyOf(o)]; f != nil {
		for _, h := range f.locks {
			if h.owner == o {
				out = append(out, h.Lock)
			}
		}
	}
	return out
}

// Opens lists the opens of the files match selects: a node taking a
// shard over checks what its table kept against what the nodes hold.
func (t *Table) Opens(match func(FileKey) bool) []*Open {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*Open
	for k, f := range t.files {
		if match(k) {
			out = append(out, f.opens...)
		}
	}
	return out
}

// Owners lists the opens holding byte-range locks of the files match
// selects, each once.
func (t *LockTable) Owners(match func(FileKey) bool) []*Open {
	t.mu.Lock()
	defer t.mu.Unlock()
	seen := map[*Open]bool{}
	var out []*Open
	for k, f := range t.files {
		if !match(k.FileKey) {
			continue
		}
		for _, h := range f.locks {
			if !seen[h.owner] {
				seen[h.owner] = true
				out = append(out, h.owner)
			}
		}
	}
	return out
}
