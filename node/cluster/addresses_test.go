package cluster

import (
	"fmt"
	"testing"
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
