package robustness

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/integration/framework"
)

// RecoverBound is how long the cluster may take, after a fault is undone,
// to serve normally again (every node up and serving its own address)
// before the nemesis reports it and goes on.
const RecoverBound = 60 * time.Second

// lossPercent is the share of packets a lossy link drops.
const lossPercent = 10

// FaultKinds are the nemesis's faults, in the order the tables list them.
var FaultKinds = []string{"kill", "pause", "cut-peers", "cut-etcd", "cut-both", "etcd-leader-kill", "etcd-partition", "lossy-link"}

// Nemesis injects faults into a bed, one at a time, each undone before
// the next: a fault kind, a target and a duration drawn from its seeded
// generator, then a quiet gap. The kinds come as a shuffled deck, every
// kind once before any twice, so that a short run meets most of them.
type Nemesis struct {
	bed  *framework.Bed
	hist *History
	rng  *rand.Rand

	// Faults are the faults injected so far; Problems what went wrong
	// beyond the history's promises (the cluster not recovering).
	Faults   []Fault
	Problems []string
}

// NewNemesis is a nemesis of bed with the schedule of seed.
func NewNemesis(bed *framework.Bed, hist *History, seed uint64) *Nemesis {
	return &Nemesis{bed: bed, hist: hist, rng: rand.New(rand.NewPCG(seed, 0x6e656d65736973))}
}

// Run injects faults until d has passed (the last fault may end after
// it) and leaves every fault undone.
func (n *Nemesis) Run(t testing.TB, d time.Duration) {
	t.Helper()
	end := time.Now().Add(d)
	var deck []string
	for time.Now().Before(end) {
		n.gap(time.Duration(1000+n.rng.IntN(3000)) * time.Millisecond)
		if !time.Now().Before(end) {
			break
		}
		if len(deck) == 0 {
			deck = slices.Clone(FaultKinds)
			n.rng.Shuffle(len(deck), func(i, j int) { deck[i], deck[j] = deck[j], deck[i] })
		}
		n.one(t, deck[0])
		deck = deck[1:]
	}
}

// gap waits d between faults: the schedule's nature, not a wait for a
// state.
func (n *Nemesis) gap(d time.Duration) {
	<-time.After(d)
}

// between returns a duration drawn uniformly from [lo, hi).
func (n *Nemesis) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(n.rng.Int64N(int64(hi-lo)))
}

// one injects a fault of kind, holds it, undoes it and waits until the
// cluster serves normally again.
func (n *Nemesis) one(t testing.TB, kind string) {
	t.Helper()
	b := n.bed
	ttl := b.LeaseTTL
	i := n.rng.IntN(len(b.Hosts))
	node := "node" + strconv.Itoa(i+1)
	f := Fault{Kind: kind, Target: node}
	var undo func()
	var hold time.Duration
	f.Start = n.hist.Now()
	switch kind {
	case "kill":
		b.KillNode(t, i)
		hold, undo = n.between(time.Second, 4*time.Second), func() { b.RestartNode(t, i) }
	case "pause":
		if err := b.Nodes[i].Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		hold = ttl + n.between(time.Second, 3*time.Second)
		undo = func() {
			if err := b.Nodes[i].Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
		}
	case "cut-peers":
		b.Hosts[i].CutOff(t, b.OtherNodeHosts(i)...)
		hold, undo = n.between(2*time.Second, 8*time.Second), func() { b.Hosts[i].Heal(t) }
	case "cut-etcd":
		b.Hosts[i].CutOff(t, b.EtcdHosts...)
		hold, undo = ttl+n.between(time.Second, 4*time.Second), func() { b.Hosts[i].Heal(t) }
	case "cut-both":
		b.Hosts[i].CutOff(t, append(b.OtherNodeHosts(i), b.EtcdHosts...)...)
		hold, undo = ttl+n.between(time.Second, 4*time.Second), func() { b.Hosts[i].Heal(t) }
	case "etcd-leader-kill":
		l := b.EtcdLeader(t)
		if l < 0 {
			n.Problems = append(n.Problems, fmt.Sprintf("at %v: no etcd leader to kill", ms(f.Start)))
			return
		}
		f.Target = b.EtcdHosts[l].Name
		b.EtcdMembers[l].Kill()
		hold, undo = n.between(time.Second, 5*time.Second), func() { b.EtcdMembers[l].Restart(t) }
	case "etcd-partition":
		j := n.rng.IntN(len(b.EtcdHosts))
		h := b.EtcdHosts[j]
		f.Target = h.Name
		var others []*framework.Host
		for _, o := range append(slices.Clone(b.EtcdHosts), b.Hosts...) {
			if o != h {
				others = append(others, o)
			}
		}
		h.CutOff(t, others...)
		hold, undo = n.between(2*time.Second, 8*time.Second), func() { h.Heal(t) }
	case "lossy-link":
		b.Hosts[i].Lossy(t, lossPercent)
		hold, undo = n.between(3*time.Second, 8*time.Second), func() { b.Hosts[i].Heal(t) }
	default:
		t.Fatalf("robustness: no fault %q", kind)
	}
	n.gap(hold)
	undo()
	f.Undo = n.hist.Now()
	n.recovered(t, &f)
	n.Faults = append(n.Faults, f)
	t.Logf("fault %v", f)
}

// recovered waits until every node is up and serves its own public
// address and every etcd member answers, RecoverBound at most.
func (n *Nemesis) recovered(t testing.TB, f *Fault) {
	t.Helper()
	deadline := time.Now().Add(RecoverBound)
	for {
		if n.serving(t) {
			f.Recovered = n.hist.Now()
			return
		}
		if time.Now().After(deadline) {
			n.Problems = append(n.Problems, fmt.Sprintf("%v: the cluster did not serve normally within %v of the undo", f, RecoverBound))
			return
		}
		<-time.After(250 * time.Millisecond) // a poll of the cluster's state
	}
}

// serving reports whether every node is up and serves its own public
// address, and every etcd member answers.
func (n *Nemesis) serving(t testing.TB) bool {
	b := n.bed
	for i, nd := range b.Nodes {
		l := b.NodeListed(t, nd.Name)
		if l.State != "up" || !slices.Contains(l.Serving, b.PublicAddr(i)) {
			return false
		}
	}
	for i := range b.EtcdMembers {
		if !b.EtcdMemberHealthy(t, i) {
			return false
		}
	}
	return true
}

// Stalls returns, for each fault kind, the longest a client went without
// a successful operation in the window of a fault of that kind (its
// start to its recovery): the gap between two successes that overlaps
// the window, counted from the fault's start.
func Stalls(ops []Op, faults []Fault) map[string]time.Duration {
	done := map[int][]time.Duration{}
	for _, o := range ops {
		if o.Outcome == OK && o.Client >= 0 {
			done[o.Client] = append(done[o.Client], o.Return)
		}
	}
	for c := range done {
		slices.Sort(done[c])
	}
	stalls := map[string]time.Duration{}
	for _, f := range faults {
		end := f.Recovered
		if end == 0 {
			end = f.Undo + RecoverBound
		}
		for _, ts := range done {
			prev := time.Duration(0)
			for _, t := range ts {
				if t > f.Start && prev < end {
					stalls[f.Kind] = max(stalls[f.Kind], t-max(prev, f.Start))
				}
				prev = t
			}
		}
	}
	return stalls
}
