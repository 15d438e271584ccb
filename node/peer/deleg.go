package peer

import (
	"context"
	"time"

	"github.com/smbcluster/smbcluster/node/state"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Admission delegation. An open of a remote file costs an Admit at its
// owner, a round trip through both nodes' gRPC stacks. When the owner
// admits a plain open from another node — no oplock or lease asked or
// granted, no delete access, not a directory, not a stream, no
// overwrite, an access its own share mode admits twice (state.Delegable)
// — and the file has no caching, no byte-range locks and no delete
// pending, it may grant the holder node a delegation of the file with
// the open's access A and share S. The owner keeps the delegation as an
// open of the holder with access A and share S (a proxy with the
// delegation's id for its ref, in the table like any open), so every
// other admission and check meets it.
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

// plainOpen reports whether an open may be admitted under a delegation
// (or earn one).
func plainOpen(o *state.Open, req state.Request) bool {
	return req.Oplock == state.OplockNone && req.Lease == nil && !req.Overwrite && !req.NoCaching &&
		!req.Directory && o.Stream == "" && o.Create == (state.CreateID{}) && state.Delegable(o.Access, o.ShareAccess)
}

// admitDelegated admits o under this node's delegation of its file, when
// one covers it; t is the file's owner now.
func (r *Router) admitDelegated(o *state.Open, req state.Request, t target) bool {
	if !plainOpen(o, req) {
		return false
	}
	r.mu.Lock()
	d := r.delegs[o.Key]
	if d == nil || d.st != delegActive || o.Access&^d.access != 0 || d.share&^o.ShareAccess != 0 || r.held[o.Ref] != o {
		r.mu.Unlock()
		return false
	}
	if d.route.GetRevision() != t.route.GetRevision() {
		r.beginReturn(d) // granted under an assignment that ended
		r.mu.Unlock()
		go r.finishReturn(d)
		return false
	}
	d.opens[o.Ref] = o
	d.used = time.Now()
	r.delegated[o.Ref] = d
	r.mirrorCache[o.Ref] = heldState{}
	r.done[o.Ref] = true // in one step: a Held listing meets it admitted, or its delegation still here
	r.mu.Unlock()
	r.stats.Delegated.Add(1)
	return true
}

// askDeleg registers a pending delegation of o's file for its Admit to
// ask for, and returns its id (0: none is asked for).
func (r *Router) askDeleg(o *state.Open, req state.Request) uint64 {
	if !plainOpen(o, req) {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.delegs[o.Key] != nil {
		return 0
	}
	if len(r.delegs) >= r.maxDelegs {
		var lru *deleg
		for _, d := range r.delegs {
			if d.st == delegActive && len(d.opens) == 0 && (lru == nil || d.used.Before(lru.used)) {
				lru = d
			}
		}
		if lru != nil {
			r.beginReturn(lru)
			go r.finishReturn(lru)
		}
		return 0
	}
	d := &deleg{id: r.next.Add(1), key: o.Key, opens: map[uint64]*state.Open{}, done: make(chan struct{})}
	r.delegs[o.Key] = d
	r.delegIDs[d.id] = d
	return d.id
}

// delegAnswered settles the pending delegation id after its Admit at t:
// granted (ev.Delegated) it becomes active; otherwise it ends — after
// telling the owner, when the answer was lost, that a grant it may have
// made is not taken.
func (r *Router) delegAnswered(id uint64, o *state.Open, t target, ev *peerv1.AdmitEvent, err error) {
	if id == 0 {
		return
	}
	r.mu.Lock()
	d := r.delegIDs[id]
	if d == nil || d.st != delegPending { // dropped meanwhile (Held): its owner is gone
		r.mu.Unlock()
		return
	}
	if err != nil || !ev.GetDelegated() || ev.GetError() != peerv1.Error_ERROR_UNSPECIFIED {
		r.endDeleg(d)
		r.mu.Unlock()
		switch {
		case err == nil || status.Code(err) == codes.FailedPrecondition: // nothing granted
		case moved(err): // the exchange broke: the grant, if any, is undone on the side
			go r.returnAt(t, o.Key, id, nil)
		default:
			r.returnAt(t, o.Key, id, nil)
		}
		return
	}
	d.st, d.access, d.share, d.route, d.mx, d.used = delegActive, o.Access, o.ShareAccess, t.route, t.mx, time.Now()
	recalled := d.recalled
	if recalled {
		r.beginReturn(d)
	} else {
		d.timer = time.AfterFunc(r.delegIdle, func() { r.idle(d) })
	}
	r.mu.Unlock()
	if recalled {
		go r.finishReturn(d)
	}
}

// idle returns d if it had no opens for delegIdle, or checks again later.
func (r *Router) idle(d *deleg) {
	r.mu.Lock()
	if d.st != delegActive {
		r.mu.Unlock()
		return
	}
	if wait := r.delegIdle - time.Since(d.used); len(d.opens) > 0 || wait > 0 {
		if wait <= 0 {
			wait = r.delegIdle
		}
		d.timer.Reset(wait)
		r.mu.Unlock()
		return
	}
	r.beginReturn(d)
	r.mu.Unlock()
	r.finishReturn(d)
}

// beginReturn stops admitting under d and moves its opens to the ones
// being returned. The caller holds r.mu, and then calls finishReturn.
func (r *Router) beginReturn(d *deleg) {
	d.st = delegReturning
	if d.timer != nil {
		d.timer.Stop()
	}
	for ref, o := range d.opens {
		delete(r.delegated, ref)
		r.converting[ref] = d.done
		d.back = append(d.back, o)
	}
	d.opens = nil
}

// finishReturn returns d to its owner with the opens it had, which
// become ordinary opens there, and ends it. It reports whether the owner
// took them (or no longer owns the file).
func (r *Router) finishReturn(d *deleg) bool {
	ok := r.returnAt(target{mx: d.mx, route: d.route}, d.key, d.id, d.back)
	r.mu.Lock()
	for _, o := range d.back {
		if r.converting[o.Ref] == d.done {
			delete(r.converting, o.Ref)
		}
	}
	r.endDeleg(d)
	r.mu.Unlock()
	r.stats.Returned.Add(1)
	return ok
}

// returnAt sends a ReturnDelegationOp of delegation id of key with opens
// to the owner at t. An owner that no longer owns the shard at t's assignment has no
// delegation to take back (the new owner learns the opens from Held);
// one that cannot be reached is tried again while the assignment holds.
// It reports whether the owner took the delegation back (or no longer
// owns the shard at that assignment).
func (r *Router) returnAt(t target, key state.FileKey, id uint64, opens []*state.Open) bool {
	op := &peerv1.ReturnDelegationOp{Delegation: &peerv1.OpenRef{Node: r.routes.Self(), Epoch: r.routes.Epoch(), Id: id}}
	for _, o := range opens {
		op.Opens = append(op.Opens, openDesc(o, r.ref(o)))
	}
	req := &peerv1.CallRequest{Route: t.route, Key: keyPB(key), Op: &peerv1.CallRequest_ReturnDelegation{ReturnDelegation: op}}
	for try := 0; ; try++ {
		changed := r.routes.Changed()
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
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
		if try >= 5 {
			r.log.Error("returning a delegation to its owner", "file", keyString(key), "err", err)
			return false
		}
		ctx, cancel = context.WithTimeout(context.Background(), callTimeout)
		r.waitRoutes(ctx, changed)
		cancel()
	}
}

// endDeleg forgets d. The caller holds r.mu.
func (r *Router) endDeleg(d *deleg) {
	if r.delegs[d.key] == d {
		delete(r.delegs, d.key)
	}
	if r.delegIDs[d.id] == d {
		delete(r.delegIDs, d.id)
		close(d.done)
	}
	if d.timer != nil {
		d.timer.Stop()
	}
}

// recalled is the holder's side of a recall: d is returned (or, pending,
// returned once its grant arrives) before the owner is answered. An error
// says the owner may not have its opens: it keeps the delegation standing.
func (r *Router) recalled(ctx context.Context, ref *peerv1.OpenRef) error {
	if ref.GetNode() != r.routes.Self() || ref.GetEpoch() != r.routes.Epoch() {
		return nil
	}
	r.mu.Lock()
	d := r.delegIDs[ref.GetId()]
	if d == nil {
		r.mu.Unlock()
		return nil
	}
	start := false
	switch d.st {
	case delegPending:
		d.recalled = true
	case delegActive:
		r.beginReturn(d)
		start = true
	}
	r.mu.Unlock()
	if start {
		if !r.finishReturn(d) {
			return status.Error(codes.Unavailable, "peer: the delegation could not be returned")
		}
		return nil
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
// needs the owner; while it is being converted, it waits.
func (r *Router) convert(o *state.Open) {
	r.mu.Lock()
	d := r.delegated[o.Ref]
	start := d != nil && d.opens[o.Ref] == o
	var wait chan struct{}
	if start {
		r.beginReturn(d)
	} else {
		wait = r.converting[o.Ref]
	}
	r.mu.Unlock()
	switch {
	case start:
		r.finishReturn(d)
	case wait != nil:
		<-wait
	}
}

// isDelegated reports whether o is an open admitted under a delegation
// this node still holds.
func (r *Router) isDelegated(o *state.Open) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.delegated[o.Ref]
	return d != nil && d.opens[o.Ref] == o
}

// closeDelegated closes o here when it is a delegated open (and reports
// it); an open being converted waits until it is an ordinary one.
func (r *Router) closeDelegated(o *state.Open) bool {
	r.mu.Lock()
	d := r.delegated[o.Ref]
	if d == nil || d.opens[o.Ref] != o {
		wait := r.converting[o.Ref]
		r.mu.Unlock()
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
		return false
	}
	delete(d.opens, o.Ref)
	delete(r.delegated, o.Ref)
	d.used = time.Now()
	r.unholdLocked(o) // in one step: a Held listing meets it open, or not at all
	r.mu.Unlock()
	return true
}

// dropDelegs ends this node's delegations of files in shards, whose
// owner is being replaced (Held): their opens stay held, as ordinary
// opens the new owner rebuilds.
func (r *Router) dropDelegs(shards []uint32) {
	in := map[uint32]bool{}
	for _, s := range shards {
		in[s] = true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range r.delegs {
		if !in[ShardOf(d.key)] || d.st == delegReturning {
			continue
		}
		for ref := range d.opens {
			delete(r.delegated, ref)
		}
		d.opens = nil
		r.endDeleg(d)
	}
}

// Owner side.

// grantDeleg grants the holder of the open d describes delegation id of
// key, when nothing stands against it, and reports whether it did. The
// open was just admitted (plain, nothing granted): every open of the
// file is compatible with its access and share, so the delegation's
// stand-in with them is too.
func (r *Router) grantDeleg(key state.FileKey, desc *peerv1.OpenDesc, id uint64) bool {
	ref := desc.GetRef()
	k := refKey{ref.GetNode(), ref.GetEpoch(), id}
	r.mu.Lock()
	seq := r.recallSeq
	ok := r.noGrant[key] == 0 && r.noGrantAll == 0
	for g := range r.grants[key] {
		ok = ok && g.node != k.node // one per node and file
	}
	r.mu.Unlock()
	if !ok {
		return false
	}
	o := &state.Open{Key: key, Name: desc.Name, Access: desc.Access, ShareAccess: desc.ShareAccess,
		Breaker: remoteBreaker{r, &peerv1.OpenRef{Node: k.node, Epoch: k.epoch, Id: id}}}
	r.table.Restore(o, state.Caching{}, false, false)
	// Checked after the stand-in is in: an admission that grants caching
	// from now on meets it (and grants no more than with another open).
	if r.locks.HasLocks(key) || r.table.DeletePending(key) || r.table.Caches(key) {
		r.table.Remove(o)
		return false
	}
	r.mu.Lock()
	if r.recallSeq != seq {
		r.mu.Unlock()
		r.table.Remove(o)
		return false
	}
	r.proxies[k] = o
	r.proxyRef[o] = k
	r.in[o] = true
	r.perShard[ShardOf(key)]++
	if r.byKey[key] == nil {
		r.byKey[key] = map[refKey]bool{}
	}
	r.byKey[key][k] = true
	if r.grants[key] == nil {
		r.grants[key] = map[refKey]*grant{}
	}
	r.grants[key][k] = &grant{o: o}
	r.mu.Unlock()
	r.stats.Granted.Add(1)
	return true
}

// granted reports whether delegation k of key is granted (a retried
// Admit's answer).
func (r *Router) granted(key state.FileKey, k refKey) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.grants[key][k] != nil
}

// dropGrant ends delegation k of key at the owner: its stand-in leaves
// the table.
func (r *Router) dropGrant(key state.FileKey, k refKey) {
	r.mu.Lock()
	g := r.grants[key][k]
	r.mu.Unlock()
	if g != nil {
		r.closeProxy(g.o) // unproxy forgets the grant
	}
}

// takeBack serves a ReturnDelegationOp: the returned opens become
// proxies, then the delegation's stand-in leaves.
func (r *Router) takeBack(key state.FileKey, req *peerv1.ReturnDelegationOp) {
	for _, d := range req.Opens {
		if keyOf(d.GetKey()) != key {
			continue
		}
		o, existed, err := r.proxy(d)
		if err != nil || existed {
			continue
		}
		r.table.Restore(o, state.Caching{}, false, false)
		r.setIn(o)
	}
	ref := req.GetDelegation()
	r.dropGrant(key, refKey{ref.GetNode(), ref.GetEpoch(), ref.GetId()})
}

// recallKey recalls every delegation of key and waits for them; it
// reports whether there was one.
func (r *Router) recallKey(key state.FileKey) bool {
	type todo struct {
		k refKey
		g *grant
	}
	var mine []todo
	var waits []chan struct{}
	r.mu.Lock()
	for k, g := range r.grants[key] {
		if g.recalling == nil {
			g.recalling = make(chan struct{})
			mine = append(mine, todo{k, g})
		} else {
			waits = append(waits, g.recalling)
		}
	}
	r.mu.Unlock()
	for _, t := range mine {
		r.recall(key, t.k, t.g)
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
func (r *Router) recall(key state.FileKey, k refKey, g *grant) {
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
		r.dropGrant(key, k)
	}
	r.mu.Lock()
	close(g.recalling)
	g.recalling = nil
	r.mu.Unlock()
}

// withoutDelegs runs fn with key's delegations recalled and none granted
// until it returns.
func (r *Router) withoutDelegs(key state.FileKey, fn func(recalled bool)) {
	r.mu.Lock()
	r.recallSeq++
	r.noGrant[key]++
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		if r.noGrant[key]--; r.noGrant[key] <= 0 {
			delete(r.noGrant, key)
		}
		r.mu.Unlock()
	}()
	fn(r.recallKey(key))
}

// withoutAnyDelegs runs fn with every delegation of files owned here
// recalled and none granted until it returns.
func (r *Router) withoutAnyDelegs(fn func(recalled bool)) {
	r.mu.Lock()
	r.recallSeq++
	r.noGrantAll++
	var keys []state.FileKey
	for key := range r.grants {
		keys = append(keys, key)
	}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.noGrantAll--
		r.mu.Unlock()
	}()
	recalled := false
	for _, key := range keys {
		recalled = r.recallKey(key) || recalled
	}
	fn(recalled)
}
