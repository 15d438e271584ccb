package peer

import (
	"context"
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

// grantCaching is the Caching a grant amounts to.
func grantCaching(g state.Grant, req state.Request) state.Caching {
	l := g.Lease
	if l == nil {
		return state.OplockCaching(g.Oplock)
	}
	return state.Caching{State: l.State, Lease: true, ID: req.Lease.ID, Version: l.Version, Epoch: l.Epoch,
		ParentKey: l.ParentKey, HasParent: l.HasParent}
}
