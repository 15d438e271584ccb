package peer

import (
	"context"
	"errors"
	"time"

	"github.com/smbcluster/smbcluster/node/state"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// cachingSide is a node's oplocks and leases as the holder of opens
// (state.Files' caching half): acknowledgments and breaks go to the table
// of the file's owner, and the node keeps a copy of what each open was
// granted (holdings) for a new owner to rebuild from.
type cachingSide struct {
	r *Router
}

// Ack implements state.Files.
func (ca *cachingSide) Ack(o *state.Open, level uint8) (ok bool) {
	ca.r.dg.convert(o) // deleg.go: the owner must know it
	resp, _ := ca.r.call(o.Key, func() { ok = ca.r.table.Ack(o, level) },
		&peerv1.CallRequest{Key: keyPB(o.Key), Op: &peerv1.CallRequest_Ack{Ack: &peerv1.AckOp{Open: ca.r.ref(o), Level: uint32(level)}}})
	if resp != nil {
		ca.r.hs.noteCaching(o, func(h *heldState) {
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
func (ca *cachingSide) AckLease(id state.LeaseID, st uint32) (uint32, error) {
	key, ok := ca.r.hs.leaseFile(id)
	if !ok {
		return ca.ackAnywhere(id, st)
	}
	var got uint32
	var lerr error
	resp, err := ca.r.call(key, func() { got, lerr = ca.r.table.AckLease(id, st) },
		&peerv1.CallRequest{Key: keyPB(key), Op: &peerv1.CallRequest_AckLease{AckLease: &peerv1.AckLeaseOp{Lease: leaseKeyPB(id), State: st}}})
	switch {
	case err != nil:
		return 0, err
	case resp != nil:
		if resp.Error == peerv1.Error_ERROR_UNSPECIFIED {
			ca.r.hs.noteLease(id, ackedTo(resp.GetAckLease().GetState()))
		}
		return resp.GetAckLease().GetState(), codeErr(resp.Error, resp.Message)
	}
	return got, lerr
}

// ackAnywhere takes an acknowledgment of a lease none of this node's
// opens holds: the client acknowledged on its connection to this node a
// break sent on its connection to another (smbtorture
// smb2.lease.v2_complex2 acks on its second connection). A lease is one
// file's, so one owner's table at most knows it: this node's, or another
// node's, each asked in turn.
func (ca *cachingSide) ackAnywhere(id state.LeaseID, st uint32) (uint32, error) {
	got, err := ca.r.table.AckLease(id, st)
	if !errors.Is(err, state.ErrNoLease) {
		return got, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	req := &peerv1.CallRequest{Op: &peerv1.CallRequest_AckLease{AckLease: &peerv1.AckLeaseOp{Lease: leaseKeyPB(id), State: st}}}
	for a := range ask(ctx, ca.r, nil, 0, func(ctx context.Context, cli peerv1.PeerServiceClient) (*peerv1.CallResponse, error) {
		ca.r.stats.call(OpAckLease)
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
func (ca *cachingSide) Oplock(o *state.Open) (level uint8) {
	if ca.r.isDelegated(o) { // deleg.go
		return state.OplockNone
	}
	resp, _ := ca.r.call(o.Key, func() { level = ca.r.table.Oplock(o) },
		&peerv1.CallRequest{Key: keyPB(o.Key), Op: &peerv1.CallRequest_Oplock{Oplock: &peerv1.OplockOp{Open: ca.r.ref(o)}}})
	if resp != nil {
		return uint8(resp.GetOplock().GetLevel())
	}
	return level
}

// CachingOf implements state.Files.
func (ca *cachingSide) CachingOf(o *state.Open) (c state.Caching) {
	if ca.r.isDelegated(o) { // deleg.go
		return c
	}
	resp, _ := ca.r.call(o.Key, func() { c = ca.r.table.CachingOf(o) },
		&peerv1.CallRequest{Key: keyPB(o.Key), Op: &peerv1.CallRequest_CachingOf{CachingOf: &peerv1.CachingOfOp{Open: ca.r.ref(o)}}})
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
func (ca *cachingSide) BreakRead(key state.FileKey, except *state.Open) {
	if t, err := ca.r.at(context.Background(), key); err == nil && t.local {
		ca.r.stats.Local.Add(1)
		ca.r.table.BreakRead(key, except)
		return
	}
	op := &peerv1.BreakReadOp{}
	req := &peerv1.CallRequest{Key: keyPB(key), Op: &peerv1.CallRequest_BreakRead{BreakRead: op}}
	if except != nil {
		op.Except, op.ExceptStream = ca.r.ref(except), except.Stream
		ca.r.hs.mu.Lock()
		// The writer's own level II oplock breaks too (only its lease or
		// exclusive/batch oplock is spared): while it holds one, say after
		// its batch oplock was broken to level II, the call is needed.
		c := ca.r.hs.mirrorCache[except.Ref].caching
		clear := ca.r.hs.readClear[key][except.Ref] && (c.Lease || c.State != state.LeaseRead)
		ca.r.hs.mu.Unlock()
		if clear {
			return
		}
	}
	resp, _ := ca.r.call(key, func() { ca.r.table.BreakRead(key, except) }, req)
	if resp != nil && except != nil {
		ca.r.hs.mu.Lock()
		if ca.r.hs.nheld[key] > 0 {
			if ca.r.hs.readClear[key] == nil {
				ca.r.hs.readClear[key] = map[uint64]bool{}
			}
			ca.r.hs.readClear[key][except.Ref] = true
		}
		ca.r.hs.mu.Unlock()
	}
}

// BreakHandle implements state.Files.
func (ca *cachingSide) BreakHandle(ctx context.Context, key state.FileKey, except *state.Open, onWait func()) error {
	op := &peerv1.BreakHandleOp{}
	if except != nil {
		op.Except, op.ExceptStream = ca.r.ref(except), except.Stream
	}
	req := &peerv1.CallRequest{Key: keyPB(key), Op: &peerv1.CallRequest_BreakHandle{BreakHandle: op}}
	return ca.r.wait(ctx, key, func() error { return ca.r.table.BreakHandle(ctx, key, except, onWait) }, req, onWait)
}

// DirLeases implements state.Files: in a cluster a directory lease may
// be held through any node, so every change of an entry is told to the
// directory's owner (BreakDirLeases, which does not wait).
func (ca *cachingSide) DirLeases() bool { return true }

// ParentLeaseOf implements state.Files. The parent lease key is the
// client's own, fixed when the lease was granted: for an open of a remote
// file it comes from what this node recorded at the grant, with no call.
func (ca *cachingSide) ParentLeaseOf(o *state.Open) (state.LeaseID, bool) {
	ca.r.hs.mu.Lock()
	hs, remote := ca.r.hs.mirrorCache[o.Ref]
	remote = remote && ca.r.hs.held[o.Ref] == o
	ca.r.hs.mu.Unlock()
	if remote {
		c := hs.caching
		if !c.Lease || !c.HasParent {
			return state.LeaseID{}, false
		}
		return state.LeaseID{Client: c.ID.Client, Key: c.ParentKey}, true
	}
	var id state.LeaseID
	var ok bool
	resp, _ := ca.r.call(o.Key, func() { id, ok = ca.r.table.ParentLeaseOf(o) },
		&peerv1.CallRequest{Key: keyPB(o.Key), Op: &peerv1.CallRequest_ParentLeaseOf{ParentLeaseOf: &peerv1.ParentLeaseOfOp{Open: ca.r.ref(o)}}})
	if resp != nil {
		res := resp.GetParentLeaseOf()
		return leaseIDOf(res.GetLease()), res.GetFound()
	}
	return id, ok
}

// BreakDirLeases implements state.Files; at a remote owner it does not
// wait (a directory lease break never holds up the change).
func (ca *cachingSide) BreakDirLeases(dir state.FileKey, except state.LeaseID, hasExcept bool) {
	if t, err := ca.r.at(context.Background(), dir); err == nil && t.local {
		ca.r.stats.Local.Add(1)
		if ca.r.table.DirLeases() {
			ca.r.table.BreakDirLeases(dir, except, hasExcept)
		}
		return
	}
	op := &peerv1.BreakDirLeasesOp{}
	if hasExcept {
		op.Except = leaseKeyPB(except)
	}
	req := &peerv1.CallRequest{Key: keyPB(dir), Op: &peerv1.CallRequest_BreakDirLeases{BreakDirLeases: op}}
	go ca.r.call(dir, func() { ca.r.table.BreakDirLeases(dir, except, hasExcept) }, req)
}

// Detach implements state.Files: the owner checks that no break is
// pending, and this node delivers o's breaks to b from then on. For a
// remote file b takes o's breaks before the owner is asked: a break the
// owner sends after it agreed may arrive before its answer does, and
// must reach b (smbtorture smb2.durable-open.oplock); if the owner
// refuses, o's breaker is put back.
//
// An owner that does not answer within detachWait (this node cut off
// from it, say) costs the client neither its durable open nor time:
// refusing would close a handle the server promised to keep for a
// connection's loss — the client's reconnect then refused
// STATUS_OBJECT_NAME_NOT_FOUND through every node, the owner back or not
// (robustness suite, ROBUSTNESS.md issue 10) — and a reconnect through
// another node waits for the detach (and is refused while it lasts). The
// open stays detached and the owner is asked again until one answers
// (detachLater); should it then refuse — a break was in progress — the
// open goes as a break of a detached open makes it go (b scavenges it).
// A break the owner sends meanwhile reaches b as it would have anyway.
func (ca *cachingSide) Detach(o *state.Open, b state.Breaker) (ok bool) {
	ca.r.dg.convert(o) // deleg.go: the owner must know it
	if t, err := ca.r.at(context.Background(), o.Key); err == nil && t.local {
		ca.r.stats.Local.Add(1)
		return ca.r.table.Detach(o, b)
	}
	ca.r.hs.mu.Lock()
	old := o.Breaker
	o.Breaker = b
	ca.r.hs.mu.Unlock()
	req := &peerv1.CallRequest{Key: keyPB(o.Key), Op: &peerv1.CallRequest_Detach{Detach: &peerv1.DetachOp{Open: ca.r.ref(o)}}}
	resp, err := ca.r.callWithin(ca.r.detachWait, o.Key, func() { ok = ca.r.table.Detach(o, b) }, req)
	if resp != nil {
		ok = resp.GetDetach().GetAccepted()
	}
	if err != nil && unanswered(err) && ca.r.hs.markDetaching(o) {
		ca.r.log.Warn("kept a durable open detached without its owner's answer; asking again", "file", keyString(o.Key), "err", err)
		go ca.detachLater(o, b, req)
		return true
	}
	if !ok {
		ca.r.hs.mu.Lock()
		o.Breaker = old // (b may be a func type: not comparable)
		ca.r.hs.mu.Unlock()
	}
	return ok
}

// defaultDetachWait bounds the first ask of a detach (Detach): a
// reconnect through another node waits for it (server peerDetachWait,
// 1.5 s).
const defaultDetachWait = time.Second

// unanswered reports whether err says a call reached no owner that
// answered it (none reachable, or none in time), rather than an owner's
// refusal.
func unanswered(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.FailedPrecondition:
		return true
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// detachLater asks again, until an owner of its file answers, whether o,
// kept detached without an answer (Detach), may stay so; it gives up
// when o is no longer detached here (reconnected, handed over, closed)
// or the router closes. A refusal scavenges o through b.
func (ca *cachingSide) detachLater(o *state.Open, b state.Breaker, req *peerv1.CallRequest) {
	wait := routeWait
	for attempt := 1; ; attempt++ {
		select {
		case <-ca.r.closed:
			return
		case <-time.After(wait):
		}
		if !ca.r.hs.isDetaching(o) {
			return
		}
		var ok bool
		// Owner by now, this node checks what the owner would; it does
		// not hand o's breaks to b again, which a reconnect may have
		// given to its client meanwhile.
		resp, err := ca.r.call(o.Key, func() { ok = !ca.r.table.CachingOf(o).Breaking }, req)
		if resp != nil {
			ok = resp.GetDetach().GetAccepted()
		}
		if err != nil && unanswered(err) {
			wait = min(2*wait, 5*time.Second)
			continue
		}
		if !ca.r.hs.endDetaching(o) {
			return // reconnected meanwhile: its breaks are its client's again
		}
		ca.r.log.Info("a detach that had not reached the file's owner reached it", "file", keyString(o.Key), "attempts", attempt+1, "kept", ok && err == nil)
		if !ok || err != nil {
			_ = b.BreakOplock(state.OplockNone) // a detached open's breaker scavenges it
		}
		return
	}
}

// Reattach implements state.Files.
func (ca *cachingSide) Reattach(o *state.Open, b state.Breaker) {
	ca.r.hs.endDetaching(o)   // its owner's late answer is not for this breaker
	ca.r.table.Reattach(o, b) // sets o.Breaker under the table's mutex when local
	ca.r.hs.mu.Lock()
	o.Breaker = b
	ca.r.hs.mu.Unlock()
}
