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

// Durable opens across nodes (state.DurableFiles). A client reconnects a
// durable open through whatever node it reaches; that node asks the
// others which holds it (TakeDurable). The holder checks the reconnect
// as it would its own and gives the open up (GiveUp): at the file's
// owner the open's entry, with its share modes, caching and byte-range
// locks, is re-keyed to the new node's open (HandoverOp), so nothing a
// conflicting client could slip through is ever released; the holder
// then forgets the open without closing it.

var _ state.DurableFiles = (*Router)(nil)

// DurableHolder is the holder side of TakeDurable: it finds the detached
// durable open q names among the node's opens, checks the reconnect, and
// hands it over to to (through GiveUp). It returns state.ErrNoDurable
// when the node does not hold the open, or the NTSTATUS error that
// refuses the reconnect (status reports its code).
type DurableHolder func(ctx context.Context, q state.DurableQuery, to state.HolderRef) (state.Handover, error)

// AppInstances closes the node's opens of an application instance
// (server.Server.CloseAppInstance) for CloseAppInstance.
type AppInstances func(id [16]byte, share, user string) int

// SetDurableHolder sets the holder side of TakeDurable and
// CloseAppInstance; call it before the peer service serves.
func (du *durableSide) SetDurableHolder(h DurableHolder, status func(error) (uint32, bool), apps AppInstances) {
	du.r.hs.mu.Lock()
	du.r.hs.durHolder, du.r.hs.durStatus, du.r.hs.appClose = h, status, apps
	du.r.hs.mu.Unlock()
}

// CloseAppInstance implements state.DurableFiles: every other live node
// is asked, and answers once it closed its opens of the instance.
func (du *durableSide) CloseAppInstance(ctx context.Context, id [16]byte, share, user string) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	req := &peerv1.CloseAppInstanceRequest{AppInstanceId: id[:], Share: share, User: user}
	for a := range ask(ctx, du.r, nil, 0, func(ctx context.Context, cli peerv1.PeerServiceClient) (*peerv1.CloseAppInstanceResponse, error) {
		du.r.stats.Delivers.Add(1)
		return cli.CloseAppInstance(ctx, req)
	}) {
		if a.Err != nil && !errors.Is(a.Err, mesh.ErrGone) {
			du.r.log.Warn("asking a node to close an application instance's opens", "peer", a.Node, "err", a.Err)
		}
	}
}

// CloseAppInstance implements peerv1.PeerServiceServer.
func (sv *Service) CloseAppInstance(ctx context.Context, req *peerv1.CloseAppInstanceRequest) (*peerv1.CloseAppInstanceResponse, error) {
	sv.r.hs.mu.Lock()
	apps := sv.r.hs.appClose
	sv.r.hs.mu.Unlock()
	if apps == nil {
		return &peerv1.CloseAppInstanceResponse{}, nil
	}
	n := apps(guid(req.AppInstanceId), req.Share, req.User)
	return &peerv1.CloseAppInstanceResponse{Closed: uint32(n)}, nil
}

// refusedError is a holder's refusal of a reconnect: an NTSTATUS.
type refusedError uint32

func (e refusedError) Error() string {
	return fmt.Sprintf("peer: reconnect refused (NTSTATUS %#08x)", uint32(e))
}

// Status is the NTSTATUS of the refusal.
func (e refusedError) Status() uint32 { return uint32(e) }

// TakeDurable implements state.DurableFiles: every other live node is
// asked in turn; the one holding the open hands it over.
func (du *durableSide) TakeDurable(ctx context.Context, q state.DurableQuery) (*state.Open, state.Handover, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	to := state.HolderRef{Node: du.r.routes.Self(), Epoch: du.r.routes.Epoch(), ID: du.r.next.Add(1)}
	req := durableQueryPB(q, to)
	found, silent := du.askHolders(ctx, req)
	if found != nil {
		if found.resp.Status != 0 {
			return nil, state.Handover{}, refusedError(found.resp.Status)
		}
		h := handoverOf(found.resp)
		o := du.adopt(to, keyOf(found.resp.Key), h)
		du.r.log.Debug("took a durable open over", "from", found.node, "file", h.Name, "ref", to.ID)
		return o, h, nil
	}
	if rec, ok := du.findOrphan(ctx, q, silent); ok { // orphans.go: its holder died
		return du.takeOrphan(ctx, rec, q, to)
	}
	return nil, state.Handover{}, state.ErrNoDurable
}

// takeAnswer is a node's answer to TakeDurable.
type takeAnswer struct {
	node string
	resp *peerv1.TakeDurableResponse
}

// askHolders asks every other live node at once for the open req names,
// each for at most holderTimeout (a stopped node must not hold the
// reconnect up for long), and returns the answer of the node that holds
// it, or nil and the nodes that did not answer.
func (du *durableSide) askHolders(ctx context.Context, req *peerv1.TakeDurableRequest) (*takeAnswer, map[string]bool) {
	silent := map[string]bool{}
	var found *takeAnswer
	for a := range ask(ctx, du.r, nil, holderTimeout, func(ctx context.Context, cli peerv1.PeerServiceClient) (*peerv1.TakeDurableResponse, error) {
		du.r.stats.Delivers.Add(1)
		return cli.TakeDurable(ctx, req)
	}) {
		switch {
		case a.Err != nil:
			du.r.log.Warn("asking a node for a durable open", "peer", a.Node, "err", a.Err)
			silent[a.Node] = true
		case a.Resp.Found:
			found = &takeAnswer{node: a.Node, resp: a.Resp}
		}
	}
	return found, silent
}

// holderTimeout bounds a TakeDurable call: the holder waits at most
// server's peer detach wait (1.5 s) for a dead connection's teardown.
const holderTimeout = 3 * time.Second

// adopt makes the open handed over to to this node's: the owner's own
// entry when this node owns the file (handed over by HandoverOp), else a
// new open with this node's copy of its caching and locks.
func (du *durableSide) adopt(to state.HolderRef, key state.FileKey, h state.Handover) *state.Open {
	du.r.hs.mu.Lock()
	o := du.r.hs.adopted[to.ID]
	if o != nil {
		delete(du.r.hs.adopted, to.ID)
		du.r.hs.perShard[ShardOf(o.Key)]-- // hold counts it again
	}
	du.r.hs.mu.Unlock()
	remote := o == nil
	if remote {
		o = &state.Open{Key: key, Name: h.Name, Stream: h.Stream, Access: h.Access, ShareAccess: h.ShareAccess}
	}
	o.Ref = to.ID
	du.r.hs.hold(o)
	du.r.hs.admitted(o)
	du.r.hs.mu.Lock()
	if remote {
		du.r.hs.mirrorCache[o.Ref] = heldState{caching: h.Caching}
	}
	if h.Caching.Lease {
		du.r.hs.leaseOf[o.Ref] = h.Caching.ID
		du.r.hs.leaseFiles[h.Caching.ID] = leaseFile{o.Key, o.Stream}
	}
	if len(h.Locks) > 0 {
		du.r.hs.locked[o.Ref] = true
		if remote {
			du.r.hs.hint[key] = true
		}
	}
	du.r.hs.mu.Unlock()
	if remote && len(h.Locks) > 0 {
		du.r.mirror.Lock(o, h.Locks)
	}
	return o
}

// GiveUp implements state.DurableFiles.
func (du *durableSide) GiveUp(o *state.Open, to state.HolderRef) (state.Caching, []state.Lock, error) {
	du.r.dg.convert(o) // deleg.go: the owner must know it
	var c state.Caching
	var locks []state.Lock
	resp, err := du.r.call(o.Key, func() { c, locks = du.handoverLocal(o, to) },
		&peerv1.CallRequest{Key: keyPB(o.Key), Op: &peerv1.CallRequest_Handover{Handover: &peerv1.HandoverOp{From: du.r.ref(o), To: refPB(to)}}})
	switch {
	case err != nil:
		return c, nil, err
	case resp != nil:
		if resp.Error != peerv1.Error_ERROR_UNSPECIFIED {
			return c, nil, codeErr(resp.Error, resp.Message)
		}
		c, locks = cachingOf(resp.GetHandover().GetCaching()), locksOf(resp.GetHandover().GetLocks())
		du.r.mirror.Release(o)
		du.r.hs.unhold(o)
	}
	du.r.hs.mu.Lock()
	delete(du.r.hs.locked, o.Ref)
	du.r.hs.mu.Unlock()
	return c, locks, nil
}

// handoverLocal re-keys o, an open this node holds of a file it owns, to
// another node's open to: it becomes a proxy with to's breaker.
func (du *durableSide) handoverLocal(o *state.Open, to state.HolderRef) (state.Caching, []state.Lock) {
	c, locks := du.r.table.CachingOf(o), du.r.locks.Locks(o)
	du.r.hs.unhold(o)
	du.r.own.proxyFor(o, refPB(to))
	return c, locks
}

// proxyFor makes o, in the table already, the proxy of another node's
// open to: breaks go to that node.
func (ow *owner) proxyFor(o *state.Open, to *peerv1.OpenRef) {
	k := refKey{to.Node, to.Epoch, to.Id}
	ow.mu.Lock()
	ow.addProxyLocked(k, o, true)
	ow.mu.Unlock()
	ow.table.Reattach(o, remoteBreaker{ow.r, to})
}

// handoverProxy re-keys the proxy o of another node's open to to: a third
// node's open (a new proxy key and breaker), or this node's own, waiting
// in adopted for TakeDurable.
func (ow *owner) handoverProxy(o *state.Open, to *peerv1.OpenRef) (*peerv1.CallResponse, error) {
	if to.GetNode() == "" || to.GetId() == 0 {
		return nil, status.Error(codes.InvalidArgument, "a handover needs the open that takes it")
	}
	resp := &peerv1.CallResponse{Result: &peerv1.CallResponse_Handover{Handover: &peerv1.HandoverResult{
		Caching: cachingPB(ow.table.CachingOf(o)), Locks: locksPB(ow.locks.Locks(o)),
	}}}
	ow.unorphan(o) // orphans.go
	if !ow.unproxy(o) {
		return nil, status.Error(codes.NotFound, "the open is gone")
	}
	if to.Node == ow.routes.Self() {
		ow.r.toAdopt(to.Id, o)
		return resp, nil
	}
	ow.proxyFor(o, to)
	return resp, nil
}

// toAdopt keeps o, an open of a file this node owns handed over to
// this node's open id, until TakeDurable adopts it.
func (du *durableSide) toAdopt(id uint64, o *state.Open) {
	du.r.hs.mu.Lock()
	du.r.hs.perShard[ShardOf(o.Key)]++ // until adopt holds it
	du.r.hs.adopted[id] = o
	du.r.hs.mu.Unlock()
	du.r.table.Reattach(o, pendingBreaker{})
	go du.expireAdopted(id, o)
}

// expireAdopted removes an open handed over to this node that its
// TakeDurable never took (its answer was lost): nobody can use it.
func (du *durableSide) expireAdopted(id uint64, o *state.Open) {
	t := time.NewTimer(2 * callTimeout)
	defer t.Stop()
	<-t.C
	du.r.hs.mu.Lock()
	left := du.r.hs.adopted[id] == o
	if left {
		delete(du.r.hs.adopted, id)
		du.r.hs.perShard[ShardOf(o.Key)]--
	}
	du.r.hs.mu.Unlock()
	if left {
		du.r.locks.Release(o)
		du.r.table.Remove(o)
	}
}

// pendingBreaker takes the breaks of an open between its handover and
// its adoption: they are acknowledged by the client once it has the open
// again, or time out.
type pendingBreaker struct{}

func (pendingBreaker) BreakOplock(uint8) error           { return nil }
func (pendingBreaker) BreakLease(state.LeaseBreak) error { return nil }

// TakeDurable implements peerv1.PeerServiceServer: the holder side.
func (sv *Service) TakeDurable(ctx context.Context, req *peerv1.TakeDurableRequest) (*peerv1.TakeDurableResponse, error) {
	r := sv.r
	r.hs.mu.Lock()
	h, st := r.hs.durHolder, r.hs.durStatus
	r.hs.mu.Unlock()
	if h == nil {
		return &peerv1.TakeDurableResponse{}, nil
	}
	q, to := durableQueryOf(req)
	ho, err := h(ctx, q, to)
	switch {
	case err == state.ErrNoDurable:
		return &peerv1.TakeDurableResponse{}, nil
	case err != nil:
		code, ok := st(err)
		if !ok {
			return nil, status.Error(codes.Internal, err.Error())
		}
		return &peerv1.TakeDurableResponse{Found: true, Status: code}, nil
	}
	return handoverPB(ho), nil
}

// HeldEntry returns o's entry at its file's owner as this node knows it
// (for the record of a durable open that another node takes over should
// this one die): the owner's caching when this node owns the file, its
// copy of it otherwise.
func (du *durableSide) HeldEntry(o *state.Open) state.HeldEntry {
	// A durable open must be the owner's to keep if this node dies
	// (orphans.go): before its record is written, it stops being a
	// delegated one (deleg.go).
	du.r.dg.convert(o)
	e := state.HeldEntry{Ref: o.Ref, Epoch: du.r.routes.Epoch(), Key: o.Key, Stream: o.Stream, Access: o.Access, ShareAccess: o.ShareAccess}
	du.r.hs.mu.Lock()
	hs, remote := du.r.hs.mirrorCache[o.Ref]
	du.r.hs.mu.Unlock()
	if remote {
		e.Caching = hs.caching
	} else {
		e.Caching = du.r.table.CachingOf(o)
	}
	return e
}

// Forget implements state.DurableFiles.
func (du *durableSide) Forget(o *state.Open) {
	du.r.mirror.Release(o)
	du.r.hs.unhold(o)
}

// durableSide is a node's half of durable opens moving between nodes
// (state.DurableFiles): it takes them over on a reconnect — from their
// holder, or from their file's owner when the holder died (orphans.go)
// — and gives its own up to another node's.
type durableSide struct {
	r *Router
}
