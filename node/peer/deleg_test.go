package peer

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/node/mesh"
	"github.com/smbcluster/smbcluster/node/state"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
	"google.golang.org/grpc"
)

const (
	readData    = 0x1
	accessDel   = 0x10000
	shareNone   = 0
	readOnlyDel = readData | accessDel
)

// delegate has b, a holder, earn a delegation of key from its owner a:
// the first plain open is admitted by the owner (which grants it), and
// closed. It returns b's count of calls after that.
func delegate(t *testing.T, a, b *Router, key state.FileKey) uint64 {
	t.Helper()
	o := admitted(t, b, open(key, readData, shareAll, newBreaks()))
	b.Drop(o)
	if a.Stats().Granted.Load() == 0 {
		t.Fatal("the owner granted no delegation for a plain open")
	}
	return b.Stats().Calls.Load()
}

// admitted admits o, a plain open, through r.
func admitted(t *testing.T, r *Router, o *state.Open) *state.Open {
	t.Helper()
	if _, err := r.Admit(context.Background(), o, state.Request{}, nil); err != nil {
		t.Fatal(err)
	}
	return o
}

// TestDelegatedOpensNeedNoCalls: once a holder has a file's delegation,
// its plain opens and closes of it are served with no call to the owner.
func TestDelegatedOpensNeedNoCalls(t *testing.T) {
	a, b := twoNodes(t)
	key := state.FileKey{Volume: 10, FileID: 1}
	before := delegate(t, a, b, key)
	for range 10 {
		o := admitted(t, b, open(key, readData, shareAll, newBreaks()))
		b.Release(o)
		b.ParentLeaseOf(o)
		b.CheckIO(o, 0, 4096, false)
		b.NameOf(o)
		b.Drop(o)
	}
	if n := b.Stats().Calls.Load() - before; n != 0 {
		t.Fatalf("10 delegated opens and closes: %d calls to the owner, want 0", n)
	}
	if n := b.Stats().Delegated.Load(); n != 10 {
		t.Fatalf("%d opens admitted under the delegation, want 10", n)
	}
	// An open it does not cover (write access) goes to the owner.
	admitted(t, b, open(key, rw, shareAll, newBreaks()))
	if n := b.Stats().Calls.Load() - before; n != 1 {
		t.Fatalf("an open the delegation does not cover: %d calls, want 1", n)
	}
}

// TestConflictRecallsDelegation: an open through the owner that the
// delegated opens refuse (no sharing) is refused, after the holder
// returned the delegation with its open; the open is then an ordinary one
// at the owner, and its close there lets the same open in.
func TestConflictRecallsDelegation(t *testing.T) {
	a, b := twoNodes(t)
	key := state.FileKey{Volume: 10, FileID: 2}
	delegate(t, a, b, key)
	ob := admitted(t, b, open(key, readData, shareAll, newBreaks()))
	if !b.isDelegated(ob) {
		t.Fatal("the holder's second open was not admitted under its delegation")
	}
	if _, err := a.Admit(context.Background(), open(key, rw, shareNone, newBreaks()), state.Request{}, nil); !errors.Is(err, state.ErrSharingViolation) {
		t.Fatalf("no-sharing open while the holder has the file open: %v, want a sharing violation", err)
	}
	if a.Stats().Recalled.Load() != 1 || b.Stats().Returned.Load() != 1 {
		t.Fatalf("recalled %d, returned %d, want 1 and 1", a.Stats().Recalled.Load(), b.Stats().Returned.Load())
	}
	if b.isDelegated(ob) || a.own.lookup(b.ref(ob)) == nil {
		t.Fatal("the delegated open is not an ordinary open at the owner after the recall")
	}
	calls := b.Stats().Calls.Load()
	if _, del := b.Drop(ob); del {
		t.Fatal("the close deleted the file")
	}
	if b.Stats().Calls.Load() == calls {
		t.Fatal("the close of a returned open did not reach the owner")
	}
	oa := open(key, rw, shareNone, newBreaks())
	if _, err := a.Admit(context.Background(), oa, state.Request{}, nil); err != nil {
		t.Fatalf("no-sharing open after the holder closed: %v", err)
	}
	// And the holder, meeting it, is refused (no delegation any more).
	if _, err := b.Admit(context.Background(), open(key, readData, shareAll, newBreaks()), state.Request{}, nil); !errors.Is(err, state.ErrSharingViolation) {
		t.Fatalf("holder's open against a no-sharing open: %v, want a sharing violation", err)
	}
}

// TestIdleDelegationRecalledForConflict: a delegation with no opens
// under it does not refuse anything: recalled, it leaves.
func TestIdleDelegationRecalledForConflict(t *testing.T) {
	a, b := twoNodes(t)
	key := state.FileKey{Volume: 10, FileID: 3}
	delegate(t, a, b, key)
	oa := open(key, readOnlyDel, shareNone, newBreaks())
	if _, err := a.Admit(context.Background(), oa, state.Request{}, nil); err != nil {
		t.Fatalf("no-sharing delete open against an idle delegation: %v", err)
	}
	if last, _ := a.Remove(oa); !last {
		t.Fatal("the delegation stayed at the owner after its recall")
	}
}

// TestLeaseRequestRecallsDelegation: a lease asked for through another
// open is granted in full once the idle delegation is recalled; with a
// delegated open standing, the lease gets what an open beside it allows.
func TestLeaseRequestRecallsDelegation(t *testing.T) {
	a, b := twoNodes(t)
	key := state.FileKey{Volume: 10, FileID: 4}
	delegate(t, a, b, key)
	rwh := state.LeaseRead | state.LeaseWrite | state.LeaseHandle
	lr := &state.LeaseRequest{ID: state.LeaseID{Key: [16]byte{1}}, State: rwh}
	br := newBreaks()
	oa := open(key, rw, shareAll, br)
	g, err := a.Admit(context.Background(), oa, state.Request{Lease: lr}, nil)
	if err != nil || g.Lease == nil || g.Lease.State != rwh {
		t.Fatalf("lease against an idle delegation: %+v, %v; want RWH", g.Lease, err)
	}
	if a.Stats().Recalled.Load() != 1 {
		t.Fatalf("recalled %d, want 1", a.Stats().Recalled.Load())
	}
	// With a lease on the file no delegation is granted (the holder's
	// open breaks its write caching first).
	ob := open(key, readData, shareAll, newBreaks())
	done := make(chan error, 1)
	go func() {
		_, err := b.Admit(context.Background(), ob, state.Request{}, nil)
		done <- err
	}()
	brk := <-br.lease
	if _, err := a.AckLease(lr.ID, brk.To); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if b.isDelegated(ob) || a.Stats().Granted.Load() != 1 {
		t.Fatal("a delegation was granted while an open of the file has a lease")
	}
}

// TestLockConvertsDelegatedOpen: a lock through a delegated open makes it
// an ordinary open first; the lock then holds against the owner's I/O.
func TestLockConvertsDelegatedOpen(t *testing.T) {
	a, b := twoNodes(t)
	key := state.FileKey{Volume: 10, FileID: 5}
	delegate(t, a, b, key)
	ob := admitted(t, b, open(key, readData, shareAll, newBreaks()))
	if err := b.Lock(ob, []state.Lock{{Offset: 0, Length: 10, Exclusive: true}}); err != nil {
		t.Fatalf("lock through a delegated open: %v", err)
	}
	if b.isDelegated(ob) {
		t.Fatal("the open is still delegated after its lock")
	}
	oa := admitted(t, a, open(key, rw, shareAll, newBreaks()))
	if err := a.CheckIO(oa, 0, 4, true); !errors.Is(err, state.ErrLockConflict) {
		t.Fatalf("write into the holder's lock: %v, want a lock conflict", err)
	}
	b.Release(ob)
	b.Drop(ob)
	if err := a.CheckIO(oa, 0, 4, true); err != nil {
		t.Fatalf("write after the holder closed: %v", err)
	}
}

// TestLockByOtherRecallsDelegation: the first lock of a file, through
// the owner, recalls the delegation; the holder's I/O then checks it.
func TestLockByOtherRecallsDelegation(t *testing.T) {
	a, b := twoNodes(t)
	key := state.FileKey{Volume: 10, FileID: 6}
	delegate(t, a, b, key)
	ob := admitted(t, b, open(key, readData, shareAll, newBreaks()))
	oa := admitted(t, a, open(key, rw, shareAll, newBreaks()))
	if err := a.Lock(oa, []state.Lock{{Offset: 0, Length: 10, Exclusive: true}}); err != nil {
		t.Fatal(err)
	}
	if b.isDelegated(ob) {
		t.Fatal("the delegation was not recalled by a lock")
	}
	if err := b.CheckIO(ob, 0, 4, false); !errors.Is(err, state.ErrLockConflict) {
		t.Fatalf("read of a range another open locked: %v, want a lock conflict", err)
	}
}

// TestDeletePendingRecallsDelegation: a delete made pending recalls the
// delegation, and the last close — the holder's formerly delegated
// open — deletes the file.
func TestDeletePendingRecallsDelegation(t *testing.T) {
	a, b := twoNodes(t)
	key := state.FileKey{Volume: 10, FileID: 7}
	delegate(t, a, b, key)
	ob := admitted(t, b, open(key, readData, shareAll, newBreaks()))
	oa := admitted(t, a, open(key, readOnlyDel, shareAll, newBreaks()))
	a.MarkDeletePending(oa, true)
	if b.isDelegated(ob) {
		t.Fatal("the delegation was not recalled by a delete made pending")
	}
	if _, del := a.Drop(oa); del {
		t.Fatal("the close of the owner's open deleted the file while the holder has it open")
	}
	if _, del := b.Drop(ob); !del {
		t.Fatal("the last close did not delete the file")
	}
}

// TestRenameRecallsDelegation: a rename recalls the delegation, and the
// holder's open then has the new name.
func TestRenameRecallsDelegation(t *testing.T) {
	a, b := twoNodes(t)
	key := state.FileKey{Volume: 10, FileID: 8}
	delegate(t, a, b, key)
	ob := admitted(t, b, open(key, readData, shareAll, newBreaks()))
	oa := admitted(t, a, open(key, readOnlyDel, shareAll, newBreaks()))
	if err := a.CheckRename(oa); err != nil {
		t.Fatalf("rename while the holder's open shares delete: %v", err)
	}
	a.Renamed(key, "y.txt")
	if got := b.NameOf(ob); got != "y.txt" {
		t.Fatalf("holder's open named %q after the rename, want y.txt", got)
	}
}

// TestHolderGoneDropsDelegation: the owner drops a dead holder's
// delegation with its opens.
func TestHolderGoneDropsDelegation(t *testing.T) {
	a, b := twoNodes(t)
	key := state.FileKey{Volume: 10, FileID: 9}
	delegate(t, a, b, key)
	if _, err := b.Admit(context.Background(), open(key, readData, shareAll, newBreaks()), state.Request{}, nil); err != nil {
		t.Fatal(err)
	}
	a.DropNode("b", 0)
	oa := open(key, rw, shareNone, newBreaks())
	if _, err := a.Admit(context.Background(), oa, state.Request{}, nil); err != nil {
		t.Fatalf("no-sharing open after the holder left: %v", err)
	}
	if last, _ := a.Remove(oa); !last {
		t.Fatal("the dead holder's delegation stayed")
	}
}

// TestDelegationGoesWithItsEpoch: a holder that fenced and joined again
// (its next epoch) admits nothing under a delegation it asked for before:
// the owner dropped that epoch's opens, the delegation's stand-in with
// them, and may since have granted write caching that a plain open must
// break (robustness suite, seed 31: a read through a node back from a
// pause missed a write cached under a lease).
func TestDelegationGoesWithItsEpoch(t *testing.T) {
	a, b := twoNodes(t)
	key := state.FileKey{Volume: 10, FileID: 32}
	delegate(t, a, b, key)
	b.routes.(*staticRoutes).rejoin()
	a.DropNode("b", 2) // the owner sees b's new epoch
	writer := open(key, rw, shareAll, newBreaks())
	rwh := &state.LeaseRequest{ID: state.LeaseID{Key: [16]byte{7}}, State: state.LeaseRead | state.LeaseWrite | state.LeaseHandle, Version: 2}
	g, err := a.Admit(context.Background(), writer, state.Request{Lease: rwh}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g.Lease == nil || g.Lease.State&state.LeaseWrite == 0 {
		t.Fatalf("the owner's sole open was granted %+v, want write caching", g.Lease)
	}
	done := make(chan error, 1)
	ob := open(key, readData, shareAll, newBreaks())
	go func() { _, err := b.Admit(context.Background(), ob, state.Request{}, nil); done <- err }()
	select {
	case <-writer.Breaker.(*breaks).lease:
	case err := <-done:
		t.Fatalf("a plain open through the holder at its next epoch was admitted (%v, delegated %v) without breaking the owner's write lease", err, b.isDelegated(ob))
	}
	a.AckLease(rwh.ID, state.LeaseRead|state.LeaseHandle)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if b.isDelegated(ob) {
		t.Fatal("the open was admitted under the delegation of the earlier epoch")
	}
}

// TestHeldListsDelegatedOpens: a node taking the shard over learns the
// delegated opens as the holder's opens, and the holder's delegation
// ends (its next open goes to the owner).
func TestHeldListsDelegatedOpens(t *testing.T) {
	a, b := twoNodes(t)
	key := state.FileKey{Volume: 10, FileID: 10}
	delegate(t, a, b, key)
	ob := admitted(t, b, open(key, readData, shareAll, newBreaks()))
	resp, err := b.Service().Held(context.Background(), &peerv1.HeldRequest{Shards: []uint32{ShardOf(key)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Opens) != 1 || resp.Opens[0].Open.Ref.Id != ob.Ref {
		t.Fatalf("held opens %v, want the delegated one", resp.Opens)
	}
	if b.isDelegated(ob) {
		t.Fatal("the holder kept its delegation after a new owner asked for its opens")
	}
	calls := b.Stats().Calls.Load()
	if _, err := b.Admit(context.Background(), open(key, readData, shareAll, newBreaks()), state.Request{}, nil); err != nil {
		t.Fatal(err)
	}
	if b.Stats().Calls.Load() == calls {
		t.Fatal("an open after the delegation was dropped made no call")
	}
}

// TestIdleDelegationReturned: a delegation with no opens is returned
// after the idle time.
func TestIdleDelegationReturned(t *testing.T) {
	a, b := twoNodes(t)
	b.delegIdle = 20 * time.Millisecond
	key := state.FileKey{Volume: 10, FileID: 11}
	delegate(t, a, b, key)
	for !returned(a, key) {
		waitFor(t, "the idle delegation's return")
	}
	admitted(t, a, open(key, rw, shareNone, newBreaks()))
	if a.Stats().Recalled.Load() != 0 {
		t.Fatal("the idle delegation had to be recalled")
	}
}

func returned(a *Router, key state.FileKey) bool {
	a.dg.mu.Lock()
	defer a.dg.mu.Unlock()
	return len(a.dg.grants[key]) == 0
}

// waitFor yields to the condition being waited on, failing after a
// generous bound.
func waitFor(t *testing.T, what string) {
	t.Helper()
	deadline, ok := t.Deadline()
	if ok && time.Until(deadline) < time.Second {
		t.Fatalf("gave up waiting for %s", what)
	}
	time.Sleep(5 * time.Millisecond)
}

// TestRecallRacesLocalOpens: opens and closes under a delegation go on at
// the holder while the owner recalls it again and again for no-sharing
// opens; whatever the interleaving, each conflicting open is refused
// exactly while the holder has the file open, and once everything is
// closed nothing of either side stays at the owner.
func TestRecallRacesLocalOpens(t *testing.T) {
	a, b := twoNodes(t)
	key := state.FileKey{Volume: 10, FileID: 12}
	delegate(t, a, b, key)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					if n >= 100 {
						return
					}
				default:
				}
				o := open(key, readData, shareAll, newBreaks())
				if _, err := b.Admit(context.Background(), o, state.Request{}, nil); err != nil {
					if !errors.Is(err, state.ErrSharingViolation) {
						t.Errorf("holder's open: %v", err)
					}
					continue
				}
				b.Drop(o)
			}
		}()
	}
	for range 100 {
		oa := open(key, rw, shareNone, newBreaks())
		if _, err := a.Admit(context.Background(), oa, state.Request{}, nil); err == nil {
			a.Drop(oa)
		} else if !errors.Is(err, state.ErrSharingViolation) {
			t.Errorf("owner's open: %v", err)
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("granted %d, recalled %d, opens under a delegation %d", a.Stats().Granted.Load(), a.Stats().Recalled.Load(), b.Stats().Delegated.Load())
	oa := open(key, rw, shareNone, newBreaks())
	if _, err := a.Admit(context.Background(), oa, state.Request{}, nil); err != nil {
		t.Fatalf("no-sharing open once the holder closed everything: %v", err)
	}
	if last, _ := a.Remove(oa); !last {
		t.Fatal("an open of the holder's stayed at the owner")
	}
	b.hs.mu.Lock()
	held := len(b.hs.held)
	b.hs.mu.Unlock()
	b.dg.mu.Lock()
	conv := len(b.dg.converting)
	b.dg.mu.Unlock()
	if held != 0 || conv != 0 {
		t.Fatalf("the holder still holds %d opens (%d converting)", held, conv)
	}
}

// TestDurableConvertsDelegatedOpen: before a durable open's record is
// written (HeldEntry), a delegated open becomes an ordinary one at the
// owner, which keeps a dead holder's durable opens from their records.
func TestDurableConvertsDelegatedOpen(t *testing.T) {
	a, b := twoNodes(t)
	key := state.FileKey{Volume: 10, FileID: 13}
	delegate(t, a, b, key)
	ob := admitted(t, b, open(key, readData, shareAll, newBreaks()))
	b.HeldEntry(ob)
	if b.isDelegated(ob) || a.own.lookup(b.ref(ob)) == nil {
		t.Fatal("a durable open is still delegated once its record is described")
	}
}

// TestRecallHoldsNoLock: while the owner waits for a holder to answer a
// recall, none of its holdings', owner's or delegations' mutexes is held (doc.go:
// no mutex is held across an RPC), and the recall ends once the holder
// answers.
func TestRecallHoldsNoLock(t *testing.T) {
	recalling, answer := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hold := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if d, ok := req.(*peerv1.DeliverRequest); ok && d.Recall != nil {
			once.Do(func() { close(recalling) })
			<-answer
		}
		return h(ctx, req)
	}
	a, b := twoNodesServing(t, grpc.UnaryInterceptor(hold))
	key := state.FileKey{Volume: 10, FileID: 14}
	delegate(t, a, b, key)
	admit := make(chan error, 1)
	go func() {
		_, err := a.Admit(context.Background(), open(key, rw, shareNone, newBreaks()), state.Request{}, nil)
		admit <- err
	}()
	<-recalling
	for !tryLocks(&a.hs.mu, &a.own.mu, &a.dg.mu) {
		waitFor(t, "the owner's locks while its recall waits for the holder")
	}
	close(answer)
	if err := <-admit; err != nil {
		t.Fatalf("no-sharing open once the idle delegation was recalled: %v", err)
	}
	if !returned(a, key) {
		t.Fatal("the recalled delegation still stands at the owner")
	}
}

// tryLocks reports whether each of mus could be locked (and unlocks it).
func tryLocks(mus ...*sync.Mutex) bool {
	for _, mu := range mus {
		if !mu.TryLock() {
			return false
		}
		mu.Unlock()
	}
	return true
}

// TestReturnOutlastsUnreachableOwner: a delegation whose owner does not
// answer is returned once it does, however many tries that takes — its
// opens become proxies at the owner, and its stand-in leaves — never
// given up with the stand-in left to go without them on its next recall.
// The owner's stream holds the tries unserved, then ends, losing them.
func TestReturnOutlastsUnreachableOwner(t *testing.T) {
	g := newGate()
	a, b := gatedNodes(t, g)
	b.returnTimeout, b.returnWait = 50*time.Millisecond, time.Millisecond
	key := state.FileKey{Volume: 10, FileID: 21}
	delegate(t, a, b, key)
	ob := admitted(t, b, open(key, readData, shareAll, newBreaks()))
	if !b.isDelegated(ob) {
		t.Fatal("the second plain open was not admitted under the delegation")
	}
	g.shut()
	converted := make(chan struct{})
	go func() { b.HeldEntry(ob); close(converted) }() // converts ob: its delegation goes back
	for b.Stats().ByOp[OpReturn].Load() < 8 {
		waitFor(t, "eight tries of the return while the owner does not answer")
	}
	if a.own.lookup(b.ref(ob)) != nil {
		t.Fatal("the owner has the open before any return reached it")
	}
	g.end() // the tries so far are lost with their stream
	for a.own.lookup(b.ref(ob)) == nil || !returned(a, key) {
		waitFor(t, "the return on a new stream: the open a proxy, the stand-in gone")
	}
	<-converted
}

// TestOwnerLostShardDuringRecallAdmitsNothing: an owner admitting an open
// that conflicts with a delegation recalls it; when the owner loses the
// shard meanwhile (fenced), the holder's return is refused as not the
// owner's and the stand-in goes without the delegated opens — the owner
// must not then grant the open on what it no longer answers for
// (robustness issue 4: two conflicting share modes admitted while the
// file's owner fenced).
func TestOwnerLostShardDuringRecallAdmitsNothing(t *testing.T) {
	mem := mesh.NewMemory()
	peers := map[string]string{}
	routes := map[string]*staticRoutes{}
	rs := map[string]*Router{}
	for _, name := range []string{"a", "b", "c"} {
		l := mem.Listen(name)
		peers[name] = l.Addr().String()
		routes[name] = &staticRoutes{self: name, owner: "a", peers: peers}
		rs[name] = newRouter(t, routes[name], mem.Dial)
		var opts []grpc.ServerOption
		if name == "b" {
			opts = append(opts, grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				if d, ok := req.(*peerv1.DeliverRequest); ok && d.Recall != nil {
					routes["a"].move("z", "") // the owner fences as it recalls
				}
				return h(ctx, req)
			}))
		}
		srv := grpc.NewServer(opts...)
		peerv1.RegisterPeerServiceServer(srv, rs[name].Service())
		go srv.Serve(l)
		t.Cleanup(func() { srv.Stop(); rs[name].Close() })
	}
	a, b, c := rs["a"], rs["b"], rs["c"]
	key := state.FileKey{Volume: 10, FileID: 22}
	b.Drop(admitted(t, b, open(key, readData, readData, newBreaks()))) // shares reading only: earns the delegation
	if a.Stats().Granted.Load() == 0 {
		t.Fatal("the owner granted no delegation for a plain open")
	}
	ob := admitted(t, b, open(key, readData, readData, newBreaks()))
	if !b.isDelegated(ob) {
		t.Fatal("the plain open was not admitted under the delegation")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	g, err := c.Admit(ctx, open(key, rw, shareNone, newBreaks()), state.Request{}, nil)
	if err == nil {
		t.Fatalf("an exclusive open was granted (%+v) while the holder's delegated open shares only reading, by an owner that lost the file's shard", g)
	}
}
