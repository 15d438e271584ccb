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

// nodes starts routers named names over gRPC on an in-memory mesh, every
// shard owned by owner.
func nodes(t testing.TB, owner string, names ...string) map[string]*Router {
	t.Helper()
	peers := map[string]string{}
	out := map[string]*Router{}
	mem := mesh.NewMemory() // in memory: no sockets
	for _, name := range names {
		l := mem.Listen(name)
		peers[name] = l.Addr().String()
		rt := &staticRoutes{self: name, owner: owner, peers: peers}
		r := newRouter(t, rt, mem.Dial)
		srv := grpc.NewServer()
		peerv1.RegisterPeerServiceServer(srv, r.Service())
		go srv.Serve(l)
		t.Cleanup(func() { srv.Stop(); r.Close() })
		out[name] = r
	}
	return out
}

// TestTakeDurable: a durable open held by one node is taken over by
// another, whichever of the three (holder, taker, a third node) owns the
// file; its share modes and byte-range lock stay in force throughout,
// and close with the new holder's close.
func TestTakeDurable(t *testing.T) {
	for _, tc := range []struct{ owner, holder, taker, other string }{
		{"a", "b", "c", "a"}, // the owner is neither
		{"a", "a", "b", "c"}, // the holder owns the file
		{"a", "b", "a", "c"}, // the taker owns the file
	} {
		t.Run(tc.holder+"-to-"+tc.taker+"-owner-"+tc.owner, func(t *testing.T) {
			rs := nodes(t, tc.owner, "a", "b", "c")
			holder, taker, other := rs[tc.holder], rs[tc.taker], rs[tc.other]
			key := state.FileKey{Volume: 1, FileID: 99}
			ctx := context.Background()
			lock := []state.Lock{{Offset: 100, Length: 10, Exclusive: true}}
			oh := open(key, rw, 1, newBreaks()) // shares read only
			if _, err := holder.Admit(ctx, oh, state.Request{}, nil); err != nil {
				t.Fatal(err)
			}
			if err := holder.Lock(oh, lock); err != nil {
				t.Fatal(err)
			}
			refused := func(when string) {
				t.Helper()
				if _, err := other.Admit(ctx, open(key, rw, shareAll, newBreaks()), state.Request{}, nil); !errors.Is(err, state.ErrSharingViolation) {
					t.Errorf("%s: a writer's open through %s: %v, want a sharing violation", when, tc.other, err)
				}
			}
			refused("before the handover")
			holder.SetDurableHolder(func(_ context.Context, q state.DurableQuery, to state.HolderRef) (state.Handover, error) {
				if q.FileID != 7 {
					return state.Handover{}, state.ErrNoDurable
				}
				c, locks, err := holder.GiveUp(oh, to)
				return state.Handover{Rec: state.DurableRecord{Key: key}, Name: "x.txt", Access: rw, ShareAccess: 1,
					Caching: c, Locks: locks}, err
			}, nil, nil)
			ot, h, err := taker.TakeDurable(ctx, state.DurableQuery{FileID: 7})
			if err != nil {
				t.Fatal(err)
			}
			if len(h.Locks) != 1 || h.Locks[0] != lock[0] {
				t.Errorf("handed over locks %v, want %v", h.Locks, lock)
			}
			ot.Breaker = newBreaks()
			refused("after the handover")
			reader := open(key, 0x1, shareAll, newBreaks())
			if _, err := other.Admit(ctx, reader, state.Request{}, nil); err != nil {
				t.Fatal(err)
			}
			if err := other.Lock(reader, []state.Lock{{Offset: 105, Length: 1}}); !errors.Is(err, state.ErrLockNotGranted) {
				t.Errorf("a lock through %s of the range the taken-over open holds: %v, want not granted", tc.other, err)
			}
			if _, _, err := taker.TakeDurable(ctx, state.DurableQuery{FileID: 8}); !errors.Is(err, state.ErrNoDurable) {
				t.Errorf("an open nobody holds: %v, want ErrNoDurable", err)
			}
			taker.Release(ot)
			taker.Remove(ot)
			if err := other.Lock(reader, []state.Lock{{Offset: 105, Length: 1}}); err != nil {
				t.Errorf("lock after the new holder closed the open: %v", err)
			}
			if _, err := other.Admit(ctx, open(key, rw, shareAll, newBreaks()), state.Request{}, nil); err != nil {
				t.Errorf("a writer's open after the new holder closed the open: %v", err)
			}
		})
	}
}

// fakeRecords is the etcd records of durable opens, in memory.
type fakeRecords struct {
	mu   sync.Mutex
	recs []Orphan
}

func (f *fakeRecords) Orphans(_ context.Context, node string) ([]Orphan, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Orphan
	for _, o := range f.recs {
		if node == "" || o.Node == node {
			out = append(out, o)
		}
	}
	return out, nil
}

func (f *fakeRecords) Forget(node string, fileID uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, o := range f.recs {
		if o.Node == node && o.FileID == fileID {
			f.recs = append(f.recs[:i], f.recs[i+1:]...)
			return
		}
	}
}

// TestOrphanTakeover: the holder of a durable open dies; the file's
// owner keeps the open's share modes and lock (it has the open's record)
// until a reconnect through another node takes it over from the record.
// Without a record the dead holder's open is dropped.
func TestOrphanTakeover(t *testing.T) {
	rs := nodes(t, "a", "a", "b", "c")
	owner, holder, taker := rs["a"], rs["b"], rs["c"]
	recs := &fakeRecords{}
	for _, r := range rs {
		r.SetDurableRecords(recs)
	}
	ctx := context.Background()
	key := state.FileKey{Volume: 1, FileID: 5}
	lock := []state.Lock{{Offset: 0, Length: 10, Exclusive: true}}
	od := open(key, rw, 1, newBreaks()) // durable, shares read only
	plain := open(state.FileKey{Volume: 1, FileID: 6}, rw, 0, newBreaks())
	for _, o := range []*state.Open{od, plain} {
		if _, err := holder.Admit(ctx, o, state.Request{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := holder.Lock(od, lock); err != nil {
		t.Fatal(err)
	}
	recs.recs = []Orphan{{Node: "b", Epoch: 1, Ref: od.Ref, FileID: 77, Path: "x.txt", Key: key, Access: rw, Share: 1,
		Locks: lock, Rec: state.DurableRecord{Share: "s", User: "u", Timeout: time.Minute}}}

	// b dies.
	peers := holder.routes.(*staticRoutes)
	peers.mu.Lock()
	delete(peers.peers, "b")
	peers.mu.Unlock()
	owner.DropNode("b", 0)

	writer := func(k state.FileKey) error {
		_, err := taker.Admit(ctx, open(k, rw, shareAll, newBreaks()), state.Request{}, nil)
		return err
	}
	if err := writer(key); !errors.Is(err, state.ErrSharingViolation) {
		t.Errorf("a writer's open of the dead holder's durable open's file: %v, want a sharing violation", err)
	}
	if err := writer(plain.Key); err != nil {
		t.Errorf("a writer's open of the dead holder's other open's file: %v", err)
	}
	q := state.DurableQuery{FileID: 77, Share: "s", User: "u", Name: "x.txt"}
	if _, _, err := taker.TakeDurable(ctx, state.DurableQuery{FileID: 77, Share: "s", User: "v"}); err == nil {
		t.Error("another user took the durable open over")
	}
	ot, h, err := taker.TakeDurable(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Locks) != 1 || h.Locks[0] != lock[0] {
		t.Errorf("taken over with locks %v, want %v", h.Locks, lock)
	}
	if len(recs.recs) != 0 {
		t.Errorf("the dead holder's record is still there after the takeover: %+v", recs.recs)
	}
	if err := writer(key); !errors.Is(err, state.ErrSharingViolation) {
		t.Errorf("after the takeover: a writer's open: %v, want a sharing violation", err)
	}
	taker.Release(ot)
	taker.Remove(ot)
	if err := writer(key); err != nil {
		t.Errorf("after the new holder closed it: a writer's open: %v", err)
	}
}

// TestOrphanKeepsOnReadBreak: a dead holder's durable open whose lease
// was broken to read caching loses it to another client's write — a
// break that needs no acknowledgment — and stays for its client.
func TestOrphanKeepsOnReadBreak(t *testing.T) {
	rs := nodes(t, "a", "a", "b", "c")
	owner, holder, taker := rs["a"], rs["b"], rs["c"]
	recs := &fakeRecords{}
	for _, r := range rs {
		r.SetDurableRecords(recs)
	}
	ctx := context.Background()
	key := state.FileKey{Volume: 1, FileID: 8}
	lease := state.LeaseID{Client: [16]byte{1}, Key: [16]byte{2}}
	od := open(key, rw, shareAll, newBreaks())
	if _, err := holder.Admit(ctx, od, state.Request{Lease: &state.LeaseRequest{ID: lease, State: state.LeaseRead, Version: 2}}, nil); err != nil {
		t.Fatal(err)
	}
	recs.recs = []Orphan{{Node: "b", Epoch: 1, Ref: od.Ref, FileID: 88, Path: "x.txt", Key: key, Access: rw, Share: shareAll,
		Caching: state.Caching{State: state.LeaseRead, Lease: true, ID: lease, Version: 2},
		Rec:     state.DurableRecord{Share: "s", User: "u", Timeout: time.Minute}}}
	peers := holder.routes.(*staticRoutes)
	peers.mu.Lock()
	delete(peers.peers, "b")
	peers.mu.Unlock()
	owner.DropNode("b", 0)

	w := open(key, rw, shareAll, newBreaks())
	if _, err := taker.Admit(ctx, w, state.Request{}, nil); err != nil {
		t.Fatal(err)
	}
	taker.BreakRead(key, w) // a write through c
	taker.Remove(w)
	if _, _, err := taker.TakeDurable(ctx, state.DurableQuery{FileID: 88, Share: "s", User: "u", Name: "x.txt",
		HasLease: true, LeaseKey: lease.Key, ClientGUID: lease.Client}); err != nil {
		t.Errorf("reconnect after a write revoked the orphan's read caching: %v", err)
	}
}

// TestDetachOutlastsUnreachableOwner: a durable open whose connection is
// lost while its node cannot reach the file's owner stays detached (a
// refusal would close it, and its client's reconnect be refused through
// every node once the owner is back); the owner is asked again once it
// answers, and its refusal — a break in progress — scavenges the open
// as a break of a detached open does.
func TestDetachOutlastsUnreachableOwner(t *testing.T) {
	for _, breaking := range []bool{false, true} {
		t.Run(map[bool]string{false: "Kept", true: "BreakInProgress"}[breaking], func(t *testing.T) {
			g := newGate()
			a, b := gatedNodes(t, g)
			b.detachWait = 100 * time.Millisecond
			key := state.FileKey{Volume: 10, FileID: 31}
			held := open(key, rw, shareAll, newBreaks())
			lease := &state.LeaseRequest{ID: state.LeaseID{Key: [16]byte{1}}, State: state.LeaseRead | state.LeaseHandle, Version: 2}
			if _, err := b.Admit(context.Background(), held, state.Request{Lease: lease}, nil); err != nil {
				t.Fatal(err)
			}
			if breaking {
				// An open through the owner that does not share
				// with the lease's handle caching breaks it; the
				// holder's client never acknowledges.
				go a.Admit(context.Background(), open(key, rw, shareNone, newBreaks()), state.Request{}, nil)
				<-held.Breaker.(*breaks).lease
			}
			g.shut()
			scavenged := newBreaks()
			if !b.Detach(held, scavenged) {
				t.Fatal("the detach was refused while the owner could not be asked")
			}
			g.end() // the owner answers from now on
			for b.hs.isDetaching(held) {
				waitFor(t, "the owner's answer to the detach asked again")
			}
			if breaking {
				// The refusal scavenges right after the open stops
				// waiting for its answer: wait for it, not a moment.
				select {
				case <-scavenged.oplock:
				case <-time.After(time.Until(deadlineOf(t))):
					t.Error("the owner's refusal (a break in progress) did not scavenge the open")
				}
				return
			}
			select {
			case <-scavenged.oplock:
				t.Error("the owner's acceptance scavenged the open")
			default:
			}
		})
	}
}

// deadlineOf is a second before t's deadline, or a minute from now
// without one: how long a test waits for what must come.
func deadlineOf(t *testing.T) time.Time {
	if d, ok := t.Deadline(); ok {
		return d.Add(-time.Second)
	}
	return time.Now().Add(time.Minute)
}
