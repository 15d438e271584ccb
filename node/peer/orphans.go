package peer

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/smbcluster/smbcluster/node/state"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Durable opens of a node that died. Each node publishes a record of
// each of its durable opens (an OpenRecord in etcd without the node's
// lease: cluster.Agent, at once on a grant and then when its locks or
// caching change). When the node dies, the owner of each such open's file
// keeps the open's entry — share modes, caching, byte-range locks — in
// force (DropNode spares it; a new owner rebuilds it from the record,
// Recover) until its client reconnects through another node
// (TakeDurable, then HandoverOp re-keys the entry) or its durable
// timeout passes. A break of such an orphan's caching closes it, as it
// closes a detached open on its own node.

// Orphan is a durable open of a node that died, as its record has it.
type Orphan struct {
	Node    string
	Epoch   uint64
	Ref     uint64 // the dead node's id of the open at the owner
	FileID  uint64 // FileId.Persistent
	Path    string // the name the open was made with, as on the wire
	Stream  string
	Key     state.FileKey
	Access  uint32
	Share   uint32 // share access
	Caching state.Caching
	Locks   []state.Lock
	Rec     state.DurableRecord // Share names the share
}

// DurableRecords reads and forgets the durable open records in etcd.
type DurableRecords interface {
	// Orphans lists the durable open records that node published (every
	// node's when node is "").
	Orphans(ctx context.Context, node string) ([]Orphan, error)
	// Forget deletes a record, once its open was taken over or closed.
	Forget(node string, fileID uint64)
}

// SetDurableRecords sets where the durable open records are read; call
// it before the router serves.
func (du *durableSide) SetDurableRecords(d DurableRecords) {
	du.r.own.mu.Lock()
	du.r.own.records = d
	du.r.own.mu.Unlock()
}

// orphan is an owner's note of a proxy kept for a dead holder.
type orphan struct {
	node   string
	fileID uint64
	stop   func() bool
}

func (ow *owner) durableRecords() DurableRecords {
	ow.mu.Lock()
	defer ow.mu.Unlock()
	return ow.records
}

// orphansOf lists the records of node's durable opens at an epoch other
// than keep, by the proxy key they name.
func (ow *owner) orphansOf(node string, keep uint64) map[refKey]Orphan {
	d := ow.durableRecords()
	if d == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	recs, err := d.Orphans(ctx, node)
	if err != nil {
		ow.log.Warn("reading the durable opens of a node that left", "peer", node, "err", err)
		return nil
	}
	out := map[refKey]Orphan{}
	for _, o := range recs {
		if o.Epoch != keep {
			out[refKey{o.Node, o.Epoch, o.Ref}] = o
		}
	}
	return out
}

// keepOrphan keeps proxy o of a dead node's durable open until its
// client reconnects, its timeout passes, or its caching must break.
func (ow *owner) keepOrphan(o *state.Open, rec Orphan) {
	closeIt := func() {
		ow.mu.Lock()
		on, ok := ow.orphans[o]
		delete(ow.orphans, o)
		ow.mu.Unlock()
		if !ok {
			return // taken over meanwhile
		}
		on.stop()
		ow.closeProxy(o)
		if d := ow.durableRecords(); d != nil {
			d.Forget(rec.Node, rec.FileID)
		}
		ow.log.Info("closed a durable open of a node that left", "peer", rec.Node, "file", rec.Path)
	}
	t := time.AfterFunc(rec.Rec.Timeout, closeIt)
	ow.mu.Lock()
	ow.orphans[o] = orphan{node: rec.Node, fileID: rec.FileID, stop: t.Stop}
	ow.mu.Unlock()
	ow.table.Reattach(o, orphanBreaker(closeIt))
}

// unorphan forgets that proxy o is an orphan (it was handed over).
func (ow *owner) unorphan(o *state.Open) (orphan, bool) {
	ow.mu.Lock()
	on, ok := ow.orphans[o]
	delete(ow.orphans, o)
	ow.mu.Unlock()
	if ok {
		on.stop()
	}
	return on, ok
}

// orphanBreaker closes an orphan whose caching must break with an
// acknowledgment nobody can send. A break that needs none (read caching
// revoked by another client's write, [MS-SMB2] 3.3.1.4) takes effect at
// once and leaves the orphan for its client.
type orphanBreaker func()

func (b orphanBreaker) BreakOplock(uint8) error { go b(); return nil }
func (b orphanBreaker) BreakLease(l state.LeaseBreak) error {
	if l.AckRequired {
		go b()
	}
	return nil
}

// restoreOrphans rebuilds, at a new owner of shard, the durable opens of
// dead nodes (not among the live peers) whose files are in shard.
func (ow *owner) restoreOrphans(ctx context.Context, shard uint32) int {
	d := ow.durableRecords()
	if d == nil {
		return 0
	}
	recs, err := d.Orphans(ctx, "")
	if err != nil {
		ow.log.Warn("reading durable open records", "err", err)
		return 0
	}
	live := ow.routes.Peers()
	n := 0
	for _, rec := range recs {
		if !ow.orphaned(rec, live, nil) || ShardOf(rec.Key) != shard {
			continue
		}
		o, existed, err := ow.proxy(orphanDesc(rec))
		if err != nil || existed {
			continue
		}
		ow.table.Restore(o, rec.Caching, false, false)
		ow.setIn(o)
		if len(rec.Locks) > 0 {
			ow.locks.Lock(o, rec.Locks)
		}
		ow.keepOrphan(o, rec)
		n++
	}
	return n
}

// findOrphan finds the record of a durable open q names whose holder is
// not live (or did not answer).
func (du *durableSide) findOrphan(ctx context.Context, q state.DurableQuery, silent map[string]bool) (Orphan, bool) {
	d := du.r.own.durableRecords()
	if d == nil {
		return Orphan{}, false
	}
	recs, err := d.Orphans(ctx, "")
	if err != nil {
		return Orphan{}, false
	}
	live := du.r.routes.Peers()
	for _, rec := range recs {
		if !du.r.own.orphaned(rec, live, silent) {
			continue
		}
		if rec.FileID == q.FileID && (!q.V2 || rec.Rec.CreateGUID == q.CreateGUID) {
			return rec, true
		}
	}
	return Orphan{}, false
}

// orphaned reports whether rec is a durable open whose holder is gone:
// its node is not live, or lives under another epoch, or did not answer.
func (ow *owner) orphaned(rec Orphan, live map[string]string, silent map[string]bool) bool {
	if rec.Node == ow.routes.Self() {
		return rec.Epoch != ow.routes.Epoch()
	}
	if _, ok := live[rec.Node]; !ok || silent[rec.Node] {
		return true
	}
	if pe, ok := ow.routes.(interface{ PeerEpoch(string) (uint64, bool) }); ok {
		if e, ok := pe.PeerEpoch(rec.Node); ok && e != rec.Epoch {
			return true
		}
	}
	return false
}

// checkOrphan checks a reconnect of an orphan as its holder would have
// (server claimDetached, share Reattach).
func checkOrphan(rec Orphan, q state.DurableQuery) error {
	c := rec.Caching
	switch {
	case rec.Rec.Share != q.Share:
		return state.ErrNoDurable
	case !strings.EqualFold(rec.Rec.User, q.User) || !strings.EqualFold(rec.Rec.Domain, q.Domain):
		return refusedError(statusAccessDenied)
	case c.Lease && (!q.HasLease || q.LeaseKey != c.ID.Key || c.ID.Client != q.ClientGUID):
		return refusedError(statusObjectNameNotFound)
	case !c.Lease && q.HasLease:
		return refusedError(statusObjectNameNotFound)
	case c.Lease && !strings.EqualFold(q.Name, rec.Path):
		return refusedError(statusInvalidParameter)
	}
	return nil
}

// NTSTATUS values a refused reconnect answers ([MS-ERREF] 2.3.1).
const (
	statusAccessDenied       = 0xC0000022
	statusObjectNameNotFound = 0xC0000034
	statusInvalidParameter   = 0xC000000D
)

// takeOrphan takes over, at its file's owner, the orphan rec for this
// node's open to.
func (du *durableSide) takeOrphan(ctx context.Context, rec Orphan, q state.DurableQuery, to state.HolderRef) (*state.Open, state.Handover, error) {
	if err := checkOrphan(rec, q); err != nil {
		return nil, state.Handover{}, err
	}
	op := &peerv1.HandoverOp{From: &peerv1.OpenRef{Node: rec.Node, Epoch: rec.Epoch, Id: rec.Ref}, To: refPB(to)}
	req := &peerv1.CallRequest{Key: keyPB(rec.Key), Op: &peerv1.CallRequest_Handover{Handover: op}}
	var local *peerv1.CallResponse
	var lerr error
	resp, err := du.r.call(rec.Key, func() {
		o := du.r.own.lookup(op.From)
		if o == nil {
			lerr = state.ErrNoDurable
			return
		}
		local, lerr = du.r.own.handoverProxy(o, op.To)
	}, req)
	if status.Code(err) == codes.NotFound || errors.Is(lerr, state.ErrNoDurable) {
		// The owner no longer keeps it (its timeout passed, or a break
		// closed it): the record is stale.
		if d := du.r.own.durableRecords(); d != nil {
			d.Forget(rec.Node, rec.FileID)
		}
		return nil, state.Handover{}, state.ErrNoDurable
	}
	switch {
	case err != nil:
		return nil, state.Handover{}, err
	case resp == nil && lerr != nil:
		return nil, state.Handover{}, lerr
	case resp == nil:
		resp = local
	}
	h := state.Handover{
		Rec: rec.Rec, Name: rec.Path, WirePath: true, Stream: rec.Stream, Access: rec.Access, ShareAccess: rec.Share,
		Caching: cachingOf(resp.GetHandover().GetCaching()), Locks: locksOf(resp.GetHandover().GetLocks()),
	}
	o := du.adopt(to, rec.Key, h)
	if d := du.r.own.durableRecords(); d != nil {
		d.Forget(rec.Node, rec.FileID)
	}
	du.r.log.Info("took over a durable open of a node that left", "peer", rec.Node, "file", rec.Path)
	return o, h, nil
}
