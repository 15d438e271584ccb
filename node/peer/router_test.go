package peer

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/node/mesh"
	"github.com/smbcluster/smbcluster/node/state"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// staticRoutes is a fixed shard map: every shard owned by owner.
type staticRoutes struct {
	self  string
	owner string
	mu    sync.Mutex
	peers map[string]string
	epoch uint64 // 0: 1
}

func (s *staticRoutes) Self() string { return s.self }
func (s *staticRoutes) Epoch() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return max(s.epoch, 1)
}

// rejoin gives the node the next epoch, as a node that fenced and joined
// again has.
func (s *staticRoutes) rejoin() {
	s.mu.Lock()
	s.epoch = max(s.epoch, 1) + 1
	s.mu.Unlock()
}
func (s *staticRoutes) Owner(shard uint32) (Route, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Route{Shard: shard, Node: s.owner, Addr: s.peers[s.owner], Revision: 1}, true
}
func (s *staticRoutes) Owns(shard uint32, rev int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.owner == s.self && rev == 1
}

// move makes node every shard's owner and drops gone from the peers (a
// copy: the routers of a test may share the map).
func (s *staticRoutes) move(owner, gone string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.owner = owner
	peers := map[string]string{}
	for n, a := range s.peers {
		if n != gone {
			peers[n] = a
		}
	}
	s.peers = peers
}
func (s *staticRoutes) Peers() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peers
}
func (s *staticRoutes) Changed() <-chan struct{} { return make(chan struct{}) }

// twoNodes starts routers "a" (owner of every shard) and "b" over real
// gRPC on loopback.
func twoNodes(t testing.TB) (a, b *Router) {
	t.Helper()
	return twoNodesServing(t)
}

// twoNodesServing is twoNodes with b's peer service served with opts.
func twoNodesServing(t testing.TB, opts ...grpc.ServerOption) (a, b *Router) {
	t.Helper()
	peers := map[string]string{}
	var routers []*Router
	for _, name := range []string{"a", "b"} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		peers[name] = l.Addr().String()
		rt := &staticRoutes{self: name, owner: "a", peers: peers}
		r := newRouter(t, rt, func(addr string) (*grpc.ClientConn, error) {
			return grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		})
		var served []grpc.ServerOption
		if name == "b" {
			served = opts
		}
		srv := grpc.NewServer(served...)
		peerv1.RegisterPeerServiceServer(srv, r.Service())
		go srv.Serve(l)
		t.Cleanup(func() { srv.Stop(); r.Close() })
		routers = append(routers, r)
	}
	return routers[0], routers[1]
}

// newRouter returns node rt.self's router, over a mesh that dials with
// dial and is closed at the end of the test.
func newRouter(tb testing.TB, rt *staticRoutes, dial mesh.Dial) *Router {
	m := mesh.New(rt.self, rt.Peers, dial, nil)
	tb.Cleanup(m.Close)
	return New(rt, state.NewTable(), state.NewLockTable(), m, nil)
}

// breaks records the breaks delivered to an open.
type breaks struct {
	oplock chan uint8
	lease  chan state.LeaseBreak
}

func newBreaks() *breaks {
	return &breaks{oplock: make(chan uint8, 4), lease: make(chan state.LeaseBreak, 4)}
}
func (b *breaks) BreakOplock(to uint8) error          { b.oplock <- to; return nil }
func (b *breaks) BreakLease(l state.LeaseBreak) error { b.lease <- l; return nil }

func open(key state.FileKey, access, share uint32, br state.Breaker) *state.Open {
	return &state.Open{Key: key, Name: "x.txt", Access: access, ShareAccess: share, Breaker: br}
}

const (
	rw       = 0x1 | 0x2
	shareAll = 1 | 2 | 4
)

func TestShareModesAcrossNodes(t *testing.T) {
	a, b := twoNodes(t)
	key := state.FileKey{Volume: 1, FileID: 42}
	ctx := context.Background()
	// b holds the file open with no sharing; a's open (as owner) and b's
	// second open are refused; once b closes, a's open is admitted.
	ob := open(key, rw, 0, newBreaks())
	if _, err := b.Admit(ctx, ob, state.Request{}, nil); err != nil {
		t.Fatalf("first open: %v", err)
	}
	if _, err := a.Admit(ctx, open(key, rw, shareAll, newBreaks()), state.Request{}, nil); !errors.Is(err, state.ErrSharingViolation) {
		t.Fatalf("open on the owner while the holder's open shares nothing: %v, want a sharing violation", err)
	}
	if _, err := b.Admit(ctx, open(key, rw, shareAll, newBreaks()), state.Request{}, nil); !errors.Is(err, state.ErrSharingViolation) {
		t.Fatalf("second open on the holder: %v, want a sharing violation", err)
	}
	if last, _ := b.Remove(ob); !last {
		t.Fatal("closing the only open: not the last")
	}
	oa := open(key, rw, shareAll, newBreaks())
	if _, err := a.Admit(ctx, oa, state.Request{}, nil); err != nil {
		t.Fatalf("open after the close: %v", err)
	}
}

func TestOplockBreakAcrossNodes(t *testing.T) {
	a, b := twoNodes(t)
	key := state.FileKey{Volume: 1, FileID: 7}
	ctx := context.Background()
	br := newBreaks()
	ob := open(key, rw, shareAll, br)
	g, err := b.Admit(ctx, ob, state.Request{Oplock: state.OplockBatch}, nil)
	if err != nil || g.Oplock != state.OplockBatch {
		t.Fatalf("batch oplock: %+v, %v", g, err)
	}
	done := make(chan error, 1)
	waited := make(chan struct{})
	go func() {
		_, err := a.Admit(ctx, open(key, rw, shareAll, newBreaks()), state.Request{}, func() { close(waited) })
		done <- err
	}()
	if to := <-br.oplock; to != state.OplockLevelII {
		t.Fatalf("break to %#x, want level II", to)
	}
	<-waited
	if !b.Ack(ob, state.OplockLevelII) {
		t.Fatal("the acknowledgment was refused")
	}
	if err := <-done; err != nil {
		t.Fatalf("the conflicting open after the break: %v", err)
	}
	if got := b.Oplock(ob); got != state.OplockLevelII {
		t.Fatalf("oplock after the break: %#x", got)
	}
}

func TestLocksAcrossNodes(t *testing.T) {
	a, b := twoNodes(t)
	key := state.FileKey{Volume: 1, FileID: 9}
	ctx := context.Background()
	oa := open(key, rw, shareAll, newBreaks())
	ob := open(key, rw, shareAll, newBreaks())
	if _, err := b.Admit(ctx, ob, state.Request{}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Admit(ctx, oa, state.Request{}, nil); err != nil {
		t.Fatal(err)
	}
	// Before any lock, b's I/O is checked locally.
	if err := b.CheckIO(ob, 0, 100, true); err != nil {
		t.Fatal(err)
	}
	calls := b.Stats().Calls.Load()
	if err := b.CheckIO(ob, 0, 100, true); err != nil || b.Stats().Calls.Load() != calls {
		t.Fatalf("unlocked file: CheckIO %v, %d calls to the owner", err, b.Stats().Calls.Load()-calls)
	}
	// a locks 0-99 exclusively: b is told, and its lock and write conflict.
	if err := a.Lock(oa, []state.Lock{{Offset: 0, Length: 100, Exclusive: true}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Lock(ob, []state.Lock{{Offset: 50, Length: 10, Exclusive: true}}); !errors.Is(err, state.ErrLockNotGranted) {
		t.Fatalf("conflicting lock on the other node: %v", err)
	}
	if err := b.CheckIO(ob, 10, 10, true); !errors.Is(err, state.ErrLockConflict) {
		t.Fatalf("write into a locked range on the other node: %v", err)
	}
	// b waits for the range; a's unlock grants it.
	got := make(chan error, 1)
	waiting := make(chan struct{})
	go func() {
		got <- b.LockWait(ctx, ob, state.Lock{Offset: 0, Length: 10, Exclusive: true}, func() { close(waiting) })
	}()
	<-waiting
	if _, err := a.Unlock(oa, []state.Lock{{Offset: 0, Length: 100}}); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("blocking lock after the unlock: %v", err)
	}
	if err := a.CheckIO(oa, 0, 10, false); !errors.Is(err, state.ErrLockConflict) {
		t.Fatalf("read on the owner of a range locked by the other node: %v", err)
	}
	// b's close releases its lock.
	b.Release(ob)
	b.Remove(ob)
	if err := a.CheckIO(oa, 0, 10, true); err != nil {
		t.Fatalf("after the holder closed: %v", err)
	}
}

func TestDropNodeReleasesItsOpens(t *testing.T) {
	a, b := twoNodes(t)
	key := state.FileKey{Volume: 2, FileID: 1}
	ctx := context.Background()
	if _, err := b.Admit(ctx, open(key, rw, 0, newBreaks()), state.Request{}, nil); err != nil {
		t.Fatal(err)
	}
	if n := a.DropNode("b", 0); n != 1 {
		t.Fatalf("dropped %d opens, want 1", n)
	}
	if _, err := a.Admit(ctx, open(key, rw, 0, newBreaks()), state.Request{}, nil); err != nil {
		t.Fatalf("open after the holder left: %v", err)
	}
}

func TestCancelledAdmitLeavesNoOpen(t *testing.T) {
	a, b := twoNodes(t)
	key := state.FileKey{Volume: 3, FileID: 1}
	ctx := context.Background()
	br := newBreaks()
	oa := open(key, rw, shareAll, br)
	if _, err := a.Admit(ctx, oa, state.Request{Oplock: state.OplockBatch}, nil); err != nil {
		t.Fatal(err)
	}
	// b's open waits for a's break; it is cancelled while waiting.
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := b.Admit(cctx, open(key, rw, 0, newBreaks()), state.Request{}, cancel)
		done <- err
	}()
	<-br.oplock
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled open: %v", err)
	}
	a.Ack(oa, state.OplockNone)
	// Nothing of b's open stays at the owner: a no-sharing open works.
	if last, _ := a.Remove(oa); !last {
		t.Fatal("a phantom open of the other node stayed at the owner")
	}
}

// TestOpenCloseCalls pins the cost of an uncontended open and close of a
// remote file: one call to the owner each (the close's lock release and
// parent-lease lookup need none).
func TestOpenCloseCalls(t *testing.T) {
	_, b := twoNodes(t)
	key := state.FileKey{Volume: 4, FileID: 1}
	o := open(key, rw, shareAll, newBreaks())
	before := b.Stats().Calls.Load()
	if _, err := b.Admit(context.Background(), o, state.Request{}, nil); err != nil {
		t.Fatal(err)
	}
	b.Release(o)
	b.ParentLeaseOf(o)
	b.Drop(o)
	if n := b.Stats().Calls.Load() - before; n != 2 {
		t.Fatalf("open and close of a remote file: %d calls to the owner, want 2", n)
	}
}

// TestBreakReadAfterClose: a write's read-caching break reaches the owner
// after the writer's open closed (BreakRead does not wait): the others'
// read caching still breaks, and nothing panics.
func TestBreakReadAfterClose(t *testing.T) {
	a, b := twoNodes(t)
	key := state.FileKey{Volume: 5, FileID: 1}
	ctx := context.Background()
	br := newBreaks()
	if _, err := a.Admit(ctx, open(key, rw, shareAll, br), state.Request{Oplock: state.OplockLevelII}, nil); err != nil {
		t.Fatal(err)
	}
	ob := open(key, rw, shareAll, newBreaks())
	if _, err := b.Admit(ctx, ob, state.Request{}, nil); err != nil {
		t.Fatal(err)
	}
	gone := b.ref(ob)
	b.Remove(ob)
	cli, err := b.client("a")
	if err != nil {
		t.Fatal(err)
	}
	rt, _ := b.routes.Owner(ShardOf(key))
	if _, err := cli.Call(ctx, &peerv1.CallRequest{Route: &peerv1.Route{Shard: rt.Shard, Revision: rt.Revision},
		Key: keyPB(key), Op: &peerv1.CallRequest_BreakRead{BreakRead: &peerv1.BreakReadOp{Except: gone}}}); err != nil {
		t.Fatal(err)
	}
	if to := <-br.oplock; to != state.OplockNone {
		t.Fatalf("level II broken to %#x, want none", to)
	}
}

// TestBreakTimeoutAcrossNodes: a holder that never acknowledges a break
// delivered to its node loses its oplock at the owner's break timeout,
// and the waiting open goes on.
func TestBreakTimeoutAcrossNodes(t *testing.T) {
	a, b := twoNodes(t)
	a.table.BreakTimeout = 50 * time.Millisecond // the owner's timer
	key := state.FileKey{Volume: 6, FileID: 1}
	ctx := context.Background()
	br := newBreaks()
	ob := open(key, rw, shareAll, br)
	if _, err := b.Admit(ctx, ob, state.Request{Oplock: state.OplockBatch}, nil); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := a.Admit(ctx, open(key, rw, shareAll, newBreaks()), state.Request{}, nil)
		done <- err
	}()
	<-br.oplock // delivered to b's node, never acknowledged
	if err := <-done; err != nil {
		t.Fatalf("the open waiting for an unacknowledged break: %v", err)
	}
	if got := b.Oplock(ob); got != state.OplockNone {
		t.Fatalf("oplock after the timeout: %#x, want none", got)
	}
}

// TestLeaseBreakAcrossNodes: an RWH lease held through one node is broken
// to RH by a conflicting open through the other, and the acknowledgment
// sent through the holder's node lets the open go on.
func TestLeaseBreakAcrossNodes(t *testing.T) {
	a, b := twoNodes(t)
	key := state.FileKey{Volume: 6, FileID: 2}
	ctx := context.Background()
	br := newBreaks()
	id := state.LeaseID{Client: [16]byte{1}, Key: [16]byte{2}}
	ob := open(key, rw, shareAll, br)
	g, err := b.Admit(ctx, ob, state.Request{Lease: &state.LeaseRequest{ID: id, State: state.LeaseRead | state.LeaseWrite | state.LeaseHandle, Version: 2}}, nil)
	if err != nil || g.Lease == nil || g.Lease.State != state.LeaseRead|state.LeaseWrite|state.LeaseHandle {
		t.Fatalf("RWH lease: %+v, %v", g.Lease, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := a.Admit(ctx, open(key, rw, shareAll, newBreaks()), state.Request{}, nil)
		done <- err
	}()
	lb := <-br.lease
	if lb.To != state.LeaseRead|state.LeaseHandle || !lb.AckRequired {
		t.Fatalf("lease break %+v, want RWH to RH with an acknowledgment", lb)
	}
	if _, err := b.AckLease(id, lb.To); err != nil {
		t.Fatalf("acknowledgment through the holder's node: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if c := b.CachingOf(ob); c.State != state.LeaseRead|state.LeaseHandle {
		t.Fatalf("lease after the break: %#x", c.State)
	}
}

// TestAckAnswerAfterNextBreak: the owner's answer to an acknowledgment
// that reaches the holder's node after the next break (delivered on
// another connection) does not give the held open's copy of its caching
// back what that break took: the durable record published from it would
// keep R while the client was told none.
func TestAckAnswerAfterNextBreak(t *testing.T) {
	a, b := twoNodes(t)
	key := state.FileKey{Volume: 6, FileID: 3}
	ctx := context.Background()
	br := newBreaks()
	id := state.LeaseID{Client: [16]byte{1}, Key: [16]byte{3}}
	ob := open(key, rw, shareAll, br)
	if _, err := b.Admit(ctx, ob, state.Request{Lease: &state.LeaseRequest{ID: id, State: state.LeaseRead | state.LeaseWrite | state.LeaseHandle, Version: 2}}, nil); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := a.Admit(ctx, open(key, rw, shareAll, newBreaks()), state.Request{}, nil)
		done <- err
	}()
	lb := <-br.lease
	if lb.To != state.LeaseRead|state.LeaseHandle || !lb.AckRequired {
		t.Fatalf("lease break %+v, want RWH to RH with an acknowledgment", lb)
	}
	// The next break, to none, is noted before the acknowledgment's
	// answer comes back.
	next := state.LeaseBreak{ID: id, From: lb.To, To: state.LeaseNone, Epoch: lb.Epoch + 1, Version: 2}
	if resp, err := b.Service().Deliver(ctx, &peerv1.DeliverRequest{Ref: b.ref(ob), Lease: leaseBreakPB(next)}); err != nil || resp.Gone {
		t.Fatalf("delivering the next break: %+v, %v", resp, err)
	}
	<-br.lease
	if st, err := b.AckLease(id, lb.To); err != nil || st != state.LeaseRead|state.LeaseHandle {
		t.Fatalf("acknowledgment through the holder's node: %#x, %v", st, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if c := b.HeldEntry(ob).Caching; c.State != state.LeaseNone {
		t.Fatalf("the held open's caching as its record has it: %#x, want none (the later break's)", c.State)
	}
}

// TestLockWaiterWokenByClose: a blocking lock waiting on the owner for a
// range held through the other node is granted when the holder's open
// closes (as when its connection drops).
func TestLockWaiterWokenByClose(t *testing.T) {
	a, b := twoNodes(t)
	key := state.FileKey{Volume: 6, FileID: 3}
	ctx := context.Background()
	oa, ob := open(key, rw, shareAll, newBreaks()), open(key, rw, shareAll, newBreaks())
	for _, x := range []struct {
		r *Router
		o *state.Open
	}{{b, ob}, {a, oa}} {
		if _, err := x.r.Admit(ctx, x.o, state.Request{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Lock(ob, []state.Lock{{Offset: 0, Length: 10, Exclusive: true}}); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	waiting := make(chan struct{})
	go func() {
		got <- a.LockWait(ctx, oa, state.Lock{Offset: 5, Length: 1, Exclusive: true}, func() { close(waiting) })
	}()
	<-waiting
	b.Release(ob)
	b.Drop(ob)
	if err := <-got; err != nil {
		t.Fatalf("blocking lock after the holder closed: %v", err)
	}
}

// sink records the changes delivered to a share.
type sink struct{ changes chan string }

func (s sink) DeliverChange(action uint32, name string, filter uint32) { s.changes <- name }
func (s sink) DeliverDeletePending(dir string)                         { s.changes <- "pending:" + dir }

// TestWatchGetsChangesMadeBeforeItArrived: a change made through node b
// after a's watch was made, but before b heard of it, reaches the watch
// when b hears of it; a change made before the watch does not.
func TestWatchGetsChangesMadeBeforeItArrived(t *testing.T) {
	a, b := twoNodes(t)
	got := sink{make(chan string, 8)}
	a.SetNotifySinks(func(string) (NotifySink, bool) { return got, true })
	b.Post("data", 1, "dir/before.txt", 1, false)
	since := time.Now()
	for !time.Now().After(since) { // the clock moves on (coarse clocks)
	}
	b.Post("data", 1, "dir/racing.txt", 1, false)
	b.Post("data", 3, "dir/racing.txt", 0x8, true) // a write's change: not kept
	spec := &peerv1.WatchSpec{Id: 1, Share: "data", Dir: "dir", Filter: 1 | 0x8, Since: since.UnixNano()}
	if _, err := b.Service().Watch(context.Background(), &peerv1.WatchRequest{Node: "a", Epoch: 1, Add: []*peerv1.WatchSpec{spec}}); err != nil {
		t.Fatal(err)
	}
	if name := <-got.changes; name != "dir/racing.txt" {
		t.Fatalf("replayed %q, want dir/racing.txt", name)
	}
	b.Post("data", 1, "dir/after.txt", 1, false)
	if name := <-got.changes; name != "dir/after.txt" {
		t.Fatalf("then %q, want dir/after.txt (before.txt must not be replayed)", name)
	}
}

// TestLeaseAckOnAnotherNode: a client acknowledges, on its connection to
// a node that holds none of the lease's opens, a break sent through
// another node; the acknowledgment finds the lease at its owner.
func TestLeaseAckOnAnotherNode(t *testing.T) {
	a, b := twoNodes(t)
	key := state.FileKey{Volume: 8, FileID: 1}
	ctx := context.Background()
	br := newBreaks()
	id := state.LeaseID{Client: [16]byte{3}, Key: [16]byte{4}}
	oa := open(key, rw, shareAll, br)
	if _, err := a.Admit(ctx, oa, state.Request{Lease: &state.LeaseRequest{ID: id, State: state.LeaseRead | state.LeaseWrite | state.LeaseHandle, Version: 2}}, nil); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := b.Admit(ctx, open(key, rw, shareAll, newBreaks()), state.Request{}, nil)
		done <- err
	}()
	lb := <-br.lease
	if _, err := b.AckLease(id, lb.To); err != nil {
		t.Fatalf("acknowledgment through the node holding none of the lease's opens: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if c := a.CachingOf(oa); c.State != state.LeaseRead|state.LeaseHandle || c.Breaking {
		t.Fatalf("lease after the acknowledgment: %#x breaking=%v", c.State, c.Breaking)
	}
}

// TestWriteBreaksReadOnceUntilReadAgain: a writer through a remote file's
// holder node asks the owner to break read caching on its first write
// only; once another node's open caches reads again, the next write
// breaks it.
func TestWriteBreaksReadOnceUntilReadAgain(t *testing.T) {
	a, b := twoNodes(t)
	key := state.FileKey{Volume: 7, FileID: 1}
	ctx := context.Background()
	reader := newBreaks()
	if _, err := a.Admit(ctx, open(key, rw, shareAll, reader), state.Request{Oplock: state.OplockLevelII}, nil); err != nil {
		t.Fatal(err)
	}
	w := open(key, rw, shareAll, newBreaks())
	if _, err := b.Admit(ctx, w, state.Request{}, nil); err != nil {
		t.Fatal(err)
	}
	calls := func() uint64 { return b.Stats().ByOp[OpBreakRead].Load() }
	b.BreakRead(key, w) // the first write: level II broken
	if to := <-reader.oplock; to != state.OplockNone {
		t.Fatalf("level II broken to %#x", to)
	}
	before := calls()
	for range 10 {
		b.BreakRead(key, w)
	}
	if n := calls() - before; n != 0 {
		t.Fatalf("10 more writes made %d calls, want none", n)
	}
	// Another open through the owner caches reads again: the owner tells
	// b, and b's next write breaks it.
	reader2 := newBreaks()
	if _, err := a.Admit(ctx, open(key, rw, shareAll, reader2), state.Request{Oplock: state.OplockLevelII}, nil); err != nil {
		t.Fatal(err)
	}
	b.BreakRead(key, w)
	if to := <-reader2.oplock; to != state.OplockNone {
		t.Fatalf("the new level II broken to %#x", to)
	}
}
