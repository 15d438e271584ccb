package etcdstore

import (
	"context"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/coordinator/store"
	"github.com/smbcluster/smbcluster/node/witness"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
)

var etcdEnv struct {
	once      sync.Once
	endpoints []string
	err       error
}

func client(t *testing.T) *clientv3.Client {
	t.Helper()
	etcdEnv.once.Do(func() {
		dir, err := os.MkdirTemp("", "witness-etcd")
		if err != nil {
			etcdEnv.err = err
			return
		}
		etcdEnv.endpoints, _, etcdEnv.err = store.StartEmbedded(dir)
	})
	if etcdEnv.err != nil {
		t.Fatal(etcdEnv.err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: etcdEnv.endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	if _, err := cli.Delete(t.Context(), statev1.Root, clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	return cli
}

func put(t *testing.T, cli *clientv3.Client, key string, m proto.Message, opts ...clientv3.OpOption) {
	t.Helper()
	b, _ := proto.Marshal(m)
	if _, err := cli.Put(t.Context(), key, string(b), opts...); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within 10 s", what)
		case <-tick.C:
		}
	}
}

// node runs a Store for a node named name with its own lease.
func node(t *testing.T, cli *clientv3.Client, name string, idle time.Duration) (*Store, *witness.Hub) {
	t.Helper()
	lease, err := cli.Grant(t.Context(), 30)
	if err != nil {
		t.Fatal(err)
	}
	hub := witness.NewHub()
	s := New(Config{Client: cli, Node: name, Hub: hub, Idle: idle,
		Lease: func() (clientv3.LeaseID, bool) { return lease.ID, true }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return s, hub
}

func TestStore(t *testing.T) {
	cli := client(t)
	for _, n := range []struct{ name, addr string }{{"n1", "192.0.2.1:445"}, {"n2", "192.0.2.2:445"}} {
		put(t, cli, statev1.NodeKey(n.name), &statev1.NodeRecord{Name: n.name, Addresses: []string{n.addr}})
		put(t, cli, statev1.NodeLiveKey(n.name), &statev1.NodeLiveRecord{Name: n.name})
	}
	s1, h1 := node(t, cli, "n1", time.Hour)
	_, h2 := node(t, cli, "n2", time.Hour)
	waitFor(t, "n2's hub sees both nodes", func() bool { return len(h2.Resources()) == 2 })

	// A registration taken by n1 is known to n2.
	reg := &witness.Registration{ID: "00112233445566778899aabbccddeeff", Version: witness.V2, NetName: "FILES",
		IP: net.ParseIP("192.0.2.2"), Client: "WIN", Node: "n1", Since: time.Now()}
	if err := s1.Register(t.Context(), reg); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "n2 mirrors the registration", func() bool { _, ok := h2.Get(reg.ID); return ok })

	// A move is queued on both; delivered by n2, it is withdrawn on n1.
	put(t, cli, statev1.WitnessMoveKey(reg.ID, 7), &statev1.WitnessMoveRecord{Kind: statev1.WitnessMoveRecord_KIND_CLIENT_MOVE, Addresses: []string{"192.0.2.1"}})
	n, err := h2.Wait(t.Context(), reg.ID)
	if err != nil || n.Type != witness.NotifyClientMove || !n.Addrs[0].IP.Equal(net.ParseIP("192.0.2.1")) {
		t.Fatalf("n2: %+v %v", n, err)
	}
	waitFor(t, "the delivered move's key deleted", func() bool {
		r, err := cli.Get(t.Context(), statev1.WitnessMovesOf(reg.ID), clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err == nil && r.Count == 0
	})
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	waitFor(t, "n1 withdrew the move", func() bool { _, err := h1.Wait(ended, reg.ID); return err == context.Canceled })

	// n2 dies: its live record goes; RESOURCE_CHANGE unavailable.
	if _, err := cli.Delete(t.Context(), statev1.NodeLiveKey("n2")); err != nil {
		t.Fatal(err)
	}
	n, err = h1.Wait(t.Context(), reg.ID)
	if err != nil || n.Type != witness.NotifyResourceChange || n.Resources[0].State != witness.ResourceUnavailable {
		t.Fatalf("n1 after n2's death: %+v %v", n, err)
	}

	// Unregister through n1: gone from n2.
	if err := s1.Unregister(t.Context(), reg.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "n2 forgets the registration", func() bool { _, ok := h2.Get(reg.ID); return !ok })
}

// TestStoreIdle: a registration nobody waits on is dropped after the idle
// time; one a client waits on is kept.
func TestStoreIdle(t *testing.T) {
	cli := client(t)
	s, h := node(t, cli, "n1", 300*time.Millisecond)
	kept := &witness.Registration{ID: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", IP: net.ParseIP("192.0.2.1"), Since: time.Now()}
	gone := &witness.Registration{ID: "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", IP: net.ParseIP("192.0.2.1"), Since: time.Now()}
	for _, r := range []*witness.Registration{kept, gone} {
		if err := s.Register(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	s.Waiting(kept.ID, true)
	waitFor(t, "the wait record", func() bool {
		r, err := cli.Get(t.Context(), statev1.WitnessWaitKey(kept.ID, "n1"))
		return err == nil && r.Count == 1
	})
	waitFor(t, "the idle registration dropped", func() bool {
		r, err := cli.Get(t.Context(), statev1.WitnessRegistrationKey(gone.ID))
		_, inHub := h.Get(gone.ID)
		return err == nil && r.Count == 0 && !inHub
	})
	if _, ok := h.Get(kept.ID); !ok {
		t.Error("a registration waited on was dropped")
	}
	s.Waiting(kept.ID, false)
	waitFor(t, "dropped once nobody waits", func() bool { _, ok := h.Get(kept.ID); return !ok })
}

// TestStoreNetName: the network name's record taken offline and back
// queues RESOURCE_CHANGE unavailable, then available, for a registration
// on every node, naming the net name it registered for.
func TestStoreNetName(t *testing.T) {
	cli := client(t)
	put(t, cli, statev1.NodeKey("n1"), &statev1.NodeRecord{Name: "n1", Addresses: []string{"192.0.2.1:445"}})
	put(t, cli, statev1.NodeLiveKey("n1"), &statev1.NodeLiveRecord{Name: "n1"})
	s1, h1 := node(t, cli, "n1", time.Hour)
	_, h2 := node(t, cli, "n2", time.Hour)
	reg := &witness.Registration{ID: "ffeeddccbbaa99887766554433221100", Version: witness.V1, NetName: "Files",
		IP: net.ParseIP("192.0.2.1"), Client: "WIN", Node: "n1", Since: time.Now()}
	if err := s1.Register(t.Context(), reg); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "n2 mirrors the registration", func() bool { _, ok := h2.Get(reg.ID); return ok })
	put(t, cli, statev1.NetNameKey(), &statev1.NetNameRecord{Offline: true, ChangedBy: "admin"})
	put(t, cli, statev1.NetNameKey(), &statev1.NetNameRecord{Offline: false, ChangedBy: "admin"})
	for _, h := range []*witness.Hub{h1, h2} {
		for _, want := range []uint32{witness.ResourceUnavailable, witness.ResourceAvailable} {
			n, err := h.Wait(t.Context(), reg.ID)
			if err != nil || n.Type != witness.NotifyResourceChange || n.Resources[0] != (witness.ResourceChange{Name: "Files", State: want}) {
				t.Fatalf("%+v %v, want state %#x", n, err, want)
			}
		}
	}
	if !h2.NetNameOnline() {
		t.Fatal("n2 holds the name offline")
	}
}

// TestRegisterDuringSync: a registration taken while the store syncs —
// after it read etcd, before it dropped what etcd did not hold — stays in
// the hub (TestStoreNetName's AsyncNotify on the registering node once
// found it gone: "no such registration"; the watch would have brought it
// back a moment later).
func TestRegisterDuringSync(t *testing.T) {
	cli := client(t)
	hub := witness.NewHub()
	s := New(Config{Client: cli, Node: "n1", Hub: hub, Idle: time.Hour,
		Lease: func() (clientv3.LeaseID, bool) { return 0, false }})
	reg := &witness.Registration{ID: "00112233445566778899aabbccddeeff", Version: witness.V1, NetName: "Files",
		IP: net.ParseIP("192.0.2.1"), Client: "WIN", Node: "n1", Since: time.Now()}
	kept := make(chan bool, 1)
	s.syncing = func(stage int) {
		switch stage {
		case syncRead:
			if err := s.Register(t.Context(), reg); err != nil {
				t.Error(err)
			}
		case syncDropped:
			_, ok := hub.Get(reg.ID)
			kept <- ok
			s.syncing = nil
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	if !<-kept {
		t.Fatal("the sync dropped the registration taken after it read etcd")
	}
}
