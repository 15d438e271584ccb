package cluster

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
)

func homes(n int) []homeAddr {
	var out []homeAddr
	for i := 1; i <= n; i++ {
		out = append(out, homeAddr{addr: fmt.Sprintf("10.0.0.%d:445", i), home: fmt.Sprintf("n%d", i)})
	}
	return out
}

func set(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

// TestAssignAddressesHome: every live, non-draining node holds its own
// addresses.
func TestAssignAddressesHome(t *testing.T) {
	got := assignAddresses(homes(3), set("n1", "n2", "n3"), nil)
	for _, h := range homes(3) {
		if got[h.addr] != h.home {
			t.Errorf("%s → %q, want its home %s", h.addr, got[h.addr], h.home)
		}
	}
}

// TestAssignAddressesBalanced: the addresses of nodes that are down or
// draining spread over the others, at most one apart, the same whatever
// order the view was built in.
func TestAssignAddressesBalanced(t *testing.T) {
	addrs := homes(7)
	addrs = append(addrs, homeAddr{"10.0.1.1:445", "n1"}, homeAddr{"10.0.1.7:445", "n7"}, homeAddr{"10.0.1.6:445", "n6"})
	eligible := set("n1", "n2", "n3")
	got := assignAddresses(addrs, eligible, nil)
	load := map[string]int{}
	for _, h := range addrs {
		n := got[h.addr]
		if !eligible[n] {
			t.Fatalf("%s → %q, not an eligible node", h.addr, n)
		}
		if eligible[h.home] && n != h.home {
			t.Errorf("%s → %s, want its live home %s", h.addr, n, h.home)
		}
		load[n]++
	}
	if lo, hi := min(load["n1"], load["n2"], load["n3"]), max(load["n1"], load["n2"], load["n3"]); hi-lo > 1 {
		t.Errorf("loads %v: not balanced", load)
	}
	for range 20 { // map order varies: the answer must not
		again := assignAddresses(addrs, set("n3", "n2", "n1"), nil)
		for a, n := range got {
			if again[a] != n {
				t.Fatalf("%s → %s, then %s", a, n, again[a])
			}
		}
	}
}

// TestAssignAddressesKeepsHolder: an orphan stays with its current holder
// while that one is among the least loaded, so a change elsewhere does
// not move it.
func TestAssignAddressesKeepsHolder(t *testing.T) {
	addrs := homes(3)
	for _, holder := range []string{"n1", "n2"} {
		got := assignAddresses(addrs, set("n1", "n2"), map[string]string{"10.0.0.3:445": holder})
		if got["10.0.0.3:445"] != holder {
			t.Errorf("held by %s: → %s", holder, got["10.0.0.3:445"])
		}
	}
}

// TestAssignAddressesNobody: with no eligible node nothing is assigned.
func TestAssignAddressesNobody(t *testing.T) {
	if got := assignAddresses(homes(2), set(), nil); len(got) != 0 {
		t.Errorf("assigned %v with no live node", got)
	}
}

// addrWorld records which nodes serve which public address, as the
// nodes' PublicAddresses report it, and every moment two served one.
type addrWorld struct {
	mu       sync.Mutex
	serving  map[string]map[string]uint64 // address → node → epoch
	overlaps []string
}

func (w *addrWorld) node(name string) PublicAddresses { return worldNode{w, name} }

// servedBy returns the nodes serving addr.
func (w *addrWorld) servedBy(addr string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for n := range w.serving[addr] {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

type worldNode struct {
	w    *addrWorld
	name string
}

func (n worldNode) Serve(addr string, epoch uint64) {
	n.w.mu.Lock()
	defer n.w.mu.Unlock()
	if n.w.serving[addr] == nil {
		n.w.serving[addr] = map[string]uint64{}
	}
	for other := range n.w.serving[addr] {
		if other != n.name {
			n.w.overlaps = append(n.w.overlaps, fmt.Sprintf("%s served by %s while %s served it", addr, n.name, other))
		}
	}
	n.w.serving[addr][n.name] = epoch
}

func (n worldNode) Stop(addr string) {
	n.w.mu.Lock()
	defer n.w.mu.Unlock()
	delete(n.w.serving[addr], n.name)
}

func (n worldNode) Fenced(epoch uint64) {
	n.w.mu.Lock()
	defer n.w.mu.Unlock()
	for _, by := range n.w.serving {
		if e, ok := by[n.name]; ok && e <= epoch {
			delete(by, n.name)
		}
	}
}

// startPublic runs an agent for e whose node was admitted with public
// address pub and serves its addresses in w; stop ends it as a killed
// node's lease would end (Leave revokes the lease).
func (e *env) startPublic(w *addrWorld, pub string) (stop func()) {
	e.t.Helper()
	e.token = e.admit(e.name, pub)
	a, err := New(Config{
		Endpoints: endpoints(e.t), Name: e.name, JoinToken: e.token, Sealer: e.sealer,
		LeaseTTL: 2 * time.Second, SyncInterval: 50 * time.Millisecond,
	}, Node{Server: e.srv, Control: e.control, Shares: e.shares, Users: e.users, Addresses: w.node(e.name)})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := a.Join(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan struct{})
	go func() {
		a.Run(ctx)
		close(finished)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-finished
			a.Leave(context.Background())
		})
	}
	e.t.Cleanup(stop)
	return stop
}

// TestPublicAddressesMove: two agents serve their own public address;
// one draining gives its address to the other and gets it back when
// resumed; one leaving (its lease revoked, as a dead node's expires)
// gives it up too. At no moment do two nodes serve one address: a node
// gives an address up (stops serving) before its record goes, and takes
// one (serves) only after its record is its own.
func TestPublicAddressesMove(t *testing.T) {
	w := &addrWorld{serving: map[string]map[string]uint64{}}
	one, two := newEnv(t, "pa-one"), newEnv(t, "pa-two")
	const addrOne, addrTwo = "192.0.2.101:445", "192.0.2.102:445"
	one.startPublic(w, addrOne)
	stopTwo := two.startPublic(w, addrTwo)
	servedBy := func(addr string, want ...string) func() bool {
		return func() bool { return slices.Equal(w.servedBy(addr), want) }
	}
	waitFor(t, "each node serving its own address", func() bool {
		return servedBy(addrOne, "pa-one")() && servedBy(addrTwo, "pa-two")()
	})

	rec := &statev1.NodeRecord{Name: "pa-two", Addresses: []string{addrTwo}, JoinTokenSha256: statev1.HashJoinToken(two.token), Draining: true}
	two.put(statev1.NodeKey("pa-two"), rec)
	waitFor(t, "pa-one serving pa-two's address while pa-two drains", servedBy(addrTwo, "pa-one"))
	rec.Draining = false
	two.put(statev1.NodeKey("pa-two"), rec)
	waitFor(t, "pa-two serving its address again once resumed", servedBy(addrTwo, "pa-two"))

	stopTwo()
	waitFor(t, "pa-one serving pa-two's address once pa-two is gone", servedBy(addrTwo, "pa-one"))
	waitFor(t, "pa-one still serving its own", servedBy(addrOne, "pa-one"))
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, o := range w.overlaps {
		t.Error(o)
	}
}
