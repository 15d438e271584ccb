package server

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/state"
)

// Durable opens across nodes: a reconnect (DHnC, DH2C) that names an
// open this node does not hold asks the share's backend to take it over
// from the node that does (DurableAdopter, through state.DurableFiles);
// that node's server gives it up (SurrenderDurable) after the checks it
// would make of a reconnect of its own, and forgets it without running
// close semantics: the open's share modes, caching and byte-range locks
// move to the new node at the file's owner.

// DurableAdopter is implemented by backends whose durable opens other
// nodes may hold.
type DurableAdopter interface {
	// AdoptDurable takes over the detached durable open q names from the
	// node holding it, for reconnect r, and returns its handle, its
	// record and the CREATE response. It returns state.ErrNoDurable if
	// no node holds it.
	AdoptDurable(r *Request, req *smb2.CreateRequest, q state.DurableQuery) (Handle, state.Handover, *smb2.CreateResponse, error)
}

// AppInstanceCloser is implemented by backends whose opens other nodes
// may hold: CloseAppInstance closes the opens of application instance id
// that r's user holds on the share through other nodes ([MS-SMB2]
// 3.3.5.9.13), before r's open is admitted.
type AppInstanceCloser interface {
	CloseAppInstance(r *Request, id [16]byte)
}

// DurableGiver is implemented by durable handles that can be handed over
// to another node.
type DurableGiver interface {
	// GiveUp checks a reconnect of the detached open through another
	// node (lease key, client and name, as Reattach does), hands its
	// state over to that node's open to, and closes its file without
	// close semantics. It fills in all of the Handover but Rec.
	GiveUp(q state.DurableQuery, to state.HolderRef) (state.Handover, error)
}

// durableQuery is what a reconnect asks the cluster for.
func durableQuery(r *Request, req *smb2.CreateRequest, d *durableCtx) state.DurableQuery {
	q := state.DurableQuery{
		FileID: d.fid.Persistent, V2: d.rc2, CreateGUID: d.createGUID, ClientGUID: r.conn.clientGUID,
		User: r.Session.User, Domain: r.Session.Domain, Share: r.Tree.Share.Name, Name: req.Name,
	}
	if k := req.Known(); k.Valid(smb2.CtxRequestLease) {
		q.LeaseKey, q.HasLease = k.Lease.Key, true
	}
	return q
}

// adoptDurable serves a reconnect of an open another node holds.
func (c *conn) adoptDurable(r *Request, req *smb2.CreateRequest, d *durableCtx) (Response, error) {
	a, ok := r.Tree.Share.Backend.(DurableAdopter)
	if !ok {
		return nil, smb2.StatusObjectNameNotFound
	}
	s := c.srv
	if err := s.admitOpen(r.Session); err != nil { // limits.go
		return nil, err
	}
	defer s.unreserveOpen(r.Session)
	o := s.newOpen(r.Tree, c, req.Name, 0)
	o.chanSeq = r.Header.ChannelSequence()
	r.Open = o
	h, ho, resp, err := a.AdoptDurable(r, req, durableQuery(r, req, d))
	if err != nil {
		r.Open = nil
		if errors.Is(err, state.ErrNoDurable) {
			return nil, smb2.StatusObjectNameNotFound
		}
		return nil, err
	}
	o.Access = ho.Access
	rec := ho.Rec
	rec.Name, rec.ClientGUID, rec.DisconnectedAt = o.Name, c.clientGUID, time.Time{} // o.Name: the reconnect's, as on the wire
	s.mu.Lock()
	if _, taken := s.opens[d.fid.Persistent]; !taken && d.fid.Persistent != 0 {
		o.ID = d.fid.Persistent // the FileId the client knows, if free here
	}
	rec.FileID = o.ID
	o.dur = &durable{rec: rec}
	s.DurableStore().Put(rec)
	s.mu.Unlock()
	s.addOpen(o, h)
	s.durableChanged()
	resp.FileID = smb2.FileID{Persistent: o.ID, Volatile: o.ID}
	s.log.Debug("durable open taken over from another node", "file", o.Name, "id", o.ID, "session", r.Session.ID)
	return resp, nil
}

// SurrenderDurable gives up the detached durable open q names to another
// node's open to, for a reconnect through that node ([MS-SMB2] 3.3.5.9.7,
// 3.3.5.9.12, checked as claimDetached and Reattach check a reconnect
// here). It returns state.ErrNoDurable if this node does not hold the
// open, or the NTSTATUS that refuses the reconnect.
func (s *Server) SurrenderDurable(ctx context.Context, q state.DurableQuery, to state.HolderRef) (state.Handover, error) {
	o, err := s.claimForPeer(ctx, q)
	if err != nil {
		return state.Handover{}, err
	}
	g, ok := o.Handle.(DurableGiver)
	if !ok {
		s.unclaim(o)
		return state.Handover{}, smb2.StatusObjectNameNotFound
	}
	h, err := g.GiveUp(q, to)
	if err != nil {
		s.unclaim(o)
		return state.Handover{}, err
	}
	s.mu.Lock()
	h.Rec = o.dur.rec
	s.mu.Unlock()
	s.removeOpen(o) // forgets the record; the handle closed its file in GiveUp
	s.log.Debug("durable open handed over to another node", "file", o.Name, "id", o.ID, "to", to.Node)
	return h, nil
}

// peerDetachWait bounds the wait of a reconnect through another node for
// the teardown of the open's dead connection here: the other node waits
// for this node's answer a little longer (peer holderTimeout).
const peerDetachWait = 1500 * time.Millisecond

// claimForPeer finds and claims the detached open a reconnect through
// another node names, waiting (as a reconnect here would) for the
// teardown of a connection that is gone.
func (s *Server) claimForPeer(ctx context.Context, q state.DurableQuery) (*Open, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.opens[q.FileID]
	if o == nil || o.dur == nil || o.gen < s.fenceGen.Load() {
		return nil, state.ErrNoDurable
	}
	if q.V2 && o.dur.rec.CreateGUID != q.CreateGUID || o.Tree.Share.Name != q.Share {
		return nil, state.ErrNoDurable
	}
	deadline := time.Now().Add(peerDetachWait)
	for range maxDetachWaits {
		if o.dur == nil || o.dur.detached || o.dur.gone || !s.waitDetach(ctx, nil, o, deadline) {
			break
		}
	}
	dur := o.dur
	if dur == nil || !dur.detached || dur.busy || dur.gone {
		return nil, smb2.StatusObjectNameNotFound // still connected, or going
	}
	if !strings.EqualFold(dur.rec.User, q.User) || !strings.EqualFold(dur.rec.Domain, q.Domain) {
		return nil, smb2.StatusAccessDenied // not the DurableOwner
	}
	dur.busy = true
	return o, nil
}

// DurableAbandoner is implemented by durable handles that a fenced node
// can drop without closing them at their file's owner.
type DurableAbandoner interface {
	// Abandon closes the handle's file and forgets its state on this
	// node without close semantics: the cluster keeps the open for its
	// client to reconnect through another node.
	Abandon()
}

// AbandonDurable gives up every durable open made so far, as a node does
// when it is fenced (its cluster lease lost): other nodes take them over
// from their records (node/peer orphans.go) once its shards and opens are
// declared gone, and a resumed node must not serve them, nor write for
// them, any more. Detached opens are dropped now, attached ones when
// their connection's teardown detaches them (the caller ends the
// connections).
func (s *Server) AbandonDurable() {
	s.fenceGen.Add(1)
	s.mu.Lock()
	var opens []*Open
	for _, o := range s.opens {
		if o.dur != nil && o.dur.detached {
			opens = append(opens, o)
		}
	}
	s.mu.Unlock()
	for _, o := range opens {
		s.abandon(o)
	}
}

// abandon drops durable open o without close semantics; it reports false
// for an open that is not durable (it is closed as usual).
func (s *Server) abandon(o *Open) bool {
	a, ok := o.Handle.(DurableAbandoner)
	s.mu.Lock()
	d := o.dur
	if !ok || d == nil || d.busy || d.gone {
		s.mu.Unlock()
		return false
	}
	d.busy = true
	s.mu.Unlock()
	if s.removeOpen(o) {
		o.drain()
		a.Abandon()
		s.log.Info("durable open abandoned: the node was fenced", "file", o.Name, "id", o.ID)
	}
	return true
}

// RefusalStatus is the NTSTATUS with which SurrenderDurable refused a
// reconnect, as it crosses to the node the client reconnected through.
func RefusalStatus(err error) (uint32, bool) {
	var st smb2.Status
	if errors.As(err, &st) {
		return uint32(st), true
	}
	return 0, false
}
