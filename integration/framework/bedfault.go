package framework

import (
	"strconv"
	"strings"
	"testing"
)

// Faults of a bed's network, as separate machines have them: a host cut
// off from some others (a partition), made inside the host's own network
// namespace with nftables, so that nothing outside the bed is touched.

// faultTable is the nftables table a host's faults are rules of.
const faultTable = "smbcfault"

// CutOff drops every packet between h and each of hosts, both ways, in
// h's network namespace (the partition is h's: the other hosts keep
// reaching each other and everything else). Packets are dropped, not
// refused: a connection across the cut hangs, as on a partitioned
// network, rather than ending at once. The cut is undone by Heal, and
// when the test ends.
func (h *Host) CutOff(t testing.TB, hosts ...*Host) {
	t.Helper()
	var addrs []string
	for _, o := range hosts {
		addrs = append(addrs, o.Addr)
	}
	h.DropAddrs(t, addrs...)
}

// Lossy drops percent of the packets h sends and receives, at random
// (nftables' numgen, in h's network namespace), until Heal: a lossy link.
// tc netem would delay packets too, but not every kernel the bed runs on
// has sch_netem; nftables is there wherever the bed is.
func (h *Host) Lossy(t testing.TB, percent int) {
	t.Helper()
	h.faultTable(t)
	for _, c := range []string{"input", "output"} {
		h.MustExec(t, "nft", "add", "rule", "inet", faultTable, c, "numgen", "random", "mod", "100", "<", strconv.Itoa(percent), "drop")
	}
}

// faultTable makes h's table of fault rules unless it is there.
func (h *Host) faultTable(t testing.TB) {
	t.Helper()
	if h.Exec(t, "nft", "list", "table", "inet", faultTable).ExitCode != 0 {
		h.MustExec(t, "nft", "add", "table", "inet", faultTable)
		for _, c := range []string{"input", "output"} {
			h.MustExec(t, "nft", "add", "chain", "inet", faultTable, c,
				"{ type filter hook "+c+" priority -10 ; policy accept ; }")
		}
		t.Cleanup(func() { h.heal(t) })
	}
}

// DropAddrs drops every packet between h and the IPv4 addresses addrs,
// both ways, in h's network namespace, until Heal (or the test's end).
func (h *Host) DropAddrs(t testing.TB, addrs ...string) {
	t.Helper()
	if len(addrs) == 0 {
		return
	}
	h.faultTable(t)
	set := "{ " + strings.Join(addrs, ", ") + " }"
	h.MustExec(t, "nft", "add", "rule", "inet", faultTable, "input", "ip", "saddr", set, "drop")
	h.MustExec(t, "nft", "add", "rule", "inet", faultTable, "output", "ip", "daddr", set, "drop")
}

// Heal undoes every CutOff, DropAddrs, Lossy and Delay of h.
func (h *Host) Heal(t testing.TB) {
	t.Helper()
	h.heal(t)
	h.undelay(t)
}

func (h *Host) heal(t testing.TB) {
	if h.Exec(t, "nft", "list", "table", "inet", faultTable).ExitCode == 0 {
		h.MustExec(t, "nft", "delete", "table", "inet", faultTable)
	}
}

// OtherNodeHosts returns the node hosts but node host i's (0-based): the
// peers to cut it off from (Host.CutOff).
func (b *Bed) OtherNodeHosts(i int) []*Host {
	var hs []*Host
	for j, h := range b.Hosts {
		if j != i {
			hs = append(hs, h)
		}
	}
	return hs
}
