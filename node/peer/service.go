package peer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/smbcluster/smbcluster/node/mesh"
	"github.com/smbcluster/smbcluster/node/state"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// errNotOwner answers a call routed with an assignment this node does not
// hold (any more): the caller routes again.
func errNotOwner(rt *peerv1.Route) error {
	return status.Errorf(codes.FailedPrecondition, "not the owner of shard %d at revision %d", rt.GetShard(), rt.GetRevision())
}

// owns checks a request's route.
func (ow *owner) owns(rt *peerv1.Route, key state.FileKey) error {
	if rt == nil || rt.Shard != ShardOf(key) || !ow.routes.Owns(rt.Shard, rt.Revision) {
		return errNotOwner(rt)
	}
	return nil
}

// Service is a node's peer service: the owner side of the files whose
// shards the node owns, and the holder side of the opens it holds.
type Service struct {
	// Unsafe: a new RPC fails the build until it is served here.
	peerv1.UnsafePeerServiceServer
	r       *Router
	h       handlers // calls.go
	workers workers  // mux.go
}

// Service returns the router's peer service, to register on the node's
// gRPC server.
func (r *Router) Service() *Service {
	return &Service{r: r, h: handlers{r, r.own, r.table, r.locks}, workers: workers{work: make(chan func())}}
}

// remoteBreaker is a proxy open's Breaker: it hands the break to the node
// that holds the open.
type remoteBreaker struct {
	r   *Router
	ref *peerv1.OpenRef
}

func (b remoteBreaker) BreakOplock(to uint8) error {
	return b.r.deliverBreak(&peerv1.DeliverRequest{Ref: b.ref, Oplock: uint32(to)})
}

func (b remoteBreaker) BreakLease(l state.LeaseBreak) error {
	return b.r.deliverBreak(&peerv1.DeliverRequest{Ref: b.ref, Lease: leaseBreakPB(l)})
}

// deliverBreak hands a break to the node holding the open. Only a holder
// that is gone (errGone: the open closed, the node left) fails it, and the
// table then takes the break as acknowledged to none. A break that did
// not reach a node still a member — cut off from this one, stopped, its
// connection failing — is not lost: its client still caches under the
// lease and would write what it cached after the conflicting open went on
// (the robustness suite read a register's older value through another
// node while the writer's node was cut off from its peers). It is sent
// again in the background until it arrives, the node is gone or the
// table's break timeout has passed, and the table waits for the
// acknowledgment meanwhile, as for any break. A break that did arrive
// but whose answer was lost may so arrive twice: the client's second
// acknowledgment is refused, which costs nothing.
func (r *Router) deliverBreak(req *peerv1.DeliverRequest) error {
	err := r.deliver(req)
	if err == nil || errors.Is(err, errGone) {
		return err
	}
	r.log.Warn("a break did not reach the node holding the open: sending it again", "peer", req.Ref.Node, "err", err)
	go r.redeliver(req, time.Now().Add(r.table.BreakTimeout))
	return nil
}

// redeliver sends break req again, backing off, until it is delivered,
// its holder is gone, the router closes or until passes.
func (r *Router) redeliver(req *peerv1.DeliverRequest, until time.Time) {
	wait := 50 * time.Millisecond
	for tries := 2; ; tries++ {
		t := time.NewTimer(wait)
		select {
		case <-r.closed:
			t.Stop()
			return
		case <-t.C:
		}
		err := r.deliver(req)
		switch {
		case err == nil:
			r.log.Info("a break sent again reached the node holding the open", "peer", req.Ref.Node, "tries", tries)
			return
		case errors.Is(err, errGone):
			return // the node left: its opens, and the break, end with it
		case time.Now().After(until):
			r.log.Warn("a break did not reach the node holding the open within the break timeout", "peer", req.Ref.Node, "tries", tries, "err", err)
			return // the table's timer has ended the break
		}
		wait = min(2*wait, time.Second)
	}
}

// errGone is a break that reached no open: its holder closed it or is gone.
var errGone = errors.New("peer: the open is gone")

func (r *Router) deliver(req *peerv1.DeliverRequest) error {
	cli, err := r.client(req.Ref.Node)
	if errors.Is(err, mesh.ErrGone) {
		return errGone
	}
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), deliverTimeout)
	defer cancel()
	r.stats.Delivers.Add(1)
	resp, err := cli.Deliver(ctx, req)
	if err != nil {
		return err
	}
	if resp.Gone {
		return errGone
	}
	return nil
}

// proxy returns the owner's entry for another node's open, making it.
// existed reports an entry made earlier (the open is admitted already).
func (ow *owner) proxy(d *peerv1.OpenDesc) (o *state.Open, existed bool, err error) {
	ref := d.GetRef()
	if ref.GetNode() == "" || ref.GetId() == 0 {
		return nil, false, status.Error(codes.InvalidArgument, "an open needs a holder and an id")
	}
	k := refKey{ref.Node, ref.Epoch, ref.Id}
	ow.mu.Lock()
	defer ow.mu.Unlock()
	if o := ow.proxies[k]; o != nil {
		return o, true, nil
	}
	o = &state.Open{
		Key: keyOf(d.Key), Name: d.Name, Stream: d.Stream, Access: d.Access, ShareAccess: d.ShareAccess,
		Breaker: remoteBreaker{ow.r, ref}, Create: createIDOf(d.CreateId), Origin: ref.Node,
	}
	ow.addProxyLocked(k, o, false)
	return o, false, nil
}

// lookup finds the proxy of a ref, nil if there is none.
func (ow *owner) lookup(ref *peerv1.OpenRef) *state.Open {
	if ref == nil {
		return nil
	}
	ow.mu.Lock()
	defer ow.mu.Unlock()
	return ow.proxies[refKey{ref.Node, ref.Epoch, ref.Id}]
}

// unproxy forgets a proxy; it reports whether it was there, so that one
// caller alone removes it from the tables.
func (ow *owner) unproxy(o *state.Open) bool {
	ow.mu.Lock()
	defer ow.mu.Unlock()
	return ow.unproxyLocked(o)
}

// unproxyLocked is unproxy; the caller holds ow.mu.
func (ow *owner) unproxyLocked(o *state.Open) bool {
	k, ok := ow.proxyRef[o]
	if !ok {
		return false
	}
	delete(ow.proxyRef, o)
	delete(ow.proxies, k)
	delete(ow.in, o)
	ow.dg.forgetGrant(o.Key, k, o) // deleg.go: a grant's stand-in leaving
	ow.perShard[ShardOf(o.Key)]--
	if m := ow.byKey[o.Key]; m != nil {
		delete(m, k)
		if len(m) == 0 {
			delete(ow.byKey, o.Key)
			if p, ok := ow.pendings[o.Key]; ok && p.active == 0 {
				delete(ow.pendings, o.Key)
			} else if ok {
				p.sticky = false
				ow.pendings[o.Key] = p
			}
		}
	}
	return true
}

// closeProxy removes a proxy open from the tables, as its close would.
func (ow *owner) closeProxy(o *state.Open) (last, deletePending bool) {
	ok, done := ow.leaving(o)
	if !ok {
		return false, false
	}
	defer done()
	ow.locks.Release(o)
	return ow.table.Remove(o)
}

// Admit implements peerv1.PeerServiceServer: the owner side.
func (sv *Service) Admit(req *peerv1.AdmitRequest, stream peerv1.PeerService_AdmitServer) error {
	return sv.admit(req, stream)
}

// events is where the events of an Admit or a Wait go: its gRPC stream,
// or its requests's Envelopes on an Exchange (mux.go).
type events interface {
	Send(*peerv1.AdmitEvent) error
	Context() context.Context
}

func (sv *Service) admit(req *peerv1.AdmitRequest, stream events) error {
	r := sv.r
	key := keyOf(req.GetOpen().GetKey())
	if err := r.own.owns(req.Route, key); err != nil {
		return err
	}
	o, existed, err := r.own.proxy(req.Open)
	if err != nil {
		return err
	}
	if existed {
		if !r.own.isIn(o) { // an earlier attempt is still being admitted
			return status.Error(codes.FailedPrecondition, "the open is being admitted")
		}
		// A retry of an Admit whose answer was lost: the open is in.
		ev := admittedEvent(r.table.CachingOf(o), r.locks.HasLocks(key))
		ev.Delegated = req.Delegation != 0 && r.dg.granted(key, refKey{req.Open.Ref.Node, req.Open.Ref.Epoch, req.Delegation})
		return stream.Send(ev)
	}
	// Checked again now that the proxy counts toward the shard's state:
	// a shard given up in between (ShardMap.release checks Busy after it
	// stops answering) must not take the open.
	if err := r.own.owns(req.Route, key); err != nil {
		r.own.unproxy(o)
		return err
	}
	ctx := stream.Context()
	g, err := r.own.admitTable(ctx, o, state.Request{
		Oplock: uint8(req.Oplock), Lease: leaseReqOf(req.Lease), Overwrite: req.Overwrite,
		NoCaching: req.NoCaching, Directory: req.Directory, Replay: req.Replay,
	}, req.Open.Ref.Node, func() { stream.Send(&peerv1.AdmitEvent{Waiting: true}) })
	if err != nil {
		r.own.unproxy(o)
		code, msg := errCode(err)
		return stream.Send(&peerv1.AdmitEvent{Error: code, Message: msg})
	}
	// Checked again once admitted: an admission may wait long (for a
	// break, a recall, flushes), and an owner that lost the shard
	// meanwhile decided on what it no longer answers for — fenced, say,
	// it was refused the return of a delegation it recalled ("not the
	// owner"), let the delegation's stand-in go without its opens, and
	// admitted an open they conflict with. The holder routes again, to
	// the new owner, which rebuilt the shard from what the nodes hold.
	if err := r.own.owns(req.Route, key); err != nil {
		r.own.closeProxy(o)
		return err
	}
	r.own.setIn(o)
	if cachesReads(g) {
		r.own.announceRead(key, req.Open.Ref.Node)
	}
	ev := grantEvent(g)
	ev.LocksPresent = r.locks.HasLocks(key)
	ev.ReadPresent = cachesReads(g)
	ev.DeletePending = r.own.deletePendingFor(key)
	if req.Delegation != 0 && delegable(req) && g == (state.Grant{}) && !ev.LocksPresent && !ev.DeletePending {
		ev.Delegated = r.own.grantDeleg(key, req.Open, req.Delegation) // deleg.go
	}
	if ctx.Err() != nil || stream.Send(ev) != nil {
		r.own.closeProxy(o) // the holder gave up: it will not know of this open
		if ev.Delegated {
			r.dg.dropGrant(key, refKey{req.Open.Ref.Node, req.Open.Ref.Epoch, req.Delegation})
		}
		return status.FromContextError(ctx.Err()).Err()
	}
	return nil
}

// delegable reports whether an admitted open may earn its holder a
// delegation of its file (deleg.go).
func delegable(req *peerv1.AdmitRequest) bool {
	d := req.GetOpen()
	return req.Oplock == uint32(state.OplockNone) && req.Lease == nil && !req.Overwrite &&
		d.GetStream() == "" && len(d.GetCreateId()) == 0 && state.Delegable(d.GetAccess(), d.GetShareAccess())
}

// Deliver implements peerv1.PeerServiceServer: the holder side.
func (sv *Service) Deliver(ctx context.Context, req *peerv1.DeliverRequest) (*peerv1.DeliverResponse, error) {
	r := sv.r
	if req.Flush != "" {
		return &peerv1.DeliverResponse{Flushed: r.flushTo(ctx, req.Flush, req.DeletePending)}, nil
	}
	if k := req.LocksPresent; k != nil {
		r.hs.setHint(keyOf(k))
		return &peerv1.DeliverResponse{}, nil
	}
	if k := req.ReadPresent; k != nil {
		r.hs.readAgain(keyOf(k))
		return &peerv1.DeliverResponse{}, nil
	}
	if req.Recall != nil {
		if err := r.dg.recalled(ctx, req.Ref); err != nil { // deleg.go
			return nil, err
		}
		return &peerv1.DeliverResponse{}, nil
	}
	ref := req.GetRef()
	if ref.GetNode() != r.routes.Self() || ref.GetEpoch() != r.routes.Epoch() {
		return &peerv1.DeliverResponse{Gone: true}, nil
	}
	r.hs.mu.Lock()
	o := r.hs.held[ref.Id]
	var b state.Breaker
	if o != nil {
		b = o.Breaker
	}
	r.hs.mu.Unlock()
	if b == nil {
		return &peerv1.DeliverResponse{Gone: true}, nil
	}
	if l := req.Lease; l != nil {
		r.hs.noteCaching(o, func(h *heldState) {
			c := h.caching
			c.State = l.To
			h.broken(c, l.AckRequired)
		})
	} else {
		r.hs.noteCaching(o, func(h *heldState) {
			// A break of an exclusive or batch oplock (write caching)
			// is acknowledged; of level II it is not.
			h.broken(state.OplockCaching(uint8(req.Oplock)), h.caching.State&state.LeaseWrite != 0)
		})
	}
	var err error
	if l := req.Lease; l != nil {
		err = b.BreakLease(leaseBreakOf(l))
	} else {
		err = b.BreakOplock(uint8(req.Oplock))
	}
	return &peerv1.DeliverResponse{Gone: err != nil}, nil
}

// DropNode removes every open that node holds at an epoch other than
// keep (zero: all of them) from the files this node owns: their holder
// died or restarted, so its opens, locks and caching are gone.
func (r *Router) DropNode(node string, keep uint64) int {
	if keep == 0 {
		r.dropWatchesOf(node)
	}
	return r.own.dropNode(node, keep)
}

// dropNode is DropNode on the proxies.
func (ow *owner) dropNode(node string, keep uint64) int {
	durable := ow.orphansOf(node, keep) // orphans.go: kept until reconnected or timed out
	ow.mu.Lock()
	var gone, kept []*state.Open
	var keptRecs []Orphan
	for k, o := range ow.proxies {
		if k.node != node || k.epoch == keep {
			continue
		}
		if rec, ok := durable[k]; ok {
			kept, keptRecs = append(kept, o), append(keptRecs, rec)
		} else {
			gone = append(gone, o)
		}
	}
	ow.mu.Unlock()
	for i, o := range kept {
		ow.keepOrphan(o, keptRecs[i])
	}
	for _, o := range gone {
		ow.closeProxy(o)
	}
	if len(gone) > 0 {
		ow.log.Info("dropped the opens of a node that left", "peer", node, "opens", len(gone))
	}
	return len(gone)
}

func keyString(k state.FileKey) string { return fmt.Sprintf("%x:%x", k.Volume, k.FileID) }

// setIn marks a proxy admitted; isIn reports it.
func (ow *owner) setIn(o *state.Open) {
	ow.mu.Lock()
	if _, ok := ow.proxyRef[o]; ok {
		ow.in[o] = true
	}
	ow.mu.Unlock()
}

func (ow *owner) isIn(o *state.Open) bool {
	ow.mu.Lock()
	defer ow.mu.Unlock()
	return ow.in[o]
}

// cachesReads reports whether a grant lets its open cache reads.
func cachesReads(g state.Grant) bool {
	if g.Lease != nil {
		return g.Lease.State&state.LeaseRead != 0
	}
	return g.Oplock != state.OplockNone
}

// announceRead tells every node but skip that has key open that an open
// of it caches reads now, and waits for their answers, so that their
// writers break it (BreakRead).
func (ow *owner) announceRead(key state.FileKey, skip string) {
	ow.tellHolders(key, skip, &peerv1.DeliverRequest{ReadPresent: keyPB(key)}, "read caching")
}

// tellHolders sends notice to every node but skip that holds an open of
// key (as this node, its owner, knows from its proxies), and waits for
// their answers; what names the notice in the log.
func (ow *owner) tellHolders(key state.FileKey, skip string, notice *peerv1.DeliverRequest, what string) (flushed bool) {
	ow.mu.Lock()
	nodes := map[string]bool{}
	for ref := range ow.byKey[key] {
		if ref.node != skip {
			nodes[ref.node] = true
		}
	}
	ow.mu.Unlock()
	return ow.tellNodes(nodes, notice, what)
}

// tellNodes sends notice to nodes and waits for their answers; it
// reports whether one flushed closes on their way (closing.go).
func (ow *owner) tellNodes(nodes map[string]bool, notice *peerv1.DeliverRequest, what string) (flushed bool) {
	if len(nodes) == 0 {
		return false
	}
	to := make([]string, 0, len(nodes))
	for node := range nodes {
		to = append(to, node)
	}
	ctx, cancel := context.WithTimeout(context.Background(), deliverTimeout)
	defer cancel()
	for a := range ask(ctx, ow.r, to, 0, func(ctx context.Context, cli peerv1.PeerServiceClient) (*peerv1.DeliverResponse, error) {
		ow.stats.Delivers.Add(1)
		return cli.Deliver(ctx, notice)
	}) {
		switch {
		case errors.Is(a.Err, mesh.ErrGone):
			// gone: its opens are dropped with it
		case a.Err != nil:
			ow.log.Warn("telling a node of "+what, "peer", a.Node, "err", a.Err)
		default:
			flushed = flushed || a.Resp.Flushed
		}
	}
	return flushed
}
