package peer

import (
	"context"
	"sync"
	"time"

	"github.com/smbcluster/smbcluster/node/state"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Admission delegation. An open of a remote file costs an Admit at its
// owner, a round trip through both nodes' gRPC stacks. When the owner
// admits a plain open from another node — no oplock or lease asked or
// granted, no delete access, not a stream, no overwrite, an access its
// own share mode admits twice (state.Delegable) — and the file has no
// caching, no byte-range locks and no delete pending, it may grant the
// holder node a delegation of the file with the open's access A and
// share S. The owner keeps the delegation as an open of the holder with
// access A and share S (a proxy with the delegation's id for its ref, in
// the table like any open), so every other admission and check meets it.
//
// A directory is delegated as a file is: its plain opens (a client's
// look at the share's root or a folder's attributes, the most frequent
// open there is) need the owner for nothing the delegation does not
// answer, and what a directory's owner decides for other opens — a
// rename, a delete made pending, an open below it found for a rename of
// a folder above — recalls it first.
//
// The holder then admits, by itself, every plain open of the file whose
// access is within A and whose share mode admits at least S: each is
// compatible with whatever the owner found compatible with the
// delegation. Their closes are local too. The holder returns the
// delegation (ReturnDelegationOp, on its Exchange stream to the owner) after
// delegIdle without opens under it, when it holds maxDelegs, when the
// shard assignment it was granted under changed, or when one of its
// delegated opens needs the owner (a lock, delete on close, a rename,
// anything but a close and the questions whose answer it knows); the
// return names the delegated opens it still holds, which become its
// ordinary opens at the owner (proxies) before the delegation leaves
// the table. Until the return is answered those opens' operations wait
// (converting), so none reaches the owner before its proxy.
//
// The owner recalls the delegations of a file (Deliver recall: the
// holder returns it and then answers) before anything whose outcome they
// could change: an admission refused for a sharing violation or granted
// less caching than asked, a negative rename, access, sole-open or
// stream check, an open below a directory, a delete made pending, a
// rename, the first byte-range lock. During such an operation no
// delegation of the file is granted (noGrant, recallSeq), and none is
// granted while the file has caching, locks or a delete pending. Caching
// granted later beside a delegation is what an open beside it allows (no
// write caching, no exclusive or batch oplock): an open that conflicts
// with nothing breaks none of it, and a write through a delegated open
// breaks read caching as any write does (BreakRead). So a delegated open
// never misses a break, and READ and WRITE through it need no lock check
// (the holder's lock hint does not apply to it).
//
// A new owner rebuilds a shard from the opens the live nodes hold
// (Held), which include the delegated ones; a holder asked for them
// drops its delegations of those shards first. A holder that dies takes
// its delegations with its opens (DropNode). The holder registers a
// delegation it asks for before the Admit goes (pending), so a recall
// that overtakes the Admit's answer waits for it.

// Delegation tunables.
const (
	defaultDelegIdle = 3 * time.Second // a delegation without opens is returned after this
	defaultMaxDelegs = 1024            // delegations a node holds at most
)

// delegState is where a holder's delegation is in its life.
type delegState int

const (
	delegPending   delegState = iota // asked for with an Admit not answered yet
	delegActive                      // granted: covered plain opens are admitted here
	delegReturning                   // being returned: its former opens wait (converting)
)

// deleg is a holder's delegation of one remote file.
type deleg struct {
	id       uint64
	key      state.FileKey
	st       delegState
	recalled bool // a recall came while pending: returned once granted
	access   uint32
	share    uint32
	route    *peerv1.Route // the assignment it was granted under
	epoch    uint64        // this node's epoch when it asked: the delegation goes with it
	mx       *mux          // to the owner that granted it
	opens    map[uint64]*state.Open
	back     []*state.Open // the opens being returned (delegReturning)
	used     time.Time
	timer    *time.Timer
	done     chan struct{} // closed when it ends
}

// grant is an owner's delegation to another node: the open standing for
// it in the table.
type grant struct {
	o         *state.Open
	recalling chan struct{} // a recall on its way; closed when it ends
}

// delegations is a node's admission delegation, both sides: the
// delegations it holds of remote files and those it granted of files it
// owns. Its mu guards its maps and the fields of every deleg and grant
// in them. Lock order: holdings.mu and owner.mu before mu, never the
// reverse — the Router admits or closes an open under a delegation in one
// step with its own state (the Held listing meets both or neither), and
// the owner puts a grant's stand-in among its proxies, or takes it out,
// in one step with the grant (unproxy); a method here holds mu only over
// its own state, and takes another lock, or calls another node, only
// after letting mu go.
type delegations struct {
	r *Router // the calls to the other nodes, routes and counters

	mu sync.Mutex
	// Holder side:
	byKey      map[state.FileKey]*deleg // this node's delegations of remote files
	byID       map[uint64]*deleg        // the same, by id
	delegated  map[uint64]*deleg        // held opens admitted under a delegation, by Ref
	converting map[uint64]chan struct{} // held opens whose delegation is being returned
	stopped    bool                     // the router closed: no idle timer starts
	// Owner side:
	grants     map[state.FileKey]map[refKey]*grant // delegations of files owned here
	recallSeq  uint64                              // counts operations that recall (a grant in between is undone)
	noGrant    map[state.FileKey]int               // operations under way that want no new delegation of a file
	noGrantAll int                                 // the same, of any file
}

// newDelegations returns r's delegations, none yet.
func newDelegations(r *Router) *delegations {
	return &delegations{
		r: r, byKey: map[state.FileKey]*deleg{}, byID: map[uint64]*deleg{}, delegated: map[uint64]*deleg{},
		converting: map[uint64]chan struct{}{}, grants: map[state.FileKey]map[refKey]*grant{}, noGrant: map[state.FileKey]int{},
	}
}

// plainOpen reports whether an open may be admitted under a delegation
// (or earn one). An open kept from caching (NoCaching: a folder's, on a
// connection without directory leasing) asks for none and is plain too.
func plainOpen(o *state.Open, req state.Request) bool {
	return req.Oplock == state.OplockNone && req.Lease == nil && !req.Overwrite &&
		o.Stream == "" && o.Create == (state.CreateID{}) && state.Delegable(o.Access, o.ShareAccess)
}

// admitDelegated admits o under this node's delegation of its file, when
// one covers it; t is the file's owner now.
func (r *Router) admitDelegated(o *state.Open, req state.Request, t target) bool {
	if !plainOpen(o, req) {
		return false
	}
	var ok bool
	var stale *deleg
	epoch := r.routes.Epoch()
	r.hs.mu.Lock()
	if r.hs.held[o.Ref] == o {
		ok, stale = r.dg.admit(o, t.route.GetRevision(), epoch)
	}
	if ok {
		r.hs.mirrorCache[o.Ref] = heldState{dir: req.Directory}
		r.hs.done[o.Ref] = true // in one step with admit: a Held listing meets it admitted, or its delegation still here
	}
	r.hs.mu.Unlock()
	if stale != nil {
		go r.dg.finishReturn(stale)
	}
	if ok {
		r.stats.Delegated.Add(1)
	}
	return ok
}

// admit puts o under the delegation of its file when one covers it,
// granted under the assignment of revision rev; one granted under an
// earlier assignment begins its return instead (stale: the caller
// finishes it). One this node asked for at an earlier epoch of its own
// is forgotten: the node fenced since (its lease lost, a pause past it),
// every other node dropped the opens of that epoch — the delegation's
// stand-in with them (DropNode) — and the owner may have granted write
// caching, or an exclusive open, that the delegation's opens would not
// meet (robustness suite, seed 31: a read admitted through a node that
// came back from a pause under its old delegation missed a write cached
// under a lease). An epoch not known at either time (0: the node's own
// record missing from its view of the cluster for a moment, as while its
// watch resynchronises) decides nothing. The caller holds holdings.mu.
func (dg *delegations) admit(o *state.Open, rev int64, epoch uint64) (ok bool, stale *deleg) {
	dg.mu.Lock()
	defer dg.mu.Unlock()
	d := dg.byKey[o.Key]
	if d != nil && d.st == delegActive && epoch != 0 && d.epoch != 0 && d.epoch != epoch {
		dg.forgetStale(d)
		return false, nil
	}
	if d == nil || d.st != delegActive || o.Access&^d.access != 0 || d.share&^o.ShareAccess != 0 {
		return false, nil
	}
	if d.route.GetRevision() != rev {
		dg.beginReturn(d) // granted under an assignment that ended
		return false, d
	}
	d.opens[o.Ref] = o
	d.used = time.Now()
	dg.delegated[o.Ref] = d
	return true, nil
}

// ask registers a pending delegation of o's file for its Admit to ask
// for, and returns its id (0: none is asked for).
func (dg *delegations) ask(o *state.Open, req state.Request) uint64 {
	if !plainOpen(o, req) {
		return 0
	}
	epoch := dg.r.routes.Epoch() // before the Admit names it: a later one only makes the grant look stale
	dg.mu.Lock()
	defer dg.mu.Unlock()
	if dg.byKey[o.Key] != nil {
		return 0
	}
	if len(dg.byKey) >= dg.r.maxDelegs {
		var lru *deleg
		for _, d := range dg.byKey {
			if d.st == delegActive && len(d.opens) == 0 && (lru == nil || d.used.Before(lru.used)) {
				lru = d
			}
		}
		if lru != nil {
			dg.beginReturn(lru)
			go dg.finishReturn(lru)
		}
		return 0
	}
	d := &deleg{id: dg.r.next.Add(1), key: o.Key, epoch: epoch, opens: map[uint64]*state.Open{}, done: make(chan struct{})}
	dg.byKey[o.Key] = d
	dg.byID[d.id] = d
	return d.id
}

// answered settles the pending delegation id after its Admit at t:
// granted (ev.Delegated) it becomes active; otherwise it ends — after
// telling the owner, when the answer was lost, that a grant it may have
// made is not taken.
func (dg *delegations) answered(id uint64, o *state.Open, t target, ev *peerv1.AdmitEvent, err error) {
	if id == 0 {
		return
	}
	dg.mu.Lock()
	d := dg.byID[id]
	if d == nil || d.st != delegPending { // dropped meanwhile (Held): its owner is gone
		dg.mu.Unlock()
		return
	}
	if err != nil || !ev.GetDelegated() || ev.GetError() != peerv1.Error_ERROR_UNSPECIFIED {
		dg.end(d)
		dg.mu.Unlock()
		switch {
		case err == nil || status.Code(err) == codes.FailedPrecondition: // nothing granted
		default: // the answer was lost: the grant, if any, is undone on the side
			go dg.returnAt(t, o.Key, id, nil)
		}
		return
	}
	d.st, d.access, d.share, d.route, d.mx, d.used = delegActive, o.Access, o.ShareAccess, t.route, t.mx, time.Now()
	recalled := d.recalled
	if recalled {
		dg.beginReturn(d)
	} else if !dg.stopped {
		d.timer = time.AfterFunc(dg.r.delegIdle, func() { dg.idle(d) })
	}
	dg.mu.Unlock()
	if recalled {
		go dg.finishReturn(d)
	}
}

// idle returns d if it had no opens for delegIdle, or checks again later.
func (dg *delegations) idle(d *deleg) {
	dg.mu.Lock()
	if d.st != delegActive || dg.byID[d.id] != d { // returned, or dropped (Held)
		dg.mu.Unlock()
		return
	}
	if wait := dg.r.delegIdle - time.Since(d.used); len(d.opens) > 0 || wait > 0 {
		if wait <= 0 {
			wait = dg.r.delegIdle
		}
		d.timer.Reset(wait)
		dg.mu.Unlock()
		return
	}
	dg.beginReturn(d)
	dg.mu.Unlock()
	dg.finishReturn(d)
}

// beginReturn stops admitting under d and moves its opens to the ones
// being returned. The caller holds dg.mu, and then calls finishReturn.
func (dg *delegations) beginReturn(d *deleg) {
	d.st = delegReturning
	if d.timer != nil {
		d.timer.Stop()
	}
	for ref, o := range d.opens {
		delete(dg.delegated, ref)
		dg.converting[ref] = d.done
		d.back = append(d.back, o)
	}
	d.opens = nil
}

// finishReturn returns d to its owner with the opens it had, which
// become ordinary opens there, and ends it. It reports whether the owner
// took them (or no longer owns the file); false only once the router
// closed. A returned open that closed meanwhile — its close waited for
// the return at most callTimeout, then went to the owner, which may not
// have had it yet — is closed at the owner again, so that no proxy of
// it stays there.
func (dg *delegations) finishReturn(d *deleg) bool {
	t := target{mx: d.mx, route: d.route}
	ok := dg.returnAt(t, d.key, d.id, d.back)
	dg.mu.Lock()
	for _, o := range d.back {
		if dg.converting[o.Ref] == d.done {
			delete(dg.converting, o.Ref)
		}
	}
	dg.end(d)
	dg.mu.Unlock()
	dg.r.stats.Returned.Add(1)
	if ok {
		for _, o := range d.back {
			if !dg.r.hs.has(o) {
				go dg.r.forget(o, t)
			}
		}
	}
	return ok
}

// returnAt sends a ReturnDelegationOp of delegation id of key with those
// of opens this node still holds to the owner at t. An owner that no
// longer owns the shard at t's assignment has no delegation to take back
// (the new owner learns the opens from Held). One that cannot be reached
// is tried again, backing off, for as long as the assignment holds: until
// the owner has the opens, its delegation's stand-in must stay in its
// table for them (a recall that did not get its answer leaves it
// standing), and giving up would let the stand-in go without them. It
// reports whether the owner took the delegation back (or no longer owns
// the shard at that assignment); false only once the router closed.
func (dg *delegations) returnAt(t target, key state.FileKey, id uint64, opens []*state.Open) bool {
	r := dg.r
	wait := r.returnWait
	for try := 1; ; try++ {
		op := &peerv1.ReturnDelegationOp{Delegation: &peerv1.OpenRef{Node: r.routes.Self(), Epoch: r.routes.Epoch(), Id: id}}
		for _, o := range opens {
			if r.hs.has(o) { // one closed meanwhile is not returned (finishReturn)
				op.Opens = append(op.Opens, openDesc(o, r.ref(o)))
			}
		}
		req := &peerv1.CallRequest{Route: t.route, Key: keyPB(key), Op: &peerv1.CallRequest_ReturnDelegation{ReturnDelegation: op}}
		changed := r.routes.Changed()
		ctx, cancel := context.WithTimeout(context.Background(), r.returnTimeout)
		r.stats.call(OpReturn)
		_, err := t.mx.call(ctx, req)
		cancel()
		if err == nil || status.Code(err) == codes.FailedPrecondition {
			return true
		}
		rt, ok := r.routes.Owner(t.route.GetShard())
		if !ok || rt.Revision != t.route.GetRevision() {
			return true // the owner changed: the new one learns the opens from Held
		}
		if try == 5 {
			r.log.Warn("returning a delegation: its owner does not answer; trying again while it owns the file", "file", keyString(key), "err", err)
		}
		tm := time.NewTimer(wait)
		select {
		case <-r.closed:
			tm.Stop()
			return false
		case <-changed:
		case <-tm.C:
		}
		tm.Stop()
		wait = min(2*wait, 5*time.Second)
	}
}

// forgetStale forgets d, asked for at an earlier epoch of this node's,
// without returning it (its owner dropped that epoch's opens); its opens,
// of that epoch too, are no longer admitted under it. The caller holds
// dg.mu.
func (dg *delegations) forgetStale(d *deleg) {
	for ref := range d.opens {
		delete(dg.delegated, ref)
	}
	d.opens = nil
	dg.end(d)
	dg.r.log.Info("forgot a delegation of an earlier epoch of this node's", "file", keyString(d.key), "epoch", d.epoch)
}

// end forgets d. The caller holds dg.mu.
func (dg *delegations) end(d *deleg) {
	if dg.byKey[d.key] == d {
		delete(dg.byKey, d.key)
	}
	if dg.byID[d.id] == d {
		delete(dg.byID, d.id)
		close(d.done)
	}
	if d.timer != nil {
		d.timer.Stop()
	}
}

// stop stops the idle timers: no delegation is returned after the node
// stopped (Close).
func (dg *delegations) stop() {
	dg.mu.Lock()
	defer dg.mu.Unlock()
	dg.stopped = true
	for _, d := range dg.byKey {
		if d.timer != nil {
			d.timer.Stop()
		}
	}
}

// recalled is the holder's side of a recall: d is returned (or, pending,
// returned once its grant arrives) before the owner is answered. An error
// (the recall's deadline passed first; the return goes on) says the owner
// may not have its opens: it keeps the delegation standing.
func (dg *delegations) recalled(ctx context.Context, ref *peerv1.OpenRef) error {
	if ref.GetNode() != dg.r.routes.Self() || ref.GetEpoch() != dg.r.routes.Epoch() {
		return nil
	}
	dg.mu.Lock()
	d := dg.byID[ref.GetId()]
	if d == nil {
		dg.mu.Unlock()
		return nil
	}
	start := false
	switch d.st {
	case delegPending:
		d.recalled = true
	case delegActive:
		dg.beginReturn(d)
		start = true
	}
	dg.mu.Unlock()
	if start {
		go dg.finishReturn(d)
	}
	select {
	case <-d.done:
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
}

// convert makes o, when it is a delegated open, an ordinary open at its
// owner (by returning its delegation), before an operation on it that
// needs the owner; while it is being converted, it waits — at most
// callTimeout: the operation then goes to the owner, which answers as it
// can (it may not know the open yet) or cannot be reached either.
func (dg *delegations) convert(o *state.Open) {
	dg.mu.Lock()
	d := dg.delegated[o.Ref]
	var wait chan struct{}
	if d != nil && d.opens[o.Ref] == o {
		dg.beginReturn(d)
		wait = d.done
		go dg.finishReturn(d)
	} else {
		wait = dg.converting[o.Ref]
	}
	dg.mu.Unlock()
	if wait == nil {
		return
	}
	t := time.NewTimer(callTimeout)
	defer t.Stop()
	select {
	case <-wait:
	case <-t.C:
	}
}

// isDelegated reports whether o is an open admitted under a delegation
// this node still holds (holds); the caller may hold holdings.mu (CheckIO).
func (r *Router) isDelegated(o *state.Open) bool { return r.dg.holds(o) }

// holds reports whether o is an open admitted under a delegation this
// node still holds.
func (dg *delegations) holds(o *state.Open) bool {
	dg.mu.Lock()
	defer dg.mu.Unlock()
	d := dg.delegated[o.Ref]
	return d != nil && d.opens[o.Ref] == o
}

// closeDelegated closes o here when it is a delegated open (and reports
// it); an open being converted waits until it is an ordinary one.
func (r *Router) closeDelegated(o *state.Open) bool {
	r.hs.mu.Lock()
	ok, wait := r.dg.closeOpen(o)
	if ok {
		r.hs.unholdLocked(o) // in one step with closeOpen: a Held listing meets it open, or not at all
	}
	r.hs.mu.Unlock()
	if wait != nil {
		// The return may go on for a while when the owner cannot be
		// reached (returnAt tries again): the close waits for it at
		// most callTimeout, then goes to the owner as any close
		// (bounded by callTimeout too).
		t := time.NewTimer(callTimeout)
		defer t.Stop()
		select {
		case <-wait:
		case <-t.C:
		}
	}
	return ok
}

// closeOpen takes o from under its delegation when it is a delegated
// open (ok); otherwise it returns what an open being converted waits
// for. The caller holds holdings.mu.
func (dg *delegations) closeOpen(o *state.Open) (ok bool, converted chan struct{}) {
	dg.mu.Lock()
	defer dg.mu.Unlock()
	d := dg.delegated[o.Ref]
	if d == nil || d.opens[o.Ref] != o {
		return false, dg.converting[o.Ref]
	}
	delete(d.opens, o.Ref)
	delete(dg.delegated, o.Ref)
	d.used = time.Now()
	return true, nil
}

// drop ends this node's delegations of files in shards, whose owner is
// being replaced (Held): their opens stay held, as ordinary opens the
// new owner rebuilds.
func (dg *delegations) drop(shards []uint32) {
	in := map[uint32]bool{}
	for _, s := range shards {
		in[s] = true
	}
	dg.mu.Lock()
	defer dg.mu.Unlock()
	for _, d := range dg.byKey {
		if !in[ShardOf(d.key)] || d.st == delegReturning {
			continue
		}
		for ref := range d.opens {
			delete(dg.delegated, ref)
		}
		d.opens = nil
		dg.end(d)
	}
}

// Owner side.

// grantDeleg grants the holder of the open d describes delegation id of
// key, when nothing stands against it, and reports whether it did. The
// open was just admitted (plain, nothing granted): every open of the
// file is compatible with its access and share, so the delegation's
// stand-in with them is too.
func (ow *owner) grantDeleg(key state.FileKey, desc *peerv1.OpenDesc, id uint64) bool {
	ref := desc.GetRef()
	k := refKey{ref.GetNode(), ref.GetEpoch(), id}
	seq, ok := ow.dg.mayGrant(key, k.node)
	if !ok {
		return false
	}
	o := &state.Open{Key: key, Name: desc.Name, Access: desc.Access, ShareAccess: desc.ShareAccess,
		Breaker: remoteBreaker{ow.r, &peerv1.OpenRef{Node: k.node, Epoch: k.epoch, Id: id}}}
	ow.table.Restore(o, state.Caching{}, false, false)
	// Checked after the stand-in is in: an admission that grants caching
	// from now on meets it (and grants no more than with another open).
	if ow.locks.HasLocks(key) || ow.table.DeletePending(key) || ow.table.Caches(key) {
		ow.table.Remove(o)
		return false
	}
	ow.mu.Lock()
	if !ow.dg.addGrant(key, k, o, seq) {
		ow.mu.Unlock()
		ow.table.Remove(o)
		return false
	}
	// Among the proxies in one step with addGrant: unproxy forgets the grant.
	ow.addProxyLocked(k, o, true)
	ow.mu.Unlock()
	ow.stats.Granted.Add(1)
	return true
}

// mayGrant reports whether a delegation of key may be granted to node
// now, and the recall count that addGrant checks it against.
func (dg *delegations) mayGrant(key state.FileKey, node string) (seq uint64, ok bool) {
	dg.mu.Lock()
	defer dg.mu.Unlock()
	ok = dg.noGrant[key] == 0 && dg.noGrantAll == 0
	for g := range dg.grants[key] {
		ok = ok && g.node != node // one per node and file
	}
	return dg.recallSeq, ok
}

// addGrant records delegation k of key, standing in the table as o, unless
// an operation that recalls began since mayGrant counted seq. The caller
// holds owner.mu.
func (dg *delegations) addGrant(key state.FileKey, k refKey, o *state.Open, seq uint64) bool {
	dg.mu.Lock()
	defer dg.mu.Unlock()
	if dg.recallSeq != seq {
		return false
	}
	if dg.grants[key] == nil {
		dg.grants[key] = map[refKey]*grant{}
	}
	dg.grants[key][k] = &grant{o: o}
	return true
}

// granted reports whether delegation k of key is granted (a retried
// Admit's answer).
func (dg *delegations) granted(key state.FileKey, k refKey) bool {
	dg.mu.Lock()
	defer dg.mu.Unlock()
	return dg.grants[key][k] != nil
}

// dropGrant ends delegation k of key at the owner: its stand-in leaves
// the table.
func (dg *delegations) dropGrant(key state.FileKey, k refKey) {
	dg.mu.Lock()
	g := dg.grants[key][k]
	dg.mu.Unlock()
	if g != nil {
		dg.r.own.closeProxy(g.o) // unproxy forgets the grant
	}
}

// forgetGrant forgets the grant whose stand-in is o, proxy k of key, as o
// leaves the proxies (unproxy). The caller holds owner.mu.
func (dg *delegations) forgetGrant(key state.FileKey, k refKey, o *state.Open) {
	dg.mu.Lock()
	defer dg.mu.Unlock()
	if g := dg.grants[key][k]; g != nil && g.o == o {
		delete(dg.grants[key], k)
		if len(dg.grants[key]) == 0 {
			delete(dg.grants, key)
		}
	}
}

// takeBack serves a ReturnDelegationOp: the returned opens become
// proxies, then the delegation's stand-in leaves.
func (dg *delegations) takeBack(key state.FileKey, req *peerv1.ReturnDelegationOp) {
	r := dg.r
	for _, d := range req.Opens {
		if keyOf(d.GetKey()) != key {
			continue
		}
		o, existed, err := r.own.proxy(d)
		if err != nil || existed {
			continue
		}
		r.table.Restore(o, state.Caching{}, false, false)
		r.own.setIn(o)
	}
	ref := req.GetDelegation()
	dg.dropGrant(key, refKey{ref.GetNode(), ref.GetEpoch(), ref.GetId()})
}

// recallKey recalls every delegation of key and waits for them; it
// reports whether there was one.
func (dg *delegations) recallKey(key state.FileKey) bool {
	mine := map[refKey]*grant{}
	var waits []chan struct{}
	dg.mu.Lock()
	for k, g := range dg.grants[key] {
		if g.recalling == nil {
			g.recalling = make(chan struct{})
			mine[k] = g
		} else {
			waits = append(waits, g.recalling)
		}
	}
	dg.mu.Unlock()
	for k, g := range mine {
		dg.recall(key, k, g)
	}
	for _, w := range waits {
		<-w
	}
	return len(mine)+len(waits) > 0
}

// recall asks delegation k's holder to return it. A holder that answers
// has returned it (or had nothing under it); one that cannot be reached
// keeps it standing (it is dropped with the node's opens if the node is
// gone).
func (dg *delegations) recall(key state.FileKey, k refKey, g *grant) {
	r := dg.r
	r.stats.Recalled.Add(1)
	ok := false
	if cli, err := r.client(k.node); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		r.stats.Delivers.Add(1)
		_, err = cli.Deliver(ctx, &peerv1.DeliverRequest{Ref: &peerv1.OpenRef{Node: k.node, Epoch: k.epoch, Id: k.id}, Recall: keyPB(key)})
		cancel()
		ok = err == nil
		if err != nil {
			r.log.Warn("recalling a delegation", "peer", k.node, "file", keyString(key), "err", err)
		}
	}
	if ok {
		dg.dropGrant(key, k)
	}
	dg.mu.Lock()
	close(g.recalling)
	g.recalling = nil
	dg.mu.Unlock()
}

// without runs fn with key's delegations recalled and none granted
// until it returns.
func (dg *delegations) without(key state.FileKey, fn func(recalled bool)) {
	dg.mu.Lock()
	dg.recallSeq++
	dg.noGrant[key]++
	dg.mu.Unlock()
	defer func() {
		dg.mu.Lock()
		if dg.noGrant[key]--; dg.noGrant[key] <= 0 {
			delete(dg.noGrant, key)
		}
		dg.mu.Unlock()
	}()
	fn(dg.recallKey(key))
}

// withoutAny runs fn with every delegation of files owned here recalled
// and none granted until it returns.
func (dg *delegations) withoutAny(fn func(recalled bool)) {
	dg.mu.Lock()
	dg.recallSeq++
	dg.noGrantAll++
	var keys []state.FileKey
	for key := range dg.grants {
		keys = append(keys, key)
	}
	dg.mu.Unlock()
	defer func() {
		dg.mu.Lock()
		dg.noGrantAll--
		dg.mu.Unlock()
	}()
	recalled := false
	for _, key := range keys {
		recalled = dg.recallKey(key) || recalled
	}
	fn(recalled)
}
