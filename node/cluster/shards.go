package cluster

import (
	"context"
	"encoding/binary"
	"hash/fnv"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smbcluster/smbcluster/node/peer"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
)

// shardCallTimeout bounds each etcd call of the shard map, well under any
// lease TTL, so that a stalled etcd never holds the map's loop for long.
const shardCallTimeout = time.Second

// ShardMap keeps the node's view of the shard assignment (ShardKey) and
// takes and gives up shards as the contract in keys.go says. It is the
// peer.Routes of the node's router.
//
// The map learns its own lease and epoch from its own live record, so it
// needs nothing of the agent's loop: it takes shards only while that
// record exists, and answers for a shard (Owns) only while it holds it
// under its current epoch and Valid says the node is not fenced.
type ShardMap struct {
	// Immutable.
	cli      *clientv3.Client
	self     string
	peerAddr string
	log      *slog.Logger
	// Recover rebuilds the state of a shard the node has just taken from
	// the nodes holding its files' opens; the node answers for the shard
	// only once it returned nil (on an error the shard is given up and
	// taken again later).
	Recover func(ctx context.Context, shard uint32) error
	// Busy reports whether the node holds state of a shard it owns; such a
	// shard is not given up to a better-ranked node.
	Busy func(shard uint32) bool
	// NodeGone is called when a node's incarnation ends: its live record
	// went (keep 0) or it joined again under epoch keep.
	NodeGone func(node string, keep uint64)
	// NodeUp is called when another node's incarnation starts (its live
	// record appears, or shows a new epoch).
	NodeUp func(node string)
	// Moved, if set, is told of each change of this node's ownership:
	// "taken", "released" (given up to a better-ranked node) or "lost"
	// (its record deleted or taken over while not releasing it: the
	// node's lease ended). It must not block (metrics).
	Moved func(direction string)

	mu         sync.Mutex
	nodes      map[string]liveNode
	shards     [peer.NumShards]shardOwner
	releasing  [peer.NumShards]bool
	recovering [peer.NumShards]bool
	changed    chan struct{}
	valid      atomic.Pointer[func() bool] // SetValid

	kick func() // asks the reconciler to run; set by Run
}

type liveNode struct {
	epoch    uint64
	lease    clientv3.LeaseID
	addr     string
	draining bool // NodeLiveRecord.Draining: ranked for no shard
}

type shardOwner struct {
	node  string
	addr  string
	epoch uint64
	rev   int64
}

// NewShardMap returns the shard map of node self, whose peer service
// listens on peerAddr.
func NewShardMap(cli *clientv3.Client, self, peerAddr string, log *slog.Logger) *ShardMap {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &ShardMap{cli: cli, self: lower(self), peerAddr: peerAddr, log: log, nodes: map[string]liveNode{}, changed: make(chan struct{})}
}

// SetValid gives the map the node's fencing: valid reports whether the
// node may act on cluster state now (it holds its lease under its current
// epoch). Until it is set the map takes no shard and answers for none.
func (m *ShardMap) SetValid(valid func() bool) { m.valid.Store(&valid) }

func (m *ShardMap) isValid() bool {
	v := m.valid.Load()
	return v != nil && (*v)()
}

// Self implements peer.Routes.
func (m *ShardMap) Self() string { return m.self }

// Epoch implements peer.Routes.
func (m *ShardMap) Epoch() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.nodes[m.self].epoch
}

// Owner implements peer.Routes.
func (m *ShardMap) Owner(shard uint32) (peer.Route, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o := m.shards[shard%peer.NumShards]
	return peer.Route{Shard: shard, Node: o.node, Addr: o.addr, Revision: o.rev}, o.node != ""
}

// Owns implements peer.Routes.
func (m *ShardMap) Owns(shard uint32, rev int64) bool {
	if shard >= peer.NumShards || !m.isValid() {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o := m.shards[shard]
	me, live := m.nodes[m.self]
	return live && o.node == m.self && o.rev == rev && o.epoch == me.epoch && !m.releasing[shard] && !m.recovering[shard]
}

// PeerEpoch returns a live node's epoch (peer: a durable open's record
// of an earlier epoch is an orphan's).
func (m *ShardMap) PeerEpoch(node string) (uint64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.nodes[lower(node)]
	return l.epoch, ok
}

// Peers implements peer.Routes.
func (m *ShardMap) Peers() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]string, len(m.nodes))
	for n, l := range m.nodes {
		if l.addr != "" {
			out[n] = l.addr
		}
	}
	return out
}

// Changed implements peer.Routes.
func (m *ShardMap) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

// Owned returns the shards this node owns, for status and tests.
func (m *ShardMap) Owned() []uint32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []uint32
	for i, o := range m.shards {
		if o.node == m.self {
			out = append(out, uint32(i))
		}
	}
	return out
}

// notify wakes the waiters on Changed. The caller holds m.mu.
func (m *ShardMap) notify() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// Run keeps the map in step with etcd until ctx ends. The map's view is
// updated by one goroutine as events arrive; shards are taken and given
// up by another, so that the view never waits behind etcd transactions.
func (m *ShardMap) Run(ctx context.Context) {
	kick := make(chan struct{}, 1)
	m.kick = func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-kick:
			case <-tick.C:
			}
			m.reconcile(ctx)
		}
	}()
	defer func() { <-done }()
	for ctx.Err() == nil {
		if err := m.follow(ctx); err != nil && ctx.Err() == nil {
			m.log.Warn("shard map: resynchronising", "err", err)
			t := time.NewTimer(200 * time.Millisecond)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
	}
}

// follow loads the live records and shards, then applies their changes
// as they come, reconciling the node's shards after each.
func (m *ShardMap) follow(ctx context.Context) error {
	rev, err := m.load(ctx)
	if err != nil {
		return err
	}
	m.kick()
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	live := m.cli.Watch(wctx, statev1.LivePrefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1))
	shards := m.cli.Watch(wctx, statev1.ShardsPrefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1))
	for {
		select {
		case <-ctx.Done():
			return nil
		case resp, ok := <-live:
			if !ok || resp.Err() != nil {
				return watchErr(resp, ok)
			}
			for _, ev := range resp.Events {
				m.applyLive(ev)
			}
		case resp, ok := <-shards:
			if !ok || resp.Err() != nil {
				return watchErr(resp, ok)
			}
			for _, ev := range resp.Events {
				m.applyShard(ev.Kv.Key, ev.Kv.Value, ev.Kv.ModRevision, ev.Type == clientv3.EventTypeDelete)
			}
		}
		m.kick()
	}
}

func watchErr(resp clientv3.WatchResponse, ok bool) error {
	if !ok {
		return context.Canceled
	}
	return resp.Err()
}

// load reads the live records and shard records at one revision.
func (m *ShardMap) load(ctx context.Context) (int64, error) {
	cctx, cancel := context.WithTimeout(ctx, shardCallTimeout)
	defer cancel()
	lresp, err := m.cli.Get(cctx, statev1.LivePrefix, clientv3.WithPrefix())
	if err != nil {
		return 0, err
	}
	sresp, err := m.cli.Get(cctx, statev1.ShardsPrefix, clientv3.WithPrefix(), clientv3.WithRev(lresp.Header.Revision))
	if err != nil {
		return 0, err
	}
	m.mu.Lock()
	old := m.nodes
	m.nodes = map[string]liveNode{}
	m.shards = [peer.NumShards]shardOwner{}
	m.mu.Unlock()
	for _, kv := range lresp.Kvs {
		m.putLive(kv.Value)
	}
	for name := range old {
		if _, ok := m.nodes[name]; !ok && m.NodeGone != nil {
			m.NodeGone(name, 0)
		}
	}
	for _, kv := range sresp.Kvs {
		m.applyShard(kv.Key, kv.Value, kv.ModRevision, false)
	}
	return lresp.Header.Revision, nil
}

func (m *ShardMap) applyLive(ev *clientv3.Event) {
	if ev.Type == clientv3.EventTypeDelete {
		name := statev1.LastKeyPart(string(ev.Kv.Key))
		m.mu.Lock()
		_, was := m.nodes[name]
		delete(m.nodes, name)
		m.notify()
		m.mu.Unlock()
		if was && m.NodeGone != nil && name != m.self {
			m.NodeGone(name, 0)
		}
		return
	}
	m.putLive(ev.Kv.Value)
}

// putLive records a live record; a new epoch of a known node ends its
// older incarnation.
func (m *ShardMap) putLive(v []byte) {
	rec := &statev1.NodeLiveRecord{}
	if proto.Unmarshal(v, rec) != nil || rec.Name == "" {
		return
	}
	name := lower(rec.Name)
	m.mu.Lock()
	old, was := m.nodes[name]
	m.nodes[name] = liveNode{epoch: rec.Epoch, lease: clientv3.LeaseID(rec.LeaseId), addr: rec.PeerAddress, draining: rec.Draining}
	m.notify()
	m.mu.Unlock()
	if name == m.self || was && old.epoch == rec.Epoch {
		return
	}
	if was && m.NodeGone != nil {
		m.NodeGone(name, rec.Epoch)
	}
	if m.NodeUp != nil {
		m.NodeUp(name)
	}
}

func (m *ShardMap) applyShard(key, value []byte, rev int64, deleted bool) {
	n, ok := shardOfKey(string(key))
	if !ok {
		return
	}
	o := shardOwner{}
	if !deleted {
		rec := &statev1.ShardRecord{}
		if proto.Unmarshal(value, rec) != nil {
			return
		}
		o = shardOwner{node: lower(rec.Node), addr: rec.PeerAddress, epoch: rec.Epoch, rev: rev}
	}
	m.mu.Lock()
	if was := m.shards[n]; was.node == m.self && o.node != m.self && !m.releasing[n] && m.Moved != nil {
		m.Moved("lost")
	}
	m.shards[n] = o
	m.releasing[n] = false
	m.notify()
	m.mu.Unlock()
}

func shardOfKey(key string) (uint32, bool) {
	var n uint32
	s := key[len(statev1.ShardsPrefix):]
	if len(s) == 0 {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint32(c-'0')
	}
	return n, n < peer.NumShards
}

// rank orders the live nodes for shard n, best first (rendezvous
// hashing: a node's arrival or departure moves only the shards it ranks
// first for).
func rank(n uint32, nodes []string) []string {
	score := func(node string) uint64 {
		h := fnv.New64a()
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], n)
		h.Write(b[:])
		h.Write([]byte(node))
		return h.Sum64()
	}
	out := append([]string(nil), nodes...)
	sort.Slice(out, func(i, j int) bool { return score(out[i]) > score(out[j]) })
	return out
}

// reconcile takes the free shards this node ranks first for among the
// live, non-draining nodes, and gives up idle shards a better-ranked such
// node should have.
func (m *ShardMap) reconcile(ctx context.Context) {
	if !m.isValid() {
		return
	}
	m.mu.Lock()
	me, live := m.nodes[m.self]
	names := rankable(m.nodes)
	shards := m.shards
	m.mu.Unlock()
	if !live || len(names) == 0 {
		return
	}
	var wg sync.WaitGroup
	for i, o := range shards {
		n := uint32(i)
		best := rank(n, names)[0]
		switch {
		case o.node == "" && best == m.self:
			wg.Go(func() { m.claim(ctx, n, me) })
		case o.node == m.self && best != m.self && o.epoch == me.epoch:
			wg.Go(func() { m.release(ctx, n, o.rev) })
		}
	}
	wg.Wait()
}

// rankable are the nodes shards are ranked among: the live nodes serving
// the peer API that are not draining, or all of them when every one
// drains (the shards must live somewhere).
func rankable(nodes map[string]liveNode) []string {
	var all, serving []string
	for n, l := range nodes {
		if l.addr == "" {
			continue
		}
		all = append(all, n)
		if !l.draining {
			serving = append(serving, n)
		}
	}
	if len(serving) == 0 {
		return all
	}
	return serving
}

// claim takes free shard n under the node's lease and epoch, and
// rebuilds its state before answering for it.
func (m *ShardMap) claim(ctx context.Context, n uint32, me liveNode) {
	m.setRecovering(n, true)
	defer m.setRecovering(n, false)
	v, _ := proto.Marshal(&statev1.ShardRecord{Node: m.self, Epoch: me.epoch, PeerAddress: m.peerAddr})
	cctx, cancel := context.WithTimeout(ctx, shardCallTimeout)
	defer cancel()
	key := statev1.ShardKey(n)
	tr, err := m.cli.Txn(cctx).If(
		clientv3.Compare(clientv3.CreateRevision(key), "=", 0),
		clientv3.Compare(clientv3.Value(statev1.NodeEpochKey(m.self)), "=", uitoa(me.epoch)),
	).Then(clientv3.OpPut(key, string(v), clientv3.WithLease(me.lease))).Commit()
	switch {
	case err != nil:
		m.log.Debug("taking a shard", "shard", n, "err", err)
		return
	case !tr.Succeeded:
		return
	}
	rev := tr.Header.Revision
	if m.Recover != nil {
		if err := m.Recover(ctx, n); err != nil {
			m.log.Warn("rebuilding a shard's state failed: giving it up", "shard", n, "err", err)
			dctx, cancel := context.WithTimeout(ctx, shardCallTimeout)
			defer cancel()
			m.cli.Txn(dctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).Then(clientv3.OpDelete(key)).Commit()
			return
		}
	}
	m.log.Info("took a shard", "shard", n, "epoch", me.epoch)
	if m.Moved != nil {
		m.Moved("taken")
	}
}

func (m *ShardMap) setRecovering(n uint32, on bool) {
	m.mu.Lock()
	m.recovering[n] = on
	m.notify()
	m.mu.Unlock()
}

// release gives shard n up unless it holds state.
func (m *ShardMap) release(ctx context.Context, n uint32, rev int64) {
	m.mu.Lock()
	m.releasing[n] = true // Owns refuses from now on
	m.mu.Unlock()
	if m.Busy != nil && m.Busy(n) {
		m.mu.Lock()
		m.releasing[n] = false
		m.mu.Unlock()
		return
	}
	cctx, cancel := context.WithTimeout(ctx, shardCallTimeout)
	defer cancel()
	key := statev1.ShardKey(n)
	tr, err := m.cli.Txn(cctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
		Then(clientv3.OpDelete(key)).Commit()
	if err != nil || !tr.Succeeded {
		m.mu.Lock()
		m.releasing[n] = false
		m.mu.Unlock()
		return
	}
	m.log.Info("gave a shard up to a better-ranked node", "shard", n)
	if m.Moved != nil {
		m.Moved("released")
	}
}

func lower(s string) string { return strings.ToLower(s) }

func uitoa(n uint64) string { return strconv.FormatUint(n, 10) }
