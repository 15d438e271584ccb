package peer

import (
	"context"
	"errors"
	"time"

	"github.com/smbcluster/smbcluster/node/state"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
)

// Closes that do not wait. The close of an open of a remote file that
// caches nothing, has no byte-range locks and no delete pending can learn
// nothing from the owner's answer (it deletes nothing): the holder
// forgets the open at once and its Drop, wanting no answer, rides on the
// next message of the Exchange stream to the owner — usually the next
// open's Admit — or goes on its own after postDelay (mux.post). The
// owner serves these closes in order, before the message's request.
//
// Until it is served, the owner still counts the open. What must hold
// is that once the CLOSE is answered no other client meets the open; so
// before the owner refuses anything that an open of another node's
// could be the cause of — an open (sharing violation), a grant of less
// caching than asked (the open leaves the table and is admitted again),
// a rename, an access check, "sole open", "stream open", "open below" —
// it asks the nodes that hold opens of the file to flush (Deliver flush:
// each sends a FlushOp after its closes on their way, if it has any,
// and answers once it is answered), and waits for the closes it is
// serving itself (leaving: a proxy out of the holders, not yet out of the
// table), then checks again — when a holder flushed closes, or when a
// proxy of the file's shard left the table since the check (a close on
// its way then may have been served, and confirmed to its holder, before
// the flush reached it: the holder had nothing left to flush). The
// asking node's own closes precede its request on the same stream, and a
// new stream first carries again the closes not known served
// (mux.carry; Drop is idempotent), so a broken stream loses none.
// A new owner rebuilds from the opens holders still hold (Held), which
// no longer include them.
//
// A close deletes when it is the last of a file (or stream) with a delete
// pending; the holder must then know the answer. So before a delete is
// made pending on a file, the owner tells every node with opens of it
// (Deliver delete_pending, with flush): each flushes, and its closes of
// the file wait for their answer from then on (delHint); an Admit served
// meanwhile says so in its answer (AdmitEvent.delete_pending).

// dropLater forgets o and sends its Drop to its remote owner without
// waiting, when the answer cannot matter; it reports whether it did.
//
// A node taking the shard over asks for the held opens (Held) after its
// assignment, which this node's routes may not show yet: o is forgotten
// before its Drop goes, and after a Held for its shard closes wait (and
// are routed again until they reach the owner) until one of them did.
func (r *Router) dropLater(o *state.Open) bool {
	t, err := r.at(context.Background(), o.Key)
	if err != nil || t.local {
		return false
	}
	r.dropMu.RLock()
	defer r.dropMu.RUnlock()
	r.hs.mu.Lock()
	hs, remote := r.hs.mirrorCache[o.Ref]
	ok := remote && r.hs.held[o.Ref] == o && r.hs.done[o.Ref] && hs == (heldState{}) &&
		!r.hs.hint[o.Key] && !r.hs.delHint[o.Key] && !r.hs.rebuilt[ShardOf(o.Key)]
	r.hs.mu.Unlock()
	if !ok {
		return false
	}
	req := &peerv1.CallRequest{Route: t.route, Key: keyPB(o.Key), Op: &peerv1.CallRequest_Drop{Drop: &peerv1.DropOp{Open: r.ref(o)}}}
	r.hs.unhold(o)
	if !t.mx.post(req) {
		return false
	}
	r.stats.call(OpDrop)
	r.stats.Posted.Add(1)
	return true
}

// closeLater sends again, until an owner of its file answers, a close
// whose call failed (req: its OP_DROP or OP_REMOVE; local: the same on
// this node's table, should this node own the file by then). The owner
// may still have the open — a node taking the shard over rebuilt it from
// this node's Held while the close waited, and a rebuild that waits for a
// paused node takes longer than callTimeout — and nothing else would
// ever take it out, nor the byte-range locks it holds: each later LOCK of
// the range would be refused. A close is idempotent at the owner (an
// open it does not know is gone already), and an open's ref is never
// reused, so sending it late removes nothing else.
func (r *Router) closeLater(o *state.Open, req *peerv1.CallRequest, local func()) {
	wait := routeWait
	for attempt := 1; ; attempt++ {
		select {
		case <-r.closed:
			return
		case <-time.After(wait):
		}
		resp, err := r.call(o.Key, local, req)
		if err == nil {
			if resp.GetDrop().GetDeleteStream() || resp.GetDrop().GetDeleteFile() || resp.GetRemove().GetDeletePending() {
				r.log.Warn("a close sent again found its file to delete; it stays", "file", keyString(o.Key))
			}
			r.log.Info("a close that had not reached the file's owner reached it", "file", keyString(o.Key), "attempts", attempt+1)
			return
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// noteHeld records that a node asked for the held opens of shards: it
// is taking them over (dropLater).
func (r *Router) noteHeld(shards []uint32) {
	r.dropMu.Lock()
	r.hs.mu.Lock()
	for _, s := range shards {
		if s < NumShards {
			r.hs.rebuilt[s] = true
		}
	}
	r.hs.mu.Unlock()
	r.dropMu.Unlock()
}

// post serves a close that wants no answer (Envelope.drops).
func (sv *Service) post(ctx context.Context, req *peerv1.CallRequest) {
	if req.GetDrop() == nil {
		return
	}
	resp, err := sv.Call(ctx, req)
	if d := resp.GetDrop(); err == nil && (d.GetDeleteStream() || d.GetDeleteFile()) {
		// Cannot happen while delete pending notices hold (closing.go).
		sv.r.log.Error("a close that did not wait deleted something", "file", keyString(keyOf(req.Key)))
	}
}

// flushFor runs check, and — when its outcome was negative and other
// nodes than from hold opens of key — once more after they flushed the
// closes on their way.
func (ow *owner) flushFor(key state.FileKey, from string, check func() (negative bool)) {
	left := ow.leftOf(key)
	if !check() {
		return
	}
	flushed := ow.flushHolders(key, from)
	flushed = ow.awaitLeaving(context.Background(), key) || flushed
	flushed = flushed || ow.leftOf(key) != left
	// A delegation stands for opens that may not be there (deleg.go).
	ow.dg.without(key, func(recalled bool) {
		if flushed || recalled {
			check()
		}
	})
}

// closings counts the proxies of one file leaving the owner's tables: no
// longer among the holders (byKey), not yet out of the table.
type closings struct {
	n       int
	waiting int           // checks waiting for them (awaitLeaving)
	done    chan struct{} // closed when n is back to 0
}

// leaving takes proxy o out of the holders (unproxy), counting it as
// leaving until done is called, once it is out of the tables too: a
// check that meets it in between waits for it (awaitLeaving) instead of
// asking its holder, which no longer has it, to flush.
func (ow *owner) leaving(o *state.Open) (ok bool, done func()) {
	ow.mu.Lock()
	defer ow.mu.Unlock()
	if !ow.unproxyLocked(o) {
		return false, nil
	}
	c := ow.closingAt[o.Key]
	if c == nil {
		c = &closings{done: make(chan struct{})}
		ow.closingAt[o.Key] = c
	}
	c.n++
	return true, func() {
		ow.mu.Lock()
		defer ow.mu.Unlock()
		ow.left[ShardOf(o.Key)]++
		if c.n--; c.n == 0 {
			close(c.done)
			if ow.closingAt[o.Key] == c {
				delete(ow.closingAt, o.Key)
			}
		}
	}
}

// leftOf counts the proxies of key's shard that left the table so far. A
// check that a holder's close may have changed compares it before and
// after the flush: a close on its way when the check ran may have been
// served since, and confirmed to its holder, which then had nothing to
// flush.
func (ow *owner) leftOf(key state.FileKey) uint64 {
	ow.mu.Lock()
	defer ow.mu.Unlock()
	return ow.left[ShardOf(key)]
}

// leftAll is leftOf for every shard.
func (ow *owner) leftAll() uint64 {
	ow.mu.Lock()
	defer ow.mu.Unlock()
	var n uint64
	for _, l := range ow.left {
		n += l
	}
	return n
}

// awaitLeaving waits until no proxy of key is leaving the tables (or ctx
// ends, or callTimeout passed); it reports whether one was.
func (ow *owner) awaitLeaving(ctx context.Context, key state.FileKey) bool {
	ow.mu.Lock()
	c := ow.closingAt[key]
	if c != nil {
		c.waiting++
	}
	ow.mu.Unlock()
	if c == nil {
		return false
	}
	t := time.NewTimer(callTimeout)
	defer t.Stop()
	select {
	case <-c.done:
	case <-ctx.Done():
	case <-t.C:
	}
	return true
}

// awaitAnyLeaving is awaitLeaving for every file; it reports whether a
// proxy was leaving.
func (ow *owner) awaitAnyLeaving() bool {
	ow.mu.Lock()
	keys := make([]state.FileKey, 0, len(ow.closingAt))
	for k := range ow.closingAt {
		keys = append(keys, k)
	}
	ow.mu.Unlock()
	waited := false
	for _, k := range keys {
		waited = ow.awaitLeaving(context.Background(), k) || waited
	}
	return waited
}

// flushHolders asks every node but from that holds opens of key here to
// flush; it reports whether one had closes on their way.
func (ow *owner) flushHolders(key state.FileKey, from string) bool {
	return ow.tellHolders(key, from, &peerv1.DeliverRequest{Flush: ow.routes.Self()}, "a flush")
}

// flushAll asks every node that holds opens of files owned here to flush.
func (ow *owner) flushAll() bool {
	ow.mu.Lock()
	nodes := map[string]bool{}
	for k := range ow.proxies {
		nodes[k.node] = true
	}
	ow.mu.Unlock()
	return ow.tellNodes(nodes, &peerv1.DeliverRequest{Flush: ow.routes.Self()}, "a flush")
}

// admitTable is the owner's table.Admit of o, for a request from node
// from (whose own closes came before it). An open refused for a sharing
// violation, or granted less caching than it asked, while other nodes
// hold opens of the file is tried again once they flushed closes on
// their way — if they had any — and, when granted, after leaving the
// table again (the client has not seen that grant).
func (ow *owner) admitTable(ctx context.Context, o *state.Open, req state.Request, from string, onWait func()) (state.Grant, error) {
	if onWait != nil {
		once := onWait
		onWait = func() {
			if once != nil {
				once()
				once = nil
			}
		}
	}
	left := ow.leftOf(o.Key)
	g, err := ow.table.Admit(ctx, o, req, onWait)
	violation := errors.Is(err, state.ErrSharingViolation)
	less := err == nil && lessCaching(req, g)
	if !violation && !less {
		return g, err
	}
	flushed := ow.flushHolders(o.Key, from)
	flushed = ow.awaitLeaving(ctx, o.Key) || flushed
	flushed = flushed || ow.leftOf(o.Key) != left
	// A delegation stands for opens that may not be there (deleg.go).
	ow.dg.without(o.Key, func(recalled bool) {
		if !flushed && !recalled {
			return
		}
		if less {
			ow.table.Remove(o)
		}
		g, err = ow.table.Admit(ctx, o, req, onWait)
	})
	return g, err
}

// lessCaching reports whether g grants less caching than req asked for
// (another open of the file, say, kept it from write caching). A
// directory's lease never caches writes: that is no less.
func lessCaching(req state.Request, g state.Grant) bool {
	switch {
	case req.NoCaching || req.Directory:
		return false
	case req.Lease != nil:
		return g.Lease != nil && g.Lease.State&req.Lease.State != req.Lease.State
	}
	return g.Oplock < req.Oplock
}

// markPending makes a delete pending on key by set (on), first telling
// the nodes with opens of it, so that none of their closes of it goes
// without waiting any more (see above).
func (ow *owner) markPending(key state.FileKey, on bool, set func()) {
	if !on {
		set()
		return
	}
	ow.mu.Lock()
	p := ow.pendings[key]
	p.active++
	ow.pendings[key] = p
	ow.mu.Unlock()
	// The delegations first: their opens must be known here, and their
	// holders' closes of them wait for the answer (deleg.go); none is
	// granted while the delete is pending.
	ow.dg.without(key, func(bool) {
		ow.tellHolders(key, "", &peerv1.DeliverRequest{Flush: ow.routes.Self(), DeletePending: keyPB(key)}, "a delete pending")
		set()
	})
	ow.mu.Lock()
	p = ow.pendings[key]
	p.active--
	p.sticky = p.sticky || len(ow.byKey[key]) > 0
	if p.active == 0 && !p.sticky {
		delete(ow.pendings, key)
	} else {
		ow.pendings[key] = p
	}
	ow.mu.Unlock()
}

// pending tracks, at an owner, a file on which a delete is being or was
// made pending while other nodes hold opens of it: an Admit's answer
// tells the holder (active: notices on their way; sticky: until no
// other node holds an open of the file).
type pending struct {
	active int
	sticky bool
}

// deletePendingFor reports whether an Admit of key must tell its holder
// that a delete is pending.
func (ow *owner) deletePendingFor(key state.FileKey) bool {
	ow.mu.Lock()
	defer ow.mu.Unlock()
	p, ok := ow.pendings[key]
	return ok && (p.active > 0 || p.sticky)
}

// flushTo is the holder's side of a flush asked by owner node; a
// delete pending notice for key (when not nil) first makes this node's
// closes of it wait.
func (r *Router) flushTo(ctx context.Context, node string, key *peerv1.FileKey) bool {
	if key != nil {
		r.setDelHint(keyOf(key))
	}
	addr := r.routes.Peers()[node]
	mx := r.muxes.existing(addr)
	if addr == "" || mx == nil {
		return false
	}
	return mx.flush(ctx)
}

// setDelHint records that a delete is pending on key, which this node
// holds opens of.
func (r *Router) setDelHint(key state.FileKey) {
	r.dropMu.Lock()
	r.hs.mu.Lock()
	if r.hs.nheld[key] > 0 {
		r.hs.delHint[key] = true
	}
	r.hs.mu.Unlock()
	r.dropMu.Unlock()
}

// hasOpenBelow is HasOpenBelow on the files owned here, checked again
// after a flush when it finds one.
func (ow *owner) hasOpenBelow(dir string) bool {
	left := ow.leftAll()
	on := ow.table.HasOpenBelow(dir)
	if !on {
		return false
	}
	flushed := ow.flushAll()
	flushed = ow.awaitAnyLeaving() || flushed
	flushed = flushed || ow.leftAll() != left
	ow.dg.withoutAny(func(recalled bool) { // deleg.go
		if flushed || recalled {
			on = ow.table.HasOpenBelow(dir)
		}
	})
	return on
}
