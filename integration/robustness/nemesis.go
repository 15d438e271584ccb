package robustness

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
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
var FaultKinds = []string{"kill", "pause", "cut-peers", "cut-etcd", "cut-both", "etcd-leader-kill", "etcd-partition", "lossy-link", "delay", "clock-step"}

// etcdKinds are the faults of an etcd member: two of them at once would
// take etcd's quorum, a fault of another order, so a pair has one at most.
var etcdKinds = []string{"etcd-leader-kill", "etcd-partition"}

// pairOneIn: one step in pairOneIn injects two faults at once.
const pairOneIn = 4

// Planned is one fault of the schedule: its kind, its target and how
// long it is held, drawn from the seed.
type Planned struct {
	Kind string
	// Node is the target node (0-based) of a node's fault; for
	// etcd-partition, the etcd member. etcd-leader-kill's target is
	// the leader of the moment.
	Node int
	Hold time.Duration
	// Delay and Jitter are a delayed link's; Offset a clock step's.
	Delay, Jitter, Offset time.Duration
}

func (p Planned) String() string {
	s := fmt.Sprintf("%s %d hold %v", p.Kind, p.Node, ms(p.Hold))
	switch p.Kind {
	case "delay":
		s += fmt.Sprintf(" %v±%v", ms(p.Delay), ms(p.Jitter))
	case "clock-step":
		s += fmt.Sprintf(" %+v", p.Offset)
	}
	return s
}

// Step is one step of the schedule: a quiet gap, then one fault, or two
// at once on different targets, each undone at the end of its own hold.
type Step struct {
	Gap    time.Duration
	Faults []Planned
}

// Schedule deals the nemesis's steps from its seeded generator: the
// kinds come as a shuffled deck, every kind once before any twice, so
// that a short run meets most of them; one step in pairOneIn takes the
// next card too, for a second fault at once. The steps are a function of
// the seed and the bed's shape alone.
type Schedule struct {
	rng          *rand.Rand
	nodes, etcds int
	ttl          time.Duration
	kinds        []string // the kinds dealt (FaultKinds, or Only's)
	deck         []string
}

// NewSchedule is the schedule of seed for a bed of nodes nodes and etcds
// etcd members whose nodes' lease TTL is ttl.
func NewSchedule(seed uint64, nodes, etcds int, ttl time.Duration) *Schedule {
	return &Schedule{rng: rand.New(rand.NewPCG(seed, 0x6e656d65736973)), nodes: nodes, etcds: etcds, ttl: ttl, kinds: FaultKinds}
}

// Only deals kinds alone (a run that reproduces one kind's finding); it
// fails on a kind the nemesis does not know.
func (s *Schedule) Only(kinds []string) error {
	for _, k := range kinds {
		if !slices.Contains(FaultKinds, k) {
			return fmt.Errorf("no fault kind %q (the kinds: %s)", k, strings.Join(FaultKinds, ", "))
		}
	}
	s.kinds, s.deck = slices.Clone(kinds), nil
	return nil
}

// card is the deck's next kind.
func (s *Schedule) card() string {
	if len(s.deck) == 0 {
		s.deck = slices.Clone(s.kinds)
		s.rng.Shuffle(len(s.deck), func(i, j int) { s.deck[i], s.deck[j] = s.deck[j], s.deck[i] })
	}
	k := s.deck[0]
	s.deck = s.deck[1:]
	return k
}

// Next is the schedule's next step.
func (s *Schedule) Next() Step {
	st := Step{Gap: time.Duration(1000+s.rng.IntN(3000)) * time.Millisecond}
	first := s.plan(s.card(), -1)
	st.Faults = []Planned{first}
	if s.rng.IntN(pairOneIn) == 0 {
		k := s.card()
		if slices.Contains(etcdKinds, k) && slices.Contains(etcdKinds, first.Kind) {
			s.deck = append(s.deck, k) // dealt later, alone
			return st
		}
		not := -1
		if !slices.Contains(etcdKinds, first.Kind) {
			not = first.Node
		}
		st.Faults = append(st.Faults, s.plan(k, not))
	}
	return st
}

// between returns a duration drawn uniformly from [lo, hi).
func (s *Schedule) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(s.rng.Int64N(int64(hi-lo)))
}

// plan draws a fault of kind: its target (a node other than not, if
// not >= 0) and its hold.
func (s *Schedule) plan(kind string, not int) Planned {
	p := Planned{Kind: kind}
	switch {
	case kind == "etcd-partition":
		p.Node = s.rng.IntN(s.etcds)
	case not >= 0:
		p.Node = s.rng.IntN(s.nodes - 1)
		if p.Node >= not {
			p.Node++
		}
	default:
		p.Node = s.rng.IntN(s.nodes)
	}
	ttl := s.ttl
	switch kind {
	case "kill":
		p.Hold = s.between(time.Second, 4*time.Second)
	case "pause":
		p.Hold = ttl + s.between(time.Second, 3*time.Second)
	case "cut-peers", "etcd-partition":
		p.Hold = s.between(2*time.Second, 8*time.Second)
	case "cut-etcd", "cut-both":
		p.Hold = ttl + s.between(time.Second, 4*time.Second)
	case "etcd-leader-kill":
		p.Hold = s.between(time.Second, 5*time.Second)
	case "lossy-link":
		p.Hold = s.between(3*time.Second, 8*time.Second)
	case "delay":
		p.Hold = s.between(3*time.Second, 8*time.Second)
		p.Delay = s.between(50*time.Millisecond, 300*time.Millisecond)
		p.Jitter = p.Delay / 4
	case "clock-step":
		p.Hold = s.between(4*time.Second, 12*time.Second)
		p.Offset = s.between(2*time.Second, 30*time.Second).Round(100 * time.Millisecond)
		if s.rng.IntN(2) == 0 {
			p.Offset = -p.Offset
		}
	}
	return p
}

// Nemesis injects faults into a bed as its Schedule deals them, every
// fault of a step undone before the next step's gap.
type Nemesis struct {
	bed   *framework.Bed
	hist  *History
	sched *Schedule

	// Faults are the faults injected so far; Problems what went wrong
	// beyond the history's promises (the cluster not recovering).
	Faults   []Fault
	Problems []string
}

// NewNemesis is a nemesis of bed with the schedule of seed.
func NewNemesis(bed *framework.Bed, hist *History, seed uint64) *Nemesis {
	return &Nemesis{bed: bed, hist: hist, sched: NewSchedule(seed, len(bed.Hosts), len(bed.EtcdHosts), bed.LeaseTTL)}
}

// Only makes the nemesis inject kinds alone (Schedule.Only).
func (n *Nemesis) Only(kinds []string) error { return n.sched.Only(kinds) }

// Run injects faults until d has passed (the last step may end after
// it) and leaves every fault undone.
func (n *Nemesis) Run(t testing.TB, d time.Duration) {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		st := n.sched.Next()
		n.gap(st.Gap)
		if !time.Now().Before(end) {
			break
		}
		n.step(t, st.Faults)
	}
}

// gap waits d between faults: the schedule's nature, not a wait for a
// state.
func (n *Nemesis) gap(d time.Duration) {
	<-time.After(d)
}

// injected is a fault in force: its record and its undoing.
type injected struct {
	f    Fault
	hold time.Duration
	undo func()
}

// step injects the faults of one step, holds each for its hold, undoes
// each at its end, and waits until the cluster serves normally again.
func (n *Nemesis) step(t testing.TB, plan []Planned) {
	t.Helper()
	var in []*injected
	for _, p := range plan {
		if f := n.inject(t, p); f != nil {
			in = append(in, f)
		}
	}
	if len(in) == 0 {
		return
	}
	if len(in) == 2 {
		in[0].f.With, in[1].f.With = in[1].f.Kind+" "+in[1].f.Target, in[0].f.Kind+" "+in[0].f.Target
	}
	slices.SortStableFunc(in, func(a, b *injected) int { return cmp.Compare(a.f.Start+a.hold, b.f.Start+b.hold) })
	for _, f := range in {
		if d := f.f.Start + f.hold - n.hist.Now(); d > 0 {
			n.gap(d)
		}
		f.undo()
		f.f.Undo = n.hist.Now()
	}
	recovered := n.recovered(t, in[len(in)-1].f)
	for _, f := range in {
		f.f.Recovered = recovered
		n.Faults = append(n.Faults, f.f)
		t.Logf("fault %v", f.f)
	}
}

// inject starts the fault p and returns it in force; nil if it could not
// be (no etcd leader to kill).
func (n *Nemesis) inject(t testing.TB, p Planned) *injected {
	t.Helper()
	b := n.bed
	i := p.Node
	f := &injected{f: Fault{Kind: p.Kind, Target: "node" + strconv.Itoa(i+1)}, hold: p.Hold}
	f.f.Start = n.hist.Now()
	switch p.Kind {
	case "kill":
		b.KillNode(t, i)
		f.undo = func() { b.RestartNode(t, i) }
	case "pause":
		if err := b.Nodes[i].Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		f.undo = n.once(t, func() {
			if err := b.Nodes[i].Signal(syscall.SIGCONT); err != nil {
				t.Error(err)
			}
		})
	case "cut-peers":
		b.Hosts[i].CutOff(t, b.OtherNodeHosts(i)...)
		f.undo = func() { b.Hosts[i].Heal(t) }
	case "cut-etcd":
		b.Hosts[i].CutOff(t, b.EtcdHosts...)
		f.undo = func() { b.Hosts[i].Heal(t) }
	case "cut-both":
		b.Hosts[i].CutOff(t, append(b.OtherNodeHosts(i), b.EtcdHosts...)...)
		f.undo = func() { b.Hosts[i].Heal(t) }
	case "etcd-leader-kill":
		l := b.EtcdLeader(t)
		if l < 0 {
			n.Problems = append(n.Problems, fmt.Sprintf("at %v: no etcd leader to kill", ms(f.f.Start)))
			return nil
		}
		f.f.Target = b.EtcdHosts[l].Name
		b.EtcdMembers[l].Kill()
		f.undo = func() { b.EtcdMembers[l].Restart(t) }
	case "etcd-partition":
		h := b.EtcdHosts[i]
		f.f.Target = h.Name
		var others []*framework.Host
		for _, o := range append(slices.Clone(b.EtcdHosts), b.Hosts...) {
			if o != h {
				others = append(others, o)
			}
		}
		h.CutOff(t, others...)
		f.undo = func() { h.Heal(t) }
	case "lossy-link":
		b.Hosts[i].Lossy(t, lossPercent)
		f.undo = func() { b.Hosts[i].Heal(t) }
	case "delay":
		b.Hosts[i].Delay(t, p.Delay, p.Jitter)
		f.f.Detail = fmt.Sprintf("%v±%v", ms(p.Delay), ms(p.Jitter))
		f.undo = func() { b.Hosts[i].Heal(t) }
	case "clock-step":
		b.StepClock(t, i, p.Offset)
		f.f.Detail = fmt.Sprintf("%+v", p.Offset)
		f.undo = n.once(t, func() { b.StepClock(t, i, 0) })
	default:
		t.Fatalf("robustness: no fault %q", p.Kind)
	}
	return f
}

// once returns undo to be called once, by the nemesis or, if a failure
// ended the test first, when the test ends: a stopped node or a stepped
// clock outlives the test's run on a bed the next run shares. (The
// network faults' rules are the framework's to remove at the end.)
func (n *Nemesis) once(t testing.TB, undo func()) func() {
	var done bool
	t.Cleanup(func() {
		if !done {
			undo()
		}
	})
	return func() {
		if !done {
			done = true
			undo()
		}
	}
}

// recovered waits until every node is up and serves its own public
// address and every etcd member answers, RecoverBound at most, and
// returns when (zero if it did not); f is the fault undone last.
func (n *Nemesis) recovered(t testing.TB, f Fault) time.Duration {
	t.Helper()
	deadline := time.Now().Add(RecoverBound)
	for {
		if n.serving(t) {
			return n.hist.Now()
		}
		if time.Now().After(deadline) {
			n.Problems = append(n.Problems, fmt.Sprintf("%v: the cluster did not serve normally within %v of the undo", f, RecoverBound))
			return 0
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

// Paired is Stalls' key of the faults injected two at once.
const Paired = "two at once"

// Stalls returns, for each fault kind, the longest a client went without
// a successful operation in the window of a fault of that kind injected
// alone (its start to its recovery): the gap between two successes that
// overlaps the window, counted from the fault's start. The windows of
// faults injected two at once count under Paired, not under either kind:
// a stall there is the pair's.
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
		key := f.Kind
		if f.With != "" {
			key = Paired
		}
		end := f.Recovered
		if end == 0 {
			end = f.Undo + RecoverBound
		}
		for _, ts := range done {
			prev := time.Duration(0)
			for _, t := range ts {
				if t > f.Start && prev < end {
					stalls[key] = max(stalls[key], t-max(prev, f.Start))
				}
				prev = t
			}
		}
	}
	return stalls
}
