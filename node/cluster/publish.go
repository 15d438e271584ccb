package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/state"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// maxTxnOps is the most operations in one etcd transaction (etcd's
// default --max-txn-ops is 128).
const maxTxnOps = 64

// liveRefresh is how often, at most, the live record's session count is
// refreshed.
const liveRefresh = 2 * time.Second

// pubState is what the node has published under its current lease.
// Owned by the agent's goroutine.
type pubState struct {
	sessions map[uint64]bool    // SessionKey written
	channels map[string]string  // ChannelKeys written, with their addresses joined
	opens    map[uint64]pubOpen // OpenKey written, with the file state it named
	count    uint32             // SessionCount in the live record
	liveAt   time.Time          // last live record write
}

func (p *pubState) init() { p.reset() }

// reset forgets everything: after a new lease nothing is published.
func (p *pubState) reset() {
	p.sessions = map[uint64]bool{}
	p.channels = map[string]string{}
	p.opens = map[uint64]pubOpen{}
	p.count = 0
	p.liveAt = time.Now()
}

// sweep publishes the changes to the node's sessions, channels and opens
// since the last sweep, refreshes the live record's session count, and
// retries shares that failed to apply. Every write is guarded by the
// node's epoch; nothing is written once the Fencing is no longer valid.
// A failed guard or a lost lease ends the Fencing, which the agent's loop
// sees; other failures are logged and retried at the next sweep.
func (a *Agent) sweep(ctx context.Context) error {
	if len(a.conf.failed) > 0 {
		a.reconcileShares()
	}
	if !a.Fence().Valid() {
		return nil
	}
	sessions := a.node.Server.Sessions()
	var b batch
	a.sessionOps(&b, sessions)
	a.openOps(&b)
	err := a.commit(ctx, &b)
	if err == nil {
		err = a.refreshLive(ctx, uint32(len(sessions)))
	}
	if err != nil && a.Fence().Valid() {
		a.log.Warn("publishing sessions and opens", "err", err)
	}
	return nil
}

// batch is a list of etcd operations and what to record once they commit.
type batch struct {
	ops   []clientv3.Op
	after []func()
}

func (b *batch) add(op clientv3.Op, after func()) {
	b.ops = append(b.ops, op)
	b.after = append(b.after, after)
}

// commit runs b in epoch-guarded transactions of at most maxTxnOps
// operations and records each that succeeded.
func (a *Agent) commit(ctx context.Context, b *batch) error {
	for start := 0; start < len(b.ops); start += maxTxnOps {
		end := min(start+maxTxnOps, len(b.ops))
		if err := a.guarded(ctx, b.ops[start:end]...); err != nil {
			return err
		}
		for _, f := range b.after[start:end] {
			f()
		}
	}
	return nil
}

// sessionOps adds the writes and deletes of session and channel records.
func (a *Agent) sessionOps(b *batch, sessions []*server.Session) {
	name := a.cfg.Name
	now := map[any]bool{} // session ids and channel keys published now
	for _, ss := range sessions {
		id := ss.ID
		now[id] = true
		if !a.pub.sessions[id] {
			v, err := proto.Marshal(a.sessionRecord(ss))
			if err != nil {
				continue
			}
			b.add(clientv3.OpPut(statev1.SessionKey(id), string(v), clientv3.WithLease(a.inc().lease)),
				func() { a.pub.sessions[id] = true })
		}
		// One record per node the session's channels connect through:
		// a channel bound through another node and handed here
		// (node/handoff) counts as that node's. This node always has
		// one: its channel records count its sessions (drain).
		byNode := map[string][]string{name: nil}
		for _, ch := range ss.Channels() {
			node := ch.Node
			if node == "" {
				node = name
			}
			byNode[node] = append(byNode[node], ch.Addr)
		}
		for node, addrs := range byNode {
			slices.Sort(addrs)
			joined := strings.Join(addrs, ",")
			key := statev1.ChannelKey(node, id)
			now[key] = true
			if old, ok := a.pub.channels[key]; !ok || old != joined {
				v, _ := proto.Marshal(&statev1.ChannelRecord{
					SessionId: id, Node: node, ClientAddresses: addrs, BindTime: timestamppb.New(ss.CreatedAt),
				})
				b.add(clientv3.OpPut(key, string(v), clientv3.WithLease(a.inc().lease)),
					func() { a.pub.channels[key] = joined })
			}
		}
	}
	for id := range a.pub.sessions {
		if !now[id] {
			b.add(clientv3.OpDelete(statev1.SessionKey(id)), func() { delete(a.pub.sessions, id) })
		}
	}
	for key := range a.pub.channels {
		if !now[key] {
			b.add(clientv3.OpDelete(key), func() { delete(a.pub.channels, key) })
		}
	}
}

// sessionRecord describes ss for other nodes, its key sealed.
func (a *Agent) sessionRecord(ss *server.Session) *statev1.SessionRecord {
	r := ss.Record()
	rec := &statev1.SessionRecord{
		SessionId: r.ID, Node: a.cfg.Name, NodeEpoch: a.Epoch(), User: r.User, Domain: r.Domain,
		ClientGuid: r.ClientGUID[:], Dialect: uint32(r.Dialect), CipherId: uint32(r.Cipher),
		SigningAlgorithmId: uint32(r.SigningAlg), SigningRequired: r.SigningRequired, EncryptData: r.EncryptData,
		CreateTime: timestamppb.New(r.CreatedAt), IsGuest: ss.Guest, IsAnonymous: ss.Anonymous,
	}
	if addrs := ss.ChannelAddrs(); len(addrs) > 0 {
		rec.ClientAddress = addrs[0]
	}
	if len(r.SessionKey) > 0 {
		rec.SessionKey = a.cfg.Sealer.Seal(r.SessionKey, statev1.SessionKey(r.ID))
	}
	return rec
}

// pubOpen is the part of a published open record that changes while the
// open lives: the owner of its file and its byte-range locks.
type pubOpen struct {
	owner string
	locks []state.Lock
	dur   state.HeldEntry // of a durable open
}

// openOps adds the writes and deletes of open records: an open's record
// is written when it appears and again when its file's owner or its
// locks changed since, so lock requests cost at most one write per open
// per sweep. Durable opens are written without the lease: they outlive
// the node's membership.
func (a *Agent) openOps(b *batch) {
	name := a.cfg.Name
	now := map[uint64]bool{}
	for _, o := range a.node.Server.Opens() {
		id := o.ID
		now[id] = true
		var cur pubOpen
		if a.node.Files != nil {
			cur.owner, cur.locks = a.node.Files.Describe(o.Handle)
		}
		df, _ := a.node.Files.(DurableFiles)
		hasDur := false
		if o.Record != nil && df != nil {
			cur.dur, hasDur = df.DescribeDurable(o.Handle)
		}
		if old, ok := a.pub.opens[id]; ok && old.owner == cur.owner && slices.Equal(old.locks, cur.locks) && old.dur == cur.dur {
			continue
		}
		rec := &statev1.OpenRecord{
			PersistentFileId: id, VolatileFileId: id, Node: name, SessionId: o.SessionID,
			User: o.User, Share: o.Share, Path: o.Path, DesiredAccess: o.Access,
			Durable: o.Durable, OpenTime: timestamppb.New(o.Created),
			OwnerNode: cur.owner, Locks: locksRecord(cur.locks),
		}
		if hasDur {
			durableRecord(rec, o.Record, cur.dur)
		}
		v, err := proto.Marshal(rec)
		if err != nil {
			continue
		}
		var opts []clientv3.OpOption
		if !o.Durable {
			opts = append(opts, clientv3.WithLease(a.inc().lease))
		}
		b.add(clientv3.OpPut(statev1.OpenKey(name, id), string(v), opts...), func() { a.pub.opens[id] = cur })
	}
	for id := range a.pub.opens {
		if !now[id] {
			b.add(clientv3.OpDelete(statev1.OpenKey(name, id)), func() { delete(a.pub.opens, id) })
		}
	}
}

// durableRecord fills in what another node needs to take durable open
// d over (durable.go in node/peer).
func durableRecord(rec *statev1.OpenRecord, d *state.DurableRecord, e state.HeldEntry) {
	c := e.Caching
	rec.ShareAccess, rec.ClientGuid = e.ShareAccess, d.ClientGUID[:]
	if d.Version == 2 {
		rec.CreateGuid = d.CreateGUID[:]
	}
	rec.OplockLevel, rec.LeaseState, rec.Persistent = uint32(c.Oplock()), c.State, d.Persistent
	if c.Lease {
		rec.OplockLevel, rec.LeaseKey = 0xff, c.ID.Key[:]
	}
	rec.DurableOpen = &statev1.DurableOpen{
		NodeEpoch: e.Epoch, Ref: e.Ref, Volume: e.Key.Volume, FileId: e.Key.FileID, Stream: e.Stream,
		Version: int32(d.Version), TimeoutMs: uint64(d.Timeout / time.Millisecond), AppInstanceId: d.AppInstanceID[:],
		Domain: d.Domain, GrantedAccess: e.Access, Lease: c.Lease, LeaseVersion: int32(c.Version),
		LeaseEpoch: uint32(c.Epoch),
	}
}

// locksRecord converts byte-range locks to their record form.
func locksRecord(ls []state.Lock) []*statev1.ByteRangeLock {
	out := make([]*statev1.ByteRangeLock, 0, len(ls))
	for _, l := range ls {
		out = append(out, &statev1.ByteRangeLock{Offset: l.Offset, Length: l.Length, Exclusive: l.Exclusive})
	}
	return out
}

// refreshLive rewrites the live record when the session count changed,
// at most every liveRefresh.
func (a *Agent) refreshLive(ctx context.Context, count uint32) error {
	if count == a.pub.count || time.Since(a.pub.liveAt) < liveRefresh {
		return nil
	}
	inc := a.inc()
	v, err := proto.Marshal(a.liveRecord(a.rec, inc.fencing.Epoch(), inc.lease, count))
	if err != nil {
		return err
	}
	if err := a.guarded(ctx, clientv3.OpPut(statev1.NodeLiveKey(a.cfg.Name), string(v), clientv3.WithLease(inc.lease))); err != nil {
		return fmt.Errorf("live record: %w", err)
	}
	a.pub.count, a.pub.liveAt = count, time.Now()
	a.addrs.published = liveSig(a.liveRecord(a.rec, inc.fencing.Epoch(), inc.lease, count))
	return nil
}

// onClose acts on a close request: a session this node holds a channel
// of, or an open of this node, is closed, and a sweep deletes its records.
func (a *Agent) onClose(key string) {
	switch {
	case strings.HasPrefix(key, statev1.CloseSessionsPrefix):
		id, err := statev1.ParseIDKeyPart(strings.TrimPrefix(key, statev1.CloseSessionsPrefix))
		if err == nil && a.node.Server.CloseSession(id) {
			a.log.Info("session closed on request", "session_id", fmt.Sprintf("%#x", id))
			a.Kick()
		}
	case strings.HasPrefix(key, statev1.CloseOpensPrefix):
		node, fid, _ := strings.Cut(strings.TrimPrefix(key, statev1.CloseOpensPrefix), "/")
		if node != strings.ToLower(a.cfg.Name) {
			return
		}
		id, err := statev1.ParseIDKeyPart(fid)
		if err == nil && a.node.Server.CloseOpen(id) {
			a.log.Info("open closed on request", "file_id", fmt.Sprintf("%#x", id))
			a.Kick()
		}
	}
}
