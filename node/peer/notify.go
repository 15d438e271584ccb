package peer

import (
	"context"
	"errors"
	"sync"

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

// notifyState is the router's part for change notify; its fields are
// guarded by Router.mu.
type notifyState struct {
	sinks  func(share string) (NotifySink, bool)
	mine   map[uint64]*peerv1.WatchSpec
	told   map[uint64]chan struct{} // closed once the peers were told of a watch
	theirs map[string]*nodeWatches
	out    map[string]*outbox
	recent []recentChange // recent.go
}

// nodeWatches are another node's watches, as of its epoch.
type nodeWatches struct {
	epoch uint64
	specs map[uint64]*peerv1.WatchSpec
}

// outbox sends changes to one node, in order.
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
func (r *Router) SetNotifySinks(f func(share string) (NotifySink, bool)) {
	r.mu.Lock()
	r.ntf.sinks = f
	r.mu.Unlock()
}

// Watch implements share.ClusterNotify. The peers are told in the
// background: the watch names the moment it was made, and each peer sends
// it the changes it made since then when it hears of it (recent.go), so
// the CHANGE_NOTIFY need not wait for them — a request right behind it on
// the connection (another watch's, which may answer at once with what it
// buffered) is not held up.
func (r *Router) Watch(share string, w state.Watch) uint64 {
	id := r.next.Add(1)
	spec := watchSpecPB(id, share, w, clock.Now())
	told := make(chan struct{})
	r.mu.Lock()
	r.ntf.mine[id] = spec
	r.ntf.told[id] = told
	r.mu.Unlock()
	go func() {
		defer close(told)
		r.tellWatches(&peerv1.WatchRequest{Add: []*peerv1.WatchSpec{spec}}, "")
	}()
	return id
}

// Unwatch implements share.ClusterNotify; the peers hear of it after they
// heard of the watch.
func (r *Router) Unwatch(id uint64) {
	r.mu.Lock()
	delete(r.ntf.mine, id)
	told := r.ntf.told[id]
	delete(r.ntf.told, id)
	r.mu.Unlock()
	go func() {
		if told != nil {
			<-told
		}
		r.tellWatches(&peerv1.WatchRequest{Remove: []uint64{id}}, "")
	}()
}

// tellWatches sends req to every live peer (only to node, if set), in
// parallel, and waits for the answers.
func (r *Router) tellWatches(req *peerv1.WatchRequest, node string) {
	req.Node, req.Epoch = r.routes.Self(), r.routes.Epoch()
	ctx, cancel := context.WithTimeout(context.Background(), deliverTimeout)
	defer cancel()
	var to []string // nil: every other live node
	if node != "" {
		to = []string{node}
	}
	for a := range ask(ctx, r, to, 0, func(ctx context.Context, cli peerv1.PeerServiceClient) (*peerv1.WatchResponse, error) {
		r.stats.Delivers.Add(1)
		return cli.Watch(ctx, req)
	}) {
		if a.Err != nil && !errors.Is(a.Err, mesh.ErrGone) {
			r.log.Warn("telling a node of change-notify watches", "peer", a.Node, "err", a.Err)
		}
	}
}

// NodeUp tells a node that joined (or joined again) this node's watches.
func (r *Router) NodeUp(node string) {
	r.mu.Lock()
	specs := make([]*peerv1.WatchSpec, 0, len(r.ntf.mine))
	for _, s := range r.ntf.mine {
		specs = append(specs, s)
	}
	r.mu.Unlock()
	go r.tellWatches(&peerv1.WatchRequest{Add: specs, Replace: true}, node)
}

// Post implements share.ClusterNotify: the change goes to the nodes with
// a watch that covers it; unless frequent (a write's), it is kept a
// moment for watches still on their way (recent.go).
func (r *Router) Post(share string, action uint32, name string, filter uint32, frequent bool) {
	if frequent && r.nTheirs.Load() == 0 {
		return
	}
	c := &peerv1.Change{Share: share, Action: action, Name: name, Filter: filter}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !frequent {
		r.rememberLocked(c, clock.Now())
	}
	for node, nw := range r.ntf.theirs {
		for _, s := range nw.specs {
			if s.Share != share {
				continue
			}
			if _, ok := watchOf(s).Covers(name, filter); ok {
				r.queueLocked(node, c)
				break
			}
		}
	}
}

// PostDeletePending implements share.ClusterNotify.
func (r *Router) PostDeletePending(share, dir string) {
	c := &peerv1.Change{Share: share, Name: dir, DeletePending: true}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rememberLocked(c, clock.Now())
	for node, nw := range r.ntf.theirs {
		for _, s := range nw.specs {
			if s.Share == share && s.Dir == dir {
				r.queueLocked(node, c)
				break
			}
		}
	}
}

// queueLocked queues c for node, starting its sender. The caller holds
// r.mu.
func (r *Router) queueLocked(node string, c *peerv1.Change) {
	ob := r.ntf.out[node]
	if ob == nil {
		ob = &outbox{wake: make(chan struct{}, 1), done: make(chan struct{})}
		r.ntf.out[node] = ob
		go r.send(node, ob)
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
func (r *Router) send(node string, ob *outbox) {
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
			cli, err := r.client(node)
			if err != nil {
				break
			}
			ctx, cancel := context.WithTimeout(context.Background(), deliverTimeout)
			r.stats.Delivers.Add(1)
			if _, err := cli.Notify(ctx, &peerv1.NotifyRequest{Changes: batch}); err != nil {
				r.log.Warn("delivering changes to a node's watches", "peer", node, "changes", len(batch), "err", err)
			}
			cancel()
		}
	}
}

// countTheirsLocked keeps nTheirs, the number of other nodes' watches.
// The caller holds r.mu.
func (r *Router) countTheirsLocked() {
	n := 0
	for _, nw := range r.ntf.theirs {
		n += len(nw.specs)
	}
	r.nTheirs.Store(int64(n))
}

// dropWatchesOf forgets a node's watches and stops its sender.
func (r *Router) dropWatchesOf(node string) {
	r.mu.Lock()
	delete(r.ntf.theirs, node)
	r.countTheirsLocked()
	if ob := r.ntf.out[node]; ob != nil {
		close(ob.done)
		delete(r.ntf.out, node)
	}
	r.mu.Unlock()
}

// Watch implements peerv1.PeerServiceServer: another node's watches.
func (sv *Service) Watch(ctx context.Context, req *peerv1.WatchRequest) (*peerv1.WatchResponse, error) {
	r := sv.r
	r.mu.Lock()
	defer r.mu.Unlock()
	nw := r.ntf.theirs[req.Node]
	switch {
	case nw != nil && req.Epoch < nw.epoch:
		return &peerv1.WatchResponse{}, nil // from an older incarnation
	case nw == nil || req.Replace || req.Epoch > nw.epoch:
		nw = &nodeWatches{epoch: req.Epoch, specs: map[uint64]*peerv1.WatchSpec{}}
		r.ntf.theirs[req.Node] = nw
	}
	for _, s := range req.Add {
		if _, known := nw.specs[s.Id]; !known {
			r.replayLocked(req.Node, s) // recent.go
		}
		nw.specs[s.Id] = s
	}
	for _, id := range req.Remove {
		delete(nw.specs, id)
	}
	if len(nw.specs) == 0 {
		delete(r.ntf.theirs, req.Node)
	}
	r.countTheirsLocked()
	return &peerv1.WatchResponse{}, nil
}

// Notify implements peerv1.PeerServiceServer: changes made through
// another node, for this node's watches.
func (sv *Service) Notify(ctx context.Context, req *peerv1.NotifyRequest) (*peerv1.NotifyResponse, error) {
	r := sv.r
	r.mu.Lock()
	sinks := r.ntf.sinks
	r.mu.Unlock()
	if sinks == nil {
		return &peerv1.NotifyResponse{}, nil
	}
	for _, c := range req.Changes {
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
	return &peerv1.NotifyResponse{}, nil
}
