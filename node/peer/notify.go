package peer

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/smbcluster/smbcluster/node/clock"
	"github.com/smbcluster/smbcluster/node/mesh"
	"github.com/smbcluster/smbcluster/node/state"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
)

// Change notify across nodes. Every node knows every other node's
// CHANGE_NOTIFY watches (their directories and filters, not their
// buffers): a watch is told to all peers before its request goes
// pending, and a node that joins is told them all. A change made through
// a node is matched against the others' watches in memory — nothing is
// sent unless a watch on another node covers it — and queued, in order,
// to the nodes whose watches cover it.

// NotifySink is a share's notifier as the peer service reaches it.
type NotifySink interface {
	DeliverChange(action uint32, name string, filter uint32)
	DeliverDeletePending(dir string)
}

// notifier is a node's change notify across nodes: its own watches, the
// other nodes' and the changes queued to them. The Router embeds it, so
// its exported methods are the Router's (share.ClusterNotify, NodeUp,
// SetNotifySinks). Its mu guards the fields that follow it. Under mu
// only an outbox's mu is taken (queueLocked), no sink is called and
// nothing is sent to another node: the watches are told, and the changes
// sent, by goroutines of their own after mu is let go. No other lock of
// this package is held when mu is taken (the share's may be: a rename
// posts its change under its open's lock).
type notifier struct {
	// Immutable after newNotifier.
	routes Routes                                              // this node's name and epoch
	mesh   *mesh.Mesh                                          // the peers tellWatches asks
	client func(node string) (peerv1.PeerServiceClient, error) // a peer's service, for send (Router.client)
	ids    *atomic.Uint64                                      // the Router's ids, shared with its opens
	stats  *Stats                                              // the Router's counters
	log    *slog.Logger

	nTheirs atomic.Int64 // other nodes' watches, read by Post without mu

	mu     sync.Mutex
	sinks  func(share string) (NotifySink, bool)
	mine   map[uint64]*peerv1.WatchSpec
	told   map[uint64]chan struct{} // closed once the peers were told of a watch
	theirs map[string]*nodeWatches
	out    map[string]*outbox
	recent []recentChange // recent.go
}

func newNotifier(routes Routes, m *mesh.Mesh, client func(string) (peerv1.PeerServiceClient, error), ids *atomic.Uint64, stats *Stats, log *slog.Logger) *notifier {
	return &notifier{
		routes: routes, mesh: m, client: client, ids: ids, stats: stats, log: log,
		mine: map[uint64]*peerv1.WatchSpec{}, told: map[uint64]chan struct{}{},
		theirs: map[string]*nodeWatches{}, out: map[string]*outbox{},
	}
}

// nodeWatches are another node's watches, as of its epoch.
type nodeWatches struct {
	epoch uint64
	specs map[uint64]*peerv1.WatchSpec
}

// outbox sends changes to one node, in order. Its mu guards pending and
// is a leaf, taken under notifier.mu.
type outbox struct {
	mu      sync.Mutex
	pending []*peerv1.Change
	wake    chan struct{}
	done    chan struct{}
}

// outboxMax bounds the changes queued for one node; beyond it changes are
// dropped (as a watch's own buffer overflows, the client re-reads the
// directory when it next asks — here it sees fewer changes).
const outboxMax = 4096

// SetNotifySinks tells the router how to find a share's notifier for the
// changes other nodes send.
func (n *notifier) SetNotifySinks(f func(share string) (NotifySink, bool)) {
	n.mu.Lock()
	n.sinks = f
	n.mu.Unlock()
}

// Watch implements share.ClusterNotify. The peers are told in the
// background: the watch names the moment it was made, and each peer sends
// it the changes it made since then when it hears of it (recent.go), so
// the CHANGE_NOTIFY need not wait for them — a request right behind it on
// the connection (another watch's, which may answer at once with what it
// buffered) is not held up.
func (n *notifier) Watch(share string, w state.Watch) uint64 {
	id := n.ids.Add(1)
	spec := watchSpecPB(id, share, w, clock.Now())
	told := make(chan struct{})
	n.mu.Lock()
	n.mine[id] = spec
	n.told[id] = told
	n.mu.Unlock()
	go func() {
		defer close(told)
		n.tellWatches(&peerv1.WatchRequest{Add: []*peerv1.WatchSpec{spec}}, "")
	}()
	return id
}

// Unwatch implements share.ClusterNotify; the peers hear of it after they
// heard of the watch.
func (n *notifier) Unwatch(id uint64) {
	n.mu.Lock()
	delete(n.mine, id)
	told := n.told[id]
	delete(n.told, id)
	n.mu.Unlock()
	go func() {
		if told != nil {
			<-told
		}
		n.tellWatches(&peerv1.WatchRequest{Remove: []uint64{id}}, "")
	}()
}

// tellWatches sends req to every live peer (only to node, if set), in
// parallel, and waits for the answers.
func (n *notifier) tellWatches(req *peerv1.WatchRequest, node string) {
	req.Node, req.Epoch = n.routes.Self(), n.routes.Epoch()
	ctx, cancel := context.WithTimeout(context.Background(), deliverTimeout)
	defer cancel()
	var to []string // nil: every other live node
	if node != "" {
		to = []string{node}
	}
	for a := range askVia(ctx, n.mesh, to, 0, func(ctx context.Context, cli peerv1.PeerServiceClient) (*peerv1.WatchResponse, error) {
		n.stats.Delivers.Add(1)
		return cli.Watch(ctx, req)
	}) {
		if a.Err != nil && !errors.Is(a.Err, mesh.ErrGone) {
			n.log.Warn("telling a node of change-notify watches", "peer", a.Node, "err", a.Err)
		}
	}
}

// NodeUp tells a node that joined (or joined again) this node's watches.
func (n *notifier) NodeUp(node string) {
	n.mu.Lock()
	specs := make([]*peerv1.WatchSpec, 0, len(n.mine))
	for _, s := range n.mine {
		specs = append(specs, s)
	}
	n.mu.Unlock()
	go n.tellWatches(&peerv1.WatchRequest{Add: specs, Replace: true}, node)
}

// Post implements share.ClusterNotify: the change goes to the nodes with
// a watch that covers it; unless frequent (a write's), it is kept a
// moment for watches still on their way (recent.go).
func (n *notifier) Post(share string, action uint32, name string, filter uint32, frequent bool) {
	if frequent && n.nTheirs.Load() == 0 {
		return
	}
	c := &peerv1.Change{Share: share, Action: action, Name: name, Filter: filter}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !frequent {
		n.rememberLocked(c, clock.Now())
	}
	for node, nw := range n.theirs {
		for _, s := range nw.specs {
			if s.Share != share {
				continue
			}
			if _, ok := watchOf(s).Covers(name, filter); ok {
				n.queueLocked(node, c)
				break
			}
		}
	}
}

// PostDeletePending implements share.ClusterNotify.
func (n *notifier) PostDeletePending(share, dir string) {
	c := &peerv1.Change{Share: share, Name: dir, DeletePending: true}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.rememberLocked(c, clock.Now())
	for node, nw := range n.theirs {
		for _, s := range nw.specs {
			if s.Share == share && s.Dir == dir {
				n.queueLocked(node, c)
				break
			}
		}
	}
}

// queueLocked queues c for node, starting its sender. The caller holds
// n.mu.
func (n *notifier) queueLocked(node string, c *peerv1.Change) {
	ob := n.out[node]
	if ob == nil {
		ob = &outbox{wake: make(chan struct{}, 1), done: make(chan struct{})}
		n.out[node] = ob
		go n.send(node, ob)
	}
	ob.mu.Lock()
	if len(ob.pending) < outboxMax {
		ob.pending = append(ob.pending, c)
	}
	ob.mu.Unlock()
	select {
	case ob.wake <- struct{}{}:
	default:
	}
}

// send delivers an outbox's changes in order until the node goes.
func (n *notifier) send(node string, ob *outbox) {
	for {
		select {
		case <-ob.done:
			return
		case <-ob.wake:
		}
		for {
			ob.mu.Lock()
			batch := ob.pending
			ob.pending = nil
			ob.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			cli, err := n.client(node)
			if err != nil {
				break
			}
			ctx, cancel := context.WithTimeout(context.Background(), deliverTimeout)
			n.stats.Delivers.Add(1)
			if _, err := cli.Notify(ctx, &peerv1.NotifyRequest{Changes: batch}); err != nil {
				n.log.Warn("delivering changes to a node's watches", "peer", node, "changes", len(batch), "err", err)
			}
			cancel()
		}
	}
}

// countTheirsLocked keeps nTheirs, the number of other nodes' watches.
// The caller holds n.mu.
func (n *notifier) countTheirsLocked() {
	count := 0
	for _, nw := range n.theirs {
		count += len(nw.specs)
	}
	n.nTheirs.Store(int64(count))
}

// dropWatchesOf forgets a node's watches and stops its sender.
func (n *notifier) dropWatchesOf(node string) {
	n.mu.Lock()
	delete(n.theirs, node)
	n.countTheirsLocked()
	if ob := n.out[node]; ob != nil {
		close(ob.done)
		delete(n.out, node)
	}
	n.mu.Unlock()
}

// Watch implements peerv1.PeerServiceServer: another node's watches.
func (sv *Service) Watch(ctx context.Context, req *peerv1.WatchRequest) (*peerv1.WatchResponse, error) {
	sv.r.notifier.heardWatches(req)
	return &peerv1.WatchResponse{}, nil
}

// heardWatches takes in another node's watches (Service.Watch),
// replaying to a new one the recent changes it covers.
func (n *notifier) heardWatches(req *peerv1.WatchRequest) {
	n.mu.Lock()
	defer n.mu.Unlock()
	nw := n.theirs[req.Node]
	switch {
	case nw != nil && req.Epoch < nw.epoch:
		return // from an older incarnation
	case nw == nil || req.Replace || req.Epoch > nw.epoch:
		nw = &nodeWatches{epoch: req.Epoch, specs: map[uint64]*peerv1.WatchSpec{}}
		n.theirs[req.Node] = nw
	}
	for _, s := range req.Add {
		if _, known := nw.specs[s.Id]; !known {
			n.replayLocked(req.Node, s) // recent.go
		}
		nw.specs[s.Id] = s
	}
	for _, id := range req.Remove {
		delete(nw.specs, id)
	}
	if len(nw.specs) == 0 {
		delete(n.theirs, req.Node)
	}
	n.countTheirsLocked()
}

// Notify implements peerv1.PeerServiceServer: changes made through
// another node, for this node's watches.
func (sv *Service) Notify(ctx context.Context, req *peerv1.NotifyRequest) (*peerv1.NotifyResponse, error) {
	sv.r.notifier.deliverChanges(req.Changes)
	return &peerv1.NotifyResponse{}, nil
}

// deliverChanges hands changes another node made to this node's
// notifiers (Service.Notify), without n.mu.
func (n *notifier) deliverChanges(changes []*peerv1.Change) {
	n.mu.Lock()
	sinks := n.sinks
	n.mu.Unlock()
	if sinks == nil {
		return
	}
	for _, c := range changes {
		sink, ok := sinks(c.Share)
		if !ok {
			continue
		}
		if c.DeletePending {
			sink.DeliverDeletePending(c.Name)
		} else {
			sink.DeliverChange(c.Action, c.Name, c.Filter)
		}
	}
}
