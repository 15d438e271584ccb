package peer

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"

	"github.com/smbcluster/smbcluster/node/mesh"
	"github.com/smbcluster/smbcluster/node/state"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
)

// TestRebuildKeepsAnUnacknowledgedBreak: the owner broke a write lease
// held through node b and died before the client acknowledged; the new
// owner rebuilds the lease with the caching the break took (the client
// may still hold unflushed writes), so that the next conflicting open
// breaks it again and waits for the acknowledgment. Before, b reported
// the break's target, and the next read went on before the client's
// cached write was flushed (robustness seed 1, a register read through
// node3 returned the value before a cached write while node1, the file's
// owner, fenced).
func TestRebuildKeepsAnUnacknowledgedBreak(t *testing.T) {
	mem := mesh.NewMemory()
	peers := map[string]string{}
	routes := map[string]*staticRoutes{}
	rs := map[string]*Router{}
	servers := map[string]*grpc.Server{}
	listeners := map[string]net.Listener{}
	for _, name := range []string{"a", "b", "c"} {
		listeners[name] = mem.Listen(name)
		peers[name] = listeners[name].Addr().String()
	}
	for _, name := range []string{"a", "b", "c"} {
		rt := &staticRoutes{self: name, owner: "a", peers: peers}
		r := newRouter(t, rt, mem.Dial)
		srv := grpc.NewServer()
		peerv1.RegisterPeerServiceServer(srv, r.Service())
		go srv.Serve(listeners[name])
		t.Cleanup(func() { srv.Stop(); r.Close() })
		routes[name], rs[name], servers[name] = rt, r, srv
	}
	a, b, c := rs["a"], rs["b"], rs["c"]
	key := state.FileKey{Volume: 3, FileID: 30}
	ctx := context.Background()
	br := newBreaks()
	id := state.LeaseID{Client: [16]byte{7}, Key: [16]byte{8}}
	rwh := uint32(state.LeaseRead | state.LeaseWrite | state.LeaseHandle)
	ob := open(key, rw, shareAll, br)
	if g, err := b.Admit(ctx, ob, state.Request{Lease: &state.LeaseRequest{ID: id, State: rwh, Version: 2}}, nil); err != nil || g.Lease == nil || g.Lease.State != rwh {
		t.Fatalf("RWH lease: %+v, %v", g, err)
	}
	// A conflicting open through the owner breaks the lease; the client
	// has not acknowledged when the owner dies.
	ctxA, cancelA := context.WithCancel(ctx)
	go a.Admit(ctxA, open(key, 1, shareAll, newBreaks()), state.Request{}, nil)
	if lb := <-br.lease; lb.To&state.LeaseWrite != 0 || !lb.AckRequired {
		t.Fatalf("first break %+v, want write caching taken, acknowledged", lb)
	}
	cancelA()
	servers["a"].Stop()
	mem.Stop("a")
	for _, n := range []string{"b", "c"} {
		routes[n].move("c", "a")
	}
	if err := c.Recover(ctx, ShardOf(key)); err != nil {
		t.Fatal(err)
	}
	// A read through the new owner must wait for the client.
	done := make(chan error, 1)
	go func() {
		_, err := c.Admit(ctx, open(key, 1, shareAll, newBreaks()), state.Request{}, nil)
		done <- err
	}()
	select {
	case lb := <-br.lease:
		if lb.To&state.LeaseWrite != 0 {
			t.Fatalf("second break %+v: write caching kept", lb)
		}
		if _, err := b.AckLease(id, lb.To); err != nil {
			t.Fatalf("acknowledgment of the new owner's break: %v", err)
		}
	case err := <-done:
		t.Fatalf("the read through the new owner went on (%v) with the client's write caching unacknowledged", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// threeNodes starts routers a, b and c over an in-memory mesh, every
// shard owned by a; each router's routes can be moved (staticRoutes.move).
func threeNodes(t *testing.T) (map[string]*Router, map[string]*staticRoutes) {
	t.Helper()
	mem := mesh.NewMemory()
	peers := map[string]string{}
	listeners := map[string]net.Listener{}
	names := []string{"a", "b", "c"}
	for _, name := range names {
		listeners[name] = mem.Listen(name)
		peers[name] = listeners[name].Addr().String()
	}
	rs, routes := map[string]*Router{}, map[string]*staticRoutes{}
	for _, name := range names {
		rt := &staticRoutes{self: name, owner: "a", peers: peers}
		r := newRouter(t, rt, mem.Dial)
		srv := grpc.NewServer()
		peerv1.RegisterPeerServiceServer(srv, r.Service())
		go srv.Serve(listeners[name])
		t.Cleanup(func() { srv.Stop(); r.Close() })
		rs[name], routes[name] = r, rt
	}
	return rs, routes
}

// TestRetakenShardForgetsStaleOpens: node a owned a file's shard, lost it
// (fenced) to c, and the open holding a lock of the file closed there; a
// takes the shard back and rebuilds it from what the nodes hold — not
// over what it kept from before: the closed open's lock must not stay in
// force (ROBUSTNESS.md issue 2: every LOCK of a counter refused after its
// owner rejoined), nor its share modes. The open was another node's (b: a kept its proxy) or
// a's own (a kept its entries from when the file was its own).
func TestRetakenShardForgetsStaleOpens(t *testing.T) {
	for _, holder := range []string{"b", "a"} {
		t.Run("held by "+holder, func(t *testing.T) {
			rs, routes := threeNodes(t)
			h, other := rs[holder], rs["b"]
			if holder == "b" {
				other = rs["c"]
			}
			key := state.FileKey{Volume: 4, FileID: 40}
			ctx := context.Background()
			o, lock := lockedOpen(t, h, key)
			moveTo := func(owner string) {
				for _, rt := range routes {
					rt.move(owner, "")
				}
				if err := rs[owner].Recover(ctx, ShardOf(key)); err != nil {
					t.Fatal(err)
				}
			}
			moveTo("c") // a fenced: c rebuilds the shard
			if _, err := h.Unlock(o, lock); err != nil {
				t.Fatal(err)
			}
			h.Release(o)
			h.Drop(o)
			moveTo("a") // a joined again and takes its shard back
			o2 := open(key, rw, shareAll, newBreaks())
			if _, err := other.Admit(ctx, o2, state.Request{}, nil); err != nil {
				t.Fatal(err)
			}
			if err := other.Lock(o2, lock); err != nil {
				t.Fatalf("the range the closed open had locked, after its owner took the shard back: %v", err)
			}
			other.Release(o2)
			other.Drop(o2)
			// Nor its share modes: an open sharing nothing is admitted.
			if _, err := other.Admit(ctx, open(key, rw, 0, newBreaks()), state.Request{}, nil); err != nil {
				t.Fatalf("an exclusive open after the closed open's owner took the shard back: %v", err)
			}
		})
	}
}

// TestFormerOwnerReadsPastItsStaleLocks: a node that owned a file's shard
// and fenced keeps the locks its table had; another node takes the shard
// and the lock is let go there. A READ through the former owner of a
// file it no longer owns, with no locks announced, does not check its own
// table: the robustness suite's final read through node1 met such a lock
// for a minute after the run, while every increment through the other
// nodes was granted the range.
func TestFormerOwnerReadsPastItsStaleLocks(t *testing.T) {
	rs, routes := threeNodes(t)
	a, b := rs["a"], rs["b"]
	key := state.FileKey{Volume: 4, FileID: 41}
	ctx := context.Background()
	o, lock := lockedOpen(t, b, key) // granted at a, the owner
	for _, rt := range routes {
		rt.move("c", "") // a fenced: c rebuilds the shard
	}
	if err := rs["c"].Recover(ctx, ShardOf(key)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Unlock(o, lock); err != nil {
		t.Fatal(err)
	}
	b.Release(o)
	b.Drop(o)
	if !a.locks.HasLocks(key) {
		t.Fatal("the former owner's table has no lock left: the test shows nothing")
	}
	ro := open(key, readData, shareAll, newBreaks())
	if _, err := a.Admit(ctx, ro, state.Request{}, nil); err != nil {
		t.Fatal(err)
	}
	if err := a.CheckIO(ro, 0, 20, false); err != nil {
		t.Fatalf("a READ through the former owner after the lock was let go at the new owner: %v", err)
	}
}

// lockedOpen opens key through h, sharing all, and locks its first 20
// bytes exclusively; it returns the open and the lock.
func lockedOpen(t *testing.T, h *Router, key state.FileKey) (*state.Open, []state.Lock) {
	t.Helper()
	lock := []state.Lock{{Offset: 0, Length: 20, Exclusive: true}}
	o := open(key, rw, shareAll, newBreaks())
	if _, err := h.Admit(context.Background(), o, state.Request{}, nil); err != nil {
		t.Fatal(err)
	}
	if err := h.Lock(o, lock); err != nil {
		t.Fatal(err)
	}
	return o, lock
}
