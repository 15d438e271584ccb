package peer

import (
	"context"
	"errors"
	"time"

	"github.com/smbcluster/smbcluster/node/state"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
)

var (
	_ state.Files = (*Router)(nil)
	_ state.Locks = (*Router)(nil)
)

// Admit implements state.Files: at the owner of o's file.
func (r *Router) Admit(ctx context.Context, o *state.Open, req state.Request, onWait func()) (state.Grant, error) {
	if req.Lease != nil {
		// A lease is one file's (and stream's): a key this client uses on
		// another file through this node is refused here, whichever
		// nodes own the two files.
		r.hs.mu.Lock()
		lf, ok := r.hs.leaseFiles[req.Lease.ID]
		r.hs.mu.Unlock()
		if ok && (lf.key != o.Key || lf.stream != o.Stream) {
			return state.Grant{}, state.ErrLeaseKeyInUse
		}
	}
	r.hs.hold(o)
	g, err := r.admit(ctx, o, req, onWait)
	if err != nil {
		r.hs.unhold(o)
		return g, err
	}
	r.hs.admitted(o)
	if req.Lease != nil {
		r.hs.mu.Lock()
		r.hs.leaseOf[o.Ref] = req.Lease.ID
		r.hs.leaseFiles[req.Lease.ID] = leaseFile{o.Key, o.Stream}
		r.hs.mu.Unlock()
	}
	return g, err
}

func (r *Router) admit(ctx context.Context, o *state.Open, req state.Request, onWait func()) (state.Grant, error) {
	// The request's context has no deadline: an Admit may wait as long
	// as the owner waits for a break. But an owner that does not answer
	// at all (it cannot be reached: a partition, a stopped process whose
	// lease still holds) must not hold the client's request: without an
	// answer within callTimeout — the result, or word that the owner
	// waits for a break — the open fails with ErrPeerUnreachable. A
	// stream that breaks during such a wait counts again from then.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := time.AfterFunc(callTimeout, func() { cancel(ErrPeerUnreachable) })
	defer timer.Stop()
	waiting := false
	wait := func() {
		timer.Stop()
		waiting = true
		if onWait != nil {
			onWait()
			onWait = nil
		}
	}
	for {
		changed := r.routes.Changed()
		t, err := r.at(ctx, o.Key)
		if err != nil {
			r.log.Warn("admitting an open", "file", keyString(o.Key), "err", err)
			if context.Cause(ctx) == ErrPeerUnreachable {
				return state.Grant{}, ErrPeerUnreachable
			}
			return state.Grant{}, err
		}
		if t.local {
			timer.Stop()
			r.stats.Local.Add(1)
			g, err := r.own.admitTable(ctx, o, req, r.routes.Self(), onWait)
			if err == nil && cachesReads(g) {
				r.own.announceRead(o.Key, "")
			}
			return g, err
		}
		if r.admitDelegated(o, req, t) { // deleg.go
			return state.Grant{}, nil
		}
		id := r.dg.ask(o, req)
		r.stats.call(OpAdmit)
		ev, err := r.admitAt(ctx, t, o, req, id, wait)
		r.dg.answered(id, o, t, ev, err)
		if err == nil {
			if ev.LocksPresent {
				r.hs.setHint(o.Key)
			}
			if ev.ReadPresent {
				r.hs.readAgain(o.Key)
			}
			if ev.DeletePending {
				r.setDelHint(o.Key)
			}
			g, gerr := grantOf(ev), codeErr(ev.Error, ev.Message)
			if gerr == nil {
				r.hs.noteCaching(o, func(h *heldState) { h.caching, h.unacked, h.dir = grantCaching(g, req), 0, req.Directory })
			}
			return g, gerr
		}
		if !moved(err) || ctx.Err() != nil {
			r.log.Warn("admitting an open at its owner", "file", keyString(o.Key), "err", err)
			// The answer is the client's now; the owner is told to
			// forget the open in the background (bounded by callTimeout).
			go r.forget(o, t)
			if context.Cause(ctx) == ErrPeerUnreachable {
				return state.Grant{}, ErrPeerUnreachable
			}
			if ctx.Err() != nil {
				return state.Grant{}, ctx.Err()
			}
			return state.Grant{}, err
		}
		if waiting { // the owner was waiting, and its stream broke
			waiting = false
			timer.Reset(callTimeout)
		}
		r.waitRoutes(ctx, changed)
	}
}

// admitAt runs one Admit at a remote owner and returns its result event.
// deleg, when not zero, is a delegation it asks for (deleg.go).
func (r *Router) admitAt(ctx context.Context, t target, o *state.Open, req state.Request, deleg uint64, onWait func()) (*peerv1.AdmitEvent, error) {
	return t.mx.admit(ctx, &peerv1.AdmitRequest{
		Route: t.route, Open: openDesc(o, r.ref(o)), Oplock: uint32(req.Oplock), Lease: leaseReqPB(req.Lease),
		Overwrite: req.Overwrite, NoCaching: req.NoCaching, Directory: req.Directory, Delegation: deleg, Replay: req.Replay,
	}, onWait)
}

// forget removes o at t's owner after an Admit that may have reached it
// but whose answer did not reach us, so that no phantom open stays.
func (r *Router) forget(o *state.Open, t target) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	t.mx.call(ctx, &peerv1.CallRequest{Route: t.route, Key: keyPB(o.Key), Op: &peerv1.CallRequest_Remove{Remove: &peerv1.RemoveOp{Open: r.ref(o)}}})
}

// Remove implements state.Files.
func (r *Router) Remove(o *state.Open) (last, deletePending bool) {
	if r.closeDelegated(o) { // deleg.go: its delegation stands for it at the owner
		return false, false
	}
	local := func() { last, deletePending = r.table.Remove(o) }
	req := &peerv1.CallRequest{Key: keyPB(o.Key), Op: &peerv1.CallRequest_Remove{Remove: &peerv1.RemoveOp{Open: r.ref(o)}}}
	resp, err := r.call(o.Key, local, req)
	r.hs.unhold(o)
	if resp != nil {
		return resp.GetRemove().GetLast(), resp.GetRemove().GetDeletePending()
	}
	if err != nil {
		r.log.Warn("removing an open at its owner", "err", err)
		go r.closeLater(o, req, func() { r.locks.Release(o); r.table.Remove(o) })
	}
	return last, deletePending
}

// Drop implements state.Files. A close whose answer cannot matter does
// not wait for it (closing.go).
func (r *Router) Drop(o *state.Open) (deleteStream, deleteFile bool) {
	if r.closeDelegated(o) { // deleg.go: no delete is pending on a delegated file
		return false, false
	}
	if r.dropLater(o) {
		return false, false
	}
	req := &peerv1.CallRequest{Key: keyPB(o.Key), Op: &peerv1.CallRequest_Drop{Drop: &peerv1.DropOp{Open: r.ref(o)}}}
	resp, err := r.call(o.Key, func() { deleteStream, deleteFile = r.table.Drop(o) }, req)
	r.hs.unhold(o)
	if resp != nil {
		r.hs.dropped(o.Key)
		return resp.GetDrop().GetDeleteStream(), resp.GetDrop().GetDeleteFile()
	}
	if err != nil {
		r.log.Warn("dropping an open at its owner", "err", err)
		go r.closeLater(o, req, func() { r.locks.Release(o); r.table.Drop(o) })
	}
	return deleteStream, deleteFile
}

// Ack implements state.Files.
func (r *Router) Ack(o *state.Open, level uint8) (ok bool) {
	r.dg.convert(o) // deleg.go: the owner must know it
	resp, _ := r.call(o.Key, func() { ok = r.table.Ack(o, level) },
		&peerv1.CallRequest{Key: keyPB(o.Key), Op: &peerv1.CallRequest_Ack{Ack: &peerv1.AckOp{Open: r.ref(o), Level: uint32(level)}}})
	if resp != nil {
		r.hs.noteCaching(o, func(h *heldState) {
			c := state.OplockCaching(uint8(resp.GetAck().GetLevel()))
			c.State &= h.caching.State // answered before a later break, perhaps noted first (ackedTo)
			h.caching, h.unacked = c, 0
		})
		return resp.GetAck().GetAcked()
	}
	return ok
}

// AckLease implements state.Files. The lease's file is found among the
// opens this node holds: a client acknowledges on a connection of its
// own, and the lease's opens were made through it.
func (r *Router) AckLease(id state.LeaseID, st uint32) (uint32, error) {
	key, ok := r.hs.leaseFile(id)
	if !ok {
		return r.ackAnywhere(id, st)
	}
	var got uint32
	var lerr error
	resp, err := r.call(key, func() { got, lerr = r.table.AckLease(id, st) },
		&peerv1.CallRequest{Key: keyPB(key), Op: &peerv1.CallRequest_AckLease{AckLease: &peerv1.AckLeaseOp{Lease: leaseKeyPB(id), State: st}}})
	switch {
	case err != nil:
		return 0, err
	case resp != nil:
		if resp.Error == peerv1.Error_ERROR_UNSPECIFIED {
			r.hs.noteLease(id, ackedTo(resp.GetAckLease().GetState()))
		}
		return resp.GetAckLease().GetState(), codeErr(resp.Error, resp.Message)
	}
	return got, lerr
}

// ackedTo notes the owner's answer to an acknowledgment, the lease's
// state once it took it, in the copy of a held open's caching (what its
// durable record publishes, what a new owner rebuilds). The answer only
// takes caching away: the owner may break the lease again as soon as it
// took the acknowledgment (the open that waited for it goes on and, say,
// locks), and that break's Deliver comes on another connection than the
// answer, so it may be noted first — the answer then says R, the client
// was told none, and the record kept R (TestDurableFailover's record
// never up to date). Caching only drops between grants, which the
// admission notes whole.
func ackedTo(st uint32) func(*heldState) {
	return func(h *heldState) { h.caching.State &= st; h.unacked = 0 }
}

// ackAnywhere takes an acknowledgment of a lease none of this node's
// opens holds: the client acknowledged on its connection to this node a
// break sent on its connection to another (smbtorture
// smb2.lease.v2_complex2 acks on its second connection). A lease is one
// file's, so one owner's table at most knows it: this node's, or another
// node's, each asked in turn.
func (r *Router) ackAnywhere(id state.LeaseID, st uint32) (uint32, error) {
	got, err := r.table.AckLease(id, st)
	if !errors.Is(err, state.ErrNoLease) {
		return got, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	req := &peerv1.CallRequest{Op: &peerv1.CallRequest_AckLease{AckLease: &peerv1.AckLeaseOp{Lease: leaseKeyPB(id), State: st}}}
	for a := range ask(ctx, r, nil, 0, func(ctx context.Context, cli peerv1.PeerServiceClient) (*peerv1.CallResponse, error) {
		r.stats.call(OpAckLease)
		return cli.Call(ctx, req)
	}) {
		if a.Err != nil || a.Resp.Error == peerv1.Error_ERROR_NO_LEASE {
			continue
		}
		return a.Resp.GetAckLease().GetState(), codeErr(a.Resp.Error, a.Resp.Message)
	}
	return got, err
}

// Oplock implements state.Files.
func (r *Router) Oplock(o *state.Open) (level uint8) {
	if r.isDelegated(o) { // deleg.go
		return state.OplockNone
	}
	resp, _ := r.call(o.Key, func() { level = r.table.Oplock(o) },
		&peerv1.CallRequest{Key: keyPB(o.Key), Op: &peerv1.CallRequest_Oplock{Oplock: &peerv1.OplockOp{Open: r.ref(o)}}})
	if resp != nil {
		return uint8(resp.GetOplock().GetLevel())
	}
	return level
}

// CachingOf implements state.Files.
func (r *Router) CachingOf(o *state.Open) (c state.Caching) {
	if r.isDelegated(o) { // deleg.go
		return c
	}
	resp, _ := r.call(o.Key, func() { c = r.table.CachingOf(o) },
		&peerv1.CallRequest{Key: keyPB(o.Key), Op: &peerv1.CallRequest_CachingOf{CachingOf: &peerv1.CachingOfOp{Open: r.ref(o)}}})
	if resp != nil {
		return cachingOf(resp.GetCachingOf().GetCaching())
	}
	return c
}

// BreakRead implements state.Files. A write through an open of a remote
// file asks the owner to break the others' read caching once; after that
// nothing but the writer's own lease caches reads (a break of read
// caching needs no acknowledgment and takes effect at once), so its next
// writes ask nothing — until the owner grants read caching to an open of
// the file again and says so (Admit's answer, or Deliver to every other
// node with the file open). A 4 KiB write stream on a remote file thus
// costs no call per write, and a call that is needed is made before the
// WRITE answers, ordered before the writer's next request.
func (r *Router) BreakRead(key state.FileKey, except *state.Open) {
	if t, err := r.at(context.Background(), key); err == nil && t.local {
		r.stats.Local.Add(1)
		r.table.BreakRead(key, except)
		return
	}
	op := &peerv1.BreakReadOp{}
	req := &peerv1.CallRequest{Key: keyPB(key), Op: &peerv1.CallRequest_BreakRead{BreakRead: op}}
	if except != nil {
		op.Except, op.ExceptStream = r.ref(except), except.Stream
		r.hs.mu.Lock()
		// The writer's own level II oplock breaks too (only its lease or
		// exclusive/batch oplock is spared): while it holds one, say after
		// its batch oplock was broken to level II, the call is needed.
		c := r.hs.mirrorCache[except.Ref].caching
		clear := r.hs.readClear[key][except.Ref] && (c.Lease || c.State != state.LeaseRead)
		r.hs.mu.Unlock()
		if clear {
			return
		}
	}
	resp, _ := r.call(key, func() { r.table.BreakRead(key, except) }, req)
	if resp != nil && except != nil {
		r.hs.mu.Lock()
		if r.hs.nheld[key] > 0 {
			if r.hs.readClear[key] == nil {
				r.hs.readClear[key] = map[uint64]bool{}
			}
			r.hs.readClear[key][except.Ref] = true
		}
		r.hs.mu.Unlock()
	}
}

// BreakHandle implements state.Files.
func (r *Router) BreakHandle(ctx context.Context, key state.FileKey, except *state.Open, onWait func()) error {
	op := &peerv1.BreakHandleOp{}
	if except != nil {
		op.Except, op.ExceptStream = r.ref(except), except.Stream
	}
	req := &peerv1.CallRequest{Key: keyPB(key), Op: &peerv1.CallRequest_BreakHandle{BreakHandle: op}}
	return r.wait(ctx, key, func() error { return r.table.BreakHandle(ctx, key, except, onWait) }, req, onWait)
}

// wait runs a Wait operation at key's owner.
func (r *Router) wait(ctx context.Context, key state.FileKey, local func() error, req *peerv1.CallRequest, onWait func()) error {
	if ctx == nil {
		ctx = context.Background()
	}
	for {
		changed := r.routes.Changed()
		t, err := r.at(ctx, key)
		if err != nil {
			return err
		}
		if t.local {
			r.stats.Local.Add(1)
			return local()
		}
		req.Route = t.route
		r.stats.call(opOf(req))
		ev, err := r.waitAt(ctx, t, req, onWait)
		if err == nil {
			if ev.LocksPresent {
				r.hs.setHint(key)
			}
			return codeErr(ev.Error, ev.Message)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !moved(err) {
			return err
		}
		r.waitRoutes(ctx, changed)
	}
}

func (r *Router) waitAt(ctx context.Context, t target, req *peerv1.CallRequest, onWait func()) (*peerv1.AdmitEvent, error) {
	return t.mx.wait(ctx, req, onWait)
}

// DirLeases implements state.Files: in a cluster a directory lease may
// be held through any node, so every change of an entry is told to the
// directory's owner (BreakDirLeases, which does not wait).
func (r *Router) DirLeases() bool { return true }

// ParentLeaseOf implements state.Files. The parent lease key is the
// client's own, fixed when the lease was granted: for an open of a remote
// file it comes from what this node recorded at the grant, with no call.
func (r *Router) ParentLeaseOf(o *state.Open) (state.LeaseID, bool) {
	r.hs.mu.Lock()
	hs, remote := r.hs.mirrorCache[o.Ref]
	remote = remote && r.hs.held[o.Ref] == o
	r.hs.mu.Unlock()
	if remote {
		c := hs.caching
		if !c.Lease || !c.HasParent {
			return state.LeaseID{}, false
		}
		return state.LeaseID{Client: c.ID.Client, Key: c.ParentKey}, true
	}
	var id state.LeaseID
	var ok bool
	resp, _ := r.call(o.Key, func() { id, ok = r.table.ParentLeaseOf(o) },
		&peerv1.CallRequest{Key: keyPB(o.Key), Op: &peerv1.CallRequest_ParentLeaseOf{ParentLeaseOf: &peerv1.ParentLeaseOfOp{Open: r.ref(o)}}})
	if resp != nil {
		res := resp.GetParentLeaseOf()
		return leaseIDOf(res.GetLease()), res.GetFound()
	}
	return id, ok
}

// BreakDirLeases implements state.Files; at a remote owner it does not
// wait (a directory lease break never holds up the change).
func (r *Router) BreakDirLeases(dir state.FileKey, except state.LeaseID, hasExcept bool) {
	if t, err := r.at(context.Background(), dir); err == nil && t.local {
		r.stats.Local.Add(1)
		if r.table.DirLeases() {
			r.table.BreakDirLeases(dir, except, hasExcept)
		}
		return
	}
	op := &peerv1.BreakDirLeasesOp{}
	if hasExcept {
		op.Except = leaseKeyPB(except)
	}
	req := &peerv1.CallRequest{Key: keyPB(dir), Op: &peerv1.CallRequest_BreakDirLeases{BreakDirLeases: op}}
	go r.call(dir, func() { r.table.BreakDirLeases(dir, except, hasExcept) }, req)
}

// Detach implements state.Files: the owner checks that no break is
// pending, and this node delivers o's breaks to b from then on. For a
// remote file b takes o's breaks before the owner is asked: a break the
// owner sends after it agreed may arrive before its answer does, and
// must reach b (smbtorture smb2.durable-open.oplock); if the owner
// refuses, o's breaker is put back.
func (r *Router) Detach(o *state.Open, b state.Breaker) (ok bool) {
	r.dg.convert(o) // deleg.go: the owner must know it
	if t, err := r.at(context.Background(), o.Key); err == nil && t.local {
		r.stats.Local.Add(1)
		return r.table.Detach(o, b)
	}
	r.hs.mu.Lock()
	old := o.Breaker
	o.Breaker = b
	r.hs.mu.Unlock()
	resp, _ := r.call(o.Key, func() { ok = r.table.Detach(o, b) },
		&peerv1.CallRequest{Key: keyPB(o.Key), Op: &peerv1.CallRequest_Detach{Detach: &peerv1.DetachOp{Open: r.ref(o)}}})
	if resp != nil {
		ok = resp.GetDetach().GetAccepted()
	}
	if !ok {
		r.hs.mu.Lock()
		o.Breaker = old // (b may be a func type: not comparable)
		r.hs.mu.Unlock()
	}
	return ok
}

// Reattach implements state.Files.
func (r *Router) Reattach(o *state.Open, b state.Breaker) {
	r.table.Reattach(o, b) // sets o.Breaker under the table's mutex when local
	r.hs.mu.Lock()
	o.Breaker = b
	r.hs.mu.Unlock()
}

// Sole implements state.Files.
func (r *Router) Sole(o *state.Open) (sole, deletePending bool) {
	r.dg.convert(o) // deleg.go: the owner must know it
	resp, _ := r.call(o.Key, func() {
		r.own.flushFor(o.Key, r.routes.Self(), func() bool { sole, deletePending = r.table.Sole(o); return !sole })
	},
		&peerv1.CallRequest{Key: keyPB(o.Key), Op: &peerv1.CallRequest_Sole{Sole: &peerv1.SoleOp{Open: r.ref(o)}}})
	if resp != nil {
		return resp.GetSole().GetSole(), resp.GetSole().GetDeletePending()
	}
	return sole, deletePending
}

// MarkDeletePending implements state.Files.
func (r *Router) MarkDeletePending(o *state.Open, on bool) {
	r.dg.convert(o) // deleg.go: the owner must know it
	resp, _ := r.call(o.Key, func() { r.own.markPending(o.Key, on, func() { r.table.MarkDeletePending(o, on) }) },
		&peerv1.CallRequest{Key: keyPB(o.Key), Op: &peerv1.CallRequest_MarkDeletePending{MarkDeletePending: &peerv1.MarkDeletePendingOp{Open: r.ref(o), Pending: on}}})
	if resp != nil {
		r.hs.noteCaching(o, func(h *heldState) { h.deletePending = on })
	}
}

// SetDeletePending implements state.Files.
func (r *Router) SetDeletePending(key state.FileKey, on bool) {
	r.call(key, func() { r.own.markPending(key, on, func() { r.table.SetDeletePending(key, on) }) },
		&peerv1.CallRequest{Key: keyPB(key), Op: &peerv1.CallRequest_SetDeletePending{SetDeletePending: &peerv1.SetDeletePendingOp{Pending: on}}})
}

// DeletePending implements state.Files.
func (r *Router) DeletePending(key state.FileKey) (on bool) {
	resp, _ := r.call(key, func() { on = r.table.DeletePending(key) },
		&peerv1.CallRequest{Key: keyPB(key), Op: &peerv1.CallRequest_DeletePending{DeletePending: &peerv1.DeletePendingOp{}}})
	if resp != nil {
		return resp.GetDeletePending().GetPending()
	}
	return on
}

// CheckRename implements state.Files.
func (r *Router) CheckRename(o *state.Open) (err error) {
	r.dg.convert(o) // deleg.go: the owner must know it
	resp, cerr := r.call(o.Key, func() {
		r.own.flushFor(o.Key, r.routes.Self(), func() bool { err = r.table.CheckRename(o); return err != nil })
	},
		&peerv1.CallRequest{Key: keyPB(o.Key), Op: &peerv1.CallRequest_CheckRename{CheckRename: &peerv1.CheckRenameOp{Open: r.ref(o)}}})
	if cerr != nil {
		return cerr
	}
	if resp != nil {
		return codeErr(resp.Error, resp.Message)
	}
	return err
}

// Renamed implements state.Files.
// At a remote owner, this node's copies of its opens' names follow too:
// a close names the file as renamed after its entry at the owner is gone.
func (r *Router) Renamed(key state.FileKey, name string) {
	resp, _ := r.call(key, func() { r.dg.without(key, func(bool) { r.table.Renamed(key, name) }) },
		&peerv1.CallRequest{Key: keyPB(key), Op: &peerv1.CallRequest_Renamed{Renamed: &peerv1.RenamedOp{Name: name}}})
	if resp == nil {
		return // local: the table renamed this node's opens itself
	}
	r.hs.mu.Lock()
	for _, o := range r.hs.held {
		if o.Key == key {
			o.Name = name
		}
	}
	r.hs.mu.Unlock()
}

// NameOf implements state.Files.
func (r *Router) NameOf(o *state.Open) (name string) {
	if r.isDelegated(o) { // deleg.go: a rename recalls the delegation first
		r.hs.mu.Lock()
		defer r.hs.mu.Unlock()
		return o.Name
	}
	resp, _ := r.call(o.Key, func() { name = r.table.NameOf(o) },
		&peerv1.CallRequest{Key: keyPB(o.Key), Op: &peerv1.CallRequest_NameOf{NameOf: &peerv1.NameOfOp{Open: r.ref(o)}}})
	if resp != nil {
		return resp.GetNameOf().GetName()
	}
	if name == "" { // gone at the owner (closing): this node's copy
		r.hs.mu.Lock()
		name = o.Name
		r.hs.mu.Unlock()
	}
	return name
}

// HasOpenBelow implements state.Files: every node owns some files, so
// every node is asked.
func (r *Router) HasOpenBelow(dir string) bool {
	if r.own.hasOpenBelow(dir) {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	req := &peerv1.CallRequest{Op: &peerv1.CallRequest_HasOpenBelow{HasOpenBelow: &peerv1.HasOpenBelowOp{Dir: dir}}}
	for a := range ask(ctx, r, nil, 0, func(ctx context.Context, cli peerv1.PeerServiceClient) (*peerv1.CallResponse, error) {
		r.stats.call(OpHasOpenBelow)
		return cli.Call(ctx, req)
	}) {
		if a.Err == nil && a.Resp.GetHasOpenBelow().GetFound() {
			return true
		}
	}
	return false
}

// CheckAccess implements state.Files.
func (r *Router) CheckAccess(key state.FileKey, access, share uint32) (err error) {
	resp, cerr := r.call(key, func() {
		r.own.flushFor(key, r.routes.Self(), func() bool { err = r.table.CheckAccess(key, access, share); return err != nil })
	},
		&peerv1.CallRequest{Key: keyPB(key), Op: &peerv1.CallRequest_CheckAccess{CheckAccess: &peerv1.CheckAccessOp{Access: access, ShareAccess: share}}})
	if cerr != nil {
		return cerr
	}
	if resp != nil {
		return codeErr(resp.Error, resp.Message)
	}
	return err
}

// StreamOpen implements state.Files.
func (r *Router) StreamOpen(key state.FileKey, stream string, except *state.Open) (on bool) {
	op := &peerv1.StreamOpenOp{Stream: stream}
	if except != nil {
		op.Except = r.ref(except)
	}
	req := &peerv1.CallRequest{Key: keyPB(key), Op: &peerv1.CallRequest_StreamOpen{StreamOpen: op}}
	resp, _ := r.call(key, func() {
		r.own.flushFor(key, r.routes.Self(), func() bool { on = r.table.StreamOpen(key, stream, except); return on })
	}, req)
	if resp != nil {
		return resp.GetStreamOpen().GetOpen()
	}
	return on
}

// StreamOf implements state.Files. For an open of a remote file the
// answer is this node's copy: only a rename through the open itself
// changes its stream (a stream is renamed through an open of it), and
// RenamedStream keeps the copies of this node's opens current.
func (r *Router) StreamOf(o *state.Open) (stream string) {
	r.hs.mu.Lock()
	held := r.hs.held[o.Ref] == o
	stream = o.Stream
	r.hs.mu.Unlock()
	if held {
		if t, err := r.at(context.Background(), o.Key); err == nil && !t.local {
			return stream
		}
	}
	resp, _ := r.call(o.Key, func() { stream = r.table.StreamOf(o) },
		&peerv1.CallRequest{Key: keyPB(o.Key), Op: &peerv1.CallRequest_StreamOf{StreamOf: &peerv1.StreamOfOp{Open: r.ref(o)}}})
	if resp != nil {
		return resp.GetStreamOf().GetStream()
	}
	return stream
}

// RenamedStream implements state.Files.
func (r *Router) RenamedStream(key state.FileKey, from, to string) {
	resp, _ := r.call(key, func() { r.dg.without(key, func(bool) { r.table.RenamedStream(key, from, to) }) },
		&peerv1.CallRequest{Key: keyPB(key), Op: &peerv1.CallRequest_RenamedStream{RenamedStream: &peerv1.RenamedStreamOp{From: from, To: to}}})
	if resp == nil {
		return // local: the table renamed this node's opens itself
	}
	r.hs.mu.Lock()
	for _, o := range r.hs.held {
		if o.Key == key && o.Stream == from {
			o.Stream = to
		}
	}
	r.hs.mu.Unlock()
}

// grantCaching is the Caching a grant amounts to.
func grantCaching(g state.Grant, req state.Request) state.Caching {
	l := g.Lease
	if l == nil {
		return state.OplockCaching(g.Oplock)
	}
	return state.Caching{State: l.State, Lease: true, ID: req.Lease.ID, Version: l.Version, Epoch: l.Epoch,
		ParentKey: l.ParentKey, HasParent: l.HasParent}
}
