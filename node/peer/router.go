package peer

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smbcluster/smbcluster/node/mesh"
	"github.com/smbcluster/smbcluster/node/state"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Timeouts of calls to other nodes. A call that cannot wait on a client
// (everything but Admit and Wait) is bounded so that a stopped peer holds
// up a request for a bounded time; routing retries while the shard map
// catches up with a move.
const (
	callTimeout    = 10 * time.Second
	deliverTimeout = 2 * time.Second
	routeWait      = 500 * time.Millisecond
)

// ErrPeerUnreachable is returned when the owner of a file's shard did
// not answer an open within callTimeout: it cannot be reached (a network
// partition between the nodes; its lease, kept through etcd, still
// holds). It is a deadline error (STATUS_IO_TIMEOUT to the client).
var ErrPeerUnreachable = fmt.Errorf("peer: the file's owner did not answer within %v: %w", callTimeout, context.DeadlineExceeded)

// errRouterClosed is returned for a call after Close.
var errRouterClosed = errors.New("peer: the router is closed")

// ErrNoOwner is returned when a file's shard has no owner within the
// wait (its owner died and no node has taken it over yet).
var ErrNoOwner = errors.New("peer: the file's shard has no owner")

// Router is a node's state.Files, state.Locks and state.DurableFiles in
// a cluster. It is safe for concurrent use.
//
// It is composed of its roles, each a type of its own: the holder side's
// parts of the state.Files API it embeds (caching, names, locks, durable
// opens) and change notify (notifier), the books of what this node
// holds (holdings), the owner side (owner), admission delegation
// (delegations) and the exchanges with the peers (muxPool); Router itself
// admits and closes opens and routes every call to the owner of its
// file's shard. It has no mutex but dropMu (doc.go: the lock order).
type Router struct {
	*cachingSide // oplocks and leases (caching.go)
	*nameSide    // delete pending, renames, streams (names.go)
	*lockSide    // byte-range locks (locks.go)
	*durableSide // durable opens moving between nodes (durable.go)

	// Immutable after New.
	routes Routes
	table  *state.Table
	locks  *state.LockTable
	mirror *state.LockTable // the locks of held opens of remote files (recover.go)
	mesh   *mesh.Mesh       // the connections to the other nodes
	log    *slog.Logger
	dg     *delegations // admission delegation, under its own lock (deleg.go)
	own    *owner       // the owner side, under its own lock (owner.go)
	hs     *holdings    // what this node holds, under its own lock (holdings.go)
	muxes  *muxPool     // the exchange with each peer, under its own lock (mux.go)

	// Change notify across nodes, under its own lock (notify.go); its
	// exported methods are the Router's.
	*notifier

	// Tunables of admission delegation (deleg.go), set before use.
	delegIdle time.Duration // a delegation without opens is returned after this
	maxDelegs int           // delegations held at most (0: none asked for)
	// A return of a delegation waits returnTimeout for its owner's
	// answer, and returnWait before it is sent again (doubling up to 5 s).
	returnTimeout, returnWait time.Duration
	// The first ask of a detach, which a reconnect through another node
	// waits for, gives up after detachWait (caching.go); every other call
	// to a file's owner after callTimeout.
	detachWait time.Duration

	next  atomic.Uint64
	stats Stats

	dropMu sync.RWMutex  // closes that do not wait (read) against delete pending notices (closing.go)
	closed chan struct{} // closed by Close: closeLater gives up
	once   sync.Once     // closes closed
}

// refKey is an OpenRef as a map key.
type refKey struct {
	node  string
	epoch uint64
	id    uint64
}

// Stats counts the peer calls a node made, for benchmarks and metrics.
type Stats struct {
	Calls    atomic.Uint64 // RPCs to owners (Admit, Call, Wait)
	Delivers atomic.Uint64 // breaks, lock notices, watches and changes sent to other nodes
	Local    atomic.Uint64 // operations served by the local tables
	Posted   atomic.Uint64 // of the Calls, closes sent without waiting (closing.go)
	// Admission delegation (deleg.go): opens admitted under one, and
	// delegations granted, recalled (as owner) and returned (as holder).
	Delegated, Granted, Recalled, Returned atomic.Uint64
	// ByOp counts the calls to owners by operation (ops.go).
	ByOp [numOps]atomic.Uint64
}

// call counts one call of op to an owner.
func (s *Stats) call(op Op) {
	s.Calls.Add(1)
	if int(op) < len(s.ByOp) {
		s.ByOp[op].Add(1)
	}
}

// Sent is the number of RPCs this node sent to other nodes.
func (s *Stats) Sent() uint64 { return s.Calls.Load() + s.Delivers.Load() }

// New returns a router over the local tables that reaches the other
// nodes through m.
func New(routes Routes, table *state.Table, locks *state.LockTable, m *mesh.Mesh, log *slog.Logger) *Router {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Router{
		routes: routes, table: table, locks: locks, mirror: state.NewLockTable(), mesh: m, log: log, muxes: newMuxPool(m),
		closed:    make(chan struct{}),
		delegIdle: defaultDelegIdle, maxDelegs: defaultMaxDelegs, returnTimeout: callTimeout, returnWait: routeWait, detachWait: defaultDetachWait,
	}
	r.hs = newHoldings(&r.next)
	r.cachingSide, r.nameSide = &cachingSide{r}, &nameSide{r}
	r.lockSide, r.durableSide = &lockSide{r}, &durableSide{r}
	r.dg = newDelegations(r)
	r.own = newOwner(r)
	r.notifier = newNotifier(routes, m, r.client, &r.next, &r.stats, log)
	return r
}

// Stats returns the router's counters.
func (r *Router) Stats() *Stats { return &r.stats }

// Observe sets what is told of every call to an owner over the
// exchange (Admit, Call and Wait, by operation): its method, how long it
// took and its error (metrics). Set before the router is used; fn must
// not block.
func (r *Router) Observe(fn func(method string, d time.Duration, err error)) { r.muxes.observe = fn }

// Close stops the router's timers; the mesh, closed by its owner, ends
// the exchanges with the peers.
func (r *Router) Close() {
	r.once.Do(func() { close(r.closed) })
	r.muxes.reset()
	r.dg.stop()
}

// target is where a file's state is: here, or at the owner behind mx.
type target struct {
	local bool
	mx    *mux
	route *peerv1.Route
}

// at finds the owner of key's shard, waiting (until ctx ends) while the
// shard has none.
func (r *Router) at(ctx context.Context, key state.FileKey) (target, error) {
	shard := ShardOf(key)
	for {
		changed := r.routes.Changed()
		rt, ok := r.routes.Owner(shard)
		if ok && rt.Node == r.routes.Self() {
			if r.routes.Owns(shard, rt.Revision) {
				return target{local: true}, nil
			}
		} else if ok {
			return target{mx: r.muxes.get(rt.Node, rt.Addr), route: &peerv1.Route{Shard: shard, Revision: rt.Revision}}, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return target{}, ErrNoOwner
		}
	}
}

// client returns a client of node's peer service; ErrGone (node/mesh)
// when the node is not live.
func (r *Router) client(node string) (peerv1.PeerServiceClient, error) {
	select {
	case <-r.closed:
		return nil, errRouterClosed // a close sent again after Close (closeLater)
	default:
	}
	cc, err := r.mesh.Node(node)
	if err != nil {
		return nil, err
	}
	return peerv1.NewPeerServiceClient(cc), nil
}

// ask asks the peer services of the nodes to (every other live node,
// when nil) at once: mesh.Broadcast.
func ask[T any](ctx context.Context, r *Router, to []string, timeout time.Duration,
	call func(context.Context, peerv1.PeerServiceClient) (T, error)) iter.Seq[mesh.Answer[T]] {
	return askVia(ctx, r.mesh, to, timeout, call)
}

// askVia is ask through the mesh m.
func askVia[T any](ctx context.Context, m *mesh.Mesh, to []string, timeout time.Duration,
	call func(context.Context, peerv1.PeerServiceClient) (T, error)) iter.Seq[mesh.Answer[T]] {
	return mesh.Broadcast(ctx, m, to, timeout, func(ctx context.Context, cc grpc.ClientConnInterface) (T, error) {
		return call(ctx, peerv1.NewPeerServiceClient(cc))
	})
}

// moved reports whether err is an owner's answer that the assignment
// the call was routed with is no longer its own, or that the owner cannot
// be reached: the call is routed again.
func moved(err error) bool {
	c := status.Code(err)
	return c == codes.FailedPrecondition || c == codes.Unavailable
}

// waitRoutes waits for the next change of the shard map, at most
// routeWait.
func (r *Router) waitRoutes(ctx context.Context, changed <-chan struct{}) {
	t := time.NewTimer(routeWait)
	defer t.Stop()
	select {
	case <-changed:
	case <-t.C:
	case <-ctx.Done():
	}
}

// call runs op at key's owner: locally through local, or as a Call.
func (r *Router) call(key state.FileKey, local func(), req *peerv1.CallRequest) (*peerv1.CallResponse, error) {
	return r.callWithin(callTimeout, key, local, req)
}

// callWithin is call, giving up after d.
func (r *Router) callWithin(d time.Duration, key state.FileKey, local func(), req *peerv1.CallRequest) (*peerv1.CallResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		changed := r.routes.Changed()
		t, err := r.at(ctx, key)
		if err != nil {
			return nil, err
		}
		if t.local {
			r.stats.Local.Add(1)
			local()
			return nil, nil
		}
		req.Route = t.route
		r.stats.call(opOf(req))
		resp, err := t.mx.call(ctx, req)
		if err == nil || !moved(err) || ctx.Err() != nil {
			return resp, err
		}
		r.waitRoutes(ctx, changed)
	}
}

// ref is o's OpenRef.
func (r *Router) ref(o *state.Open) *peerv1.OpenRef {
	return &peerv1.OpenRef{Node: r.routes.Self(), Epoch: r.routes.Epoch(), Id: o.Ref}
}

// ShardBusy reports whether the node holds opens of shard's files, or
// other nodes' opens of them as their owner: such a shard is not given up.
func (r *Router) ShardBusy(shard uint32) bool {
	if shard >= NumShards {
		return false
	}
	r.hs.mu.Lock()
	held := r.hs.perShard[shard]
	r.hs.mu.Unlock()
	return held > 0 || r.own.busy(shard)
}

// leaseFile is the file and stream a lease of a held open is on.
type leaseFile struct {
	key    state.FileKey
	stream string
}
