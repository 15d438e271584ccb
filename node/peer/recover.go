package peer

import (
	"context"
	"fmt"

	"github.com/smbcluster/smbcluster/node/state"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
)

// Recovery. Each node knows its own clients' opens; a node that takes a
// shard over (its owner died) asks every live node for the opens it holds
// of the shard's files and rebuilds their state before it answers for the
// shard. To answer, a holder keeps a copy of what the owner granted its
// opens of remote files: their caching as last known (mirrorCache), their
// byte-range locks (Router.mirror) and whether they set a delete pending.

// heldState is a holder's copy of a remote file's state for one open.
type heldState struct {
	caching state.Caching
	// unacked is the caching that breaks delivered to the open's client
	// took and that no acknowledgment has yet given up: caching has
	// already dropped to the breaks' targets (what the durable record
	// publishes), but the client may still hold it — a write lease's
	// cached writes not yet flushed. A new owner rebuilds the open with
	// it (rebuilt), so that a conflicting open breaks again and waits for
	// the acknowledgment instead of going on before the flush.
	unacked       uint32
	dir           bool
	deletePending bool
}

// rebuilt is the caching a new owner restores the open with: what the
// owner granted, less what acknowledged breaks took.
func (h heldState) rebuilt() state.Caching {
	c := h.caching
	c.State |= h.unacked
	return c
}

// broken notes a break delivered to the client, from the caching it had
// to c; ack says whether the client must acknowledge it.
func (h *heldState) broken(c state.Caching, ack bool) {
	if ack {
		h.unacked |= h.caching.State &^ c.State
	}
	h.caching = c
}

// Held implements peerv1.PeerServiceServer: the opens this node holds of
// the files of the given shards, as far as it knows their state.
func (sv *Service) Held(ctx context.Context, req *peerv1.HeldRequest) (*peerv1.HeldResponse, error) {
	r := sv.r
	r.noteHeld(req.Shards) // closing.go
	r.dg.drop(req.Shards)  // deleg.go: the delegated opens are listed as ordinary ones
	self := &peerv1.OpenRef{Node: r.routes.Self(), Epoch: r.routes.Epoch()}
	resp := &peerv1.HeldResponse{}
	for _, h := range r.hs.heldIn(req.Shards) {
		ref := &peerv1.OpenRef{Node: self.Node, Epoch: self.Epoch, Id: h.o.Ref}
		locks := r.mirror.Locks(h.o)
		if len(locks) == 0 {
			// An open of a file this node owned until it lost the
			// shard: its locks are in the owner's table.
			locks = r.locks.Locks(h.o)
		}
		resp.Opens = append(resp.Opens, &peerv1.HeldOpen{
			Open: openDesc(h.o, ref), Caching: cachingPB(h.rebuilt()), Locks: locksPB(locks),
			DeletePending: h.deletePending, Directory: h.dir,
		})
	}
	return resp, nil
}

type heldOpen struct {
	o *state.Open
	heldState
}

// dropStale forgets the other nodes' opens of shard's files that this
// node kept from an earlier time it owned the shard. A node gives a shard
// up only when it holds nothing of it (ShardBusy); one that fenced kept
// its tables while other nodes owned the shard and closed those opens
// there, and taking the shard back it rebuilt over them: the byte-range
// lock of an open closed meanwhile stayed in force with no open, and
// every LOCK of the range was refused from then on (ROBUSTNESS.md issue
// 2). What the live nodes answer (Held) is the shard's state; the dead
// holders' durable opens (orphans) are restored from their records.
//
// The same for this node's own opens of the shard's files that are no
// longer held: closed after the node lost the shard, their close went to
// the owner of the time, and the entries made while this node owned the
// file stayed in its tables.
func (r *Router) dropStale(shard uint32) {
	inShard := func(k state.FileKey) bool { return ShardOf(k) == shard }
	kept := append(r.table.Opens(inShard), r.locks.Owners(inShard)...)
	r.hs.mu.Lock()
	r.own.mu.Lock()
	var proxies, own []*state.Open
	for _, o := range r.own.proxies {
		if _, orphan := r.own.orphans[o]; !orphan && inShard(o.Key) {
			proxies = append(proxies, o)
		}
	}
	seen := map[*state.Open]bool{}
	for _, o := range kept {
		_, proxy := r.own.proxyRef[o]
		_, orphan := r.own.orphans[o]
		if !proxy && !orphan && r.hs.held[o.Ref] != o && !seen[o] {
			seen[o] = true
			own = append(own, o)
		}
	}
	r.own.mu.Unlock()
	r.hs.mu.Unlock()
	for _, o := range proxies {
		r.own.closeProxy(o)
	}
	for _, o := range own {
		r.locks.Release(o)
		r.table.Drop(o)
	}
	if n := len(proxies) + len(own); n > 0 {
		r.log.Info("forgot opens kept from an earlier ownership of a shard", "shard", shard, "others", len(proxies), "own", len(own))
	}
}

// Recover rebuilds the state of shard's files from the opens the live
// nodes hold, before this node answers for the shard (ShardMap.Recover).
// It fails if a live node cannot say what it holds.
func (r *Router) Recover(ctx context.Context, shard uint32) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	r.dg.drop([]uint32{shard}) // deleg.go: its delegated opens become this node's own
	r.dropStale(shard)
	var restored int
	for a := range ask(ctx, r, nil, 0, func(ctx context.Context, cli peerv1.PeerServiceClient) (*peerv1.HeldResponse, error) {
		return cli.Held(ctx, &peerv1.HeldRequest{Shards: []uint32{shard}})
	}) {
		if a.Err != nil {
			return fmt.Errorf("asking %s for its opens: %w", a.Node, a.Err)
		}
		for _, h := range a.Resp.Opens {
			o, existed, err := r.own.proxy(h.Open)
			if err != nil || existed {
				continue
			}
			r.table.Restore(o, cachingOf(h.Caching), h.Directory, h.DeletePending)
			r.own.setIn(o)
			if ls := locksOf(h.Locks); len(ls) > 0 {
				r.locks.Lock(o, ls)
			}
			restored++
		}
	}
	restored += r.own.restoreOrphans(ctx, shard) // orphans.go: dead nodes' durable opens
	// This node's own opens of the shard's files: their state moves from
	// the copy into the tables.
	for _, h := range r.hs.heldIn([]uint32{shard}) {
		r.table.Restore(h.o, h.rebuilt(), h.dir, h.deletePending)
		if ls := r.mirror.Locks(h.o); len(ls) > 0 {
			r.locks.Lock(h.o, ls)
			r.mirror.Release(h.o)
		}
		restored++
	}
	if restored > 0 {
		r.log.Info("rebuilt a shard's state from the nodes holding its opens", "shard", shard, "opens", restored)
	}
	return nil
}
