package robustness

import (
	"reflect"
	"slices"
	"testing"
	"time"
)

// The nemesis's schedule, without a bed: its deck, its pairs and its
// determinism.

func steps(seed uint64, n int) []Step {
	s := NewSchedule(seed, 3, 3, 3*time.Second)
	var out []Step
	for range n {
		out = append(out, s.Next())
	}
	return out
}

func TestScheduleDeck(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 99} {
		var dealt []string
		for _, st := range steps(seed, len(FaultKinds)) {
			for _, p := range st.Faults {
				dealt = append(dealt, p.Kind)
			}
		}
		first := dealt[:len(FaultKinds)]
		for _, k := range FaultKinds {
			if n := countOf(first, k); n != 1 {
				t.Errorf("seed %d: %s dealt %d times in the first %d faults %v, want once", seed, k, n, len(FaultKinds), first)
			}
		}
	}
	for _, k := range []string{"delay", "clock-step"} {
		if !slices.Contains(FaultKinds, k) {
			t.Errorf("%s is not in the deck", k)
		}
	}
}

func countOf(ks []string, k string) int {
	n := 0
	for _, x := range ks {
		if x == k {
			n++
		}
	}
	return n
}

func TestScheduleDeterministic(t *testing.T) {
	a, b := steps(7, 200), steps(7, 200)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two schedules of seed 7 differ")
	}
	if reflect.DeepEqual(a, steps(8, 200)) {
		t.Fatal("seeds 7 and 8 give the same schedule")
	}
}

func TestSchedulePairs(t *testing.T) {
	const n = 2000
	pairs := 0
	for _, st := range steps(1, n) {
		if st.Gap < time.Second || st.Gap >= 4*time.Second {
			t.Errorf("gap %v", st.Gap)
		}
		for _, p := range st.Faults {
			switch p.Kind {
			case "delay":
				if p.Delay < 50*time.Millisecond || p.Delay >= 300*time.Millisecond || p.Jitter != p.Delay/4 {
					t.Errorf("delay %v", p)
				}
			case "clock-step":
				if off := p.Offset.Abs(); off < 2*time.Second || off > 30*time.Second {
					t.Errorf("clock step %v", p)
				}
			}
			if p.Hold <= 0 || p.Node < 0 || p.Node > 2 {
				t.Errorf("fault %v", p)
			}
		}
		if len(st.Faults) != 2 {
			continue
		}
		pairs++
		a, b := st.Faults[0], st.Faults[1]
		ea, eb := slices.Contains(etcdKinds, a.Kind), slices.Contains(etcdKinds, b.Kind)
		switch {
		case ea && eb:
			t.Errorf("two etcd faults at once: %v", st.Faults)
		case !ea && !eb && a.Node == b.Node:
			t.Errorf("two faults of one node at once: %v", st.Faults)
		}
	}
	if pairs < n/pairOneIn*3/4 || pairs > n/pairOneIn*5/4 {
		t.Errorf("%d pairs in %d steps, want about one in %d", pairs, n, pairOneIn)
	}
	// Every kind is in pairs, with both kinds of target.
	paired := map[string]bool{}
	for _, st := range steps(1, n) {
		if len(st.Faults) == 2 {
			paired[st.Faults[0].Kind], paired[st.Faults[1].Kind] = true, true
		}
	}
	for _, k := range FaultKinds {
		if !paired[k] {
			t.Errorf("%s never in a pair", k)
		}
	}
}

// A stall in the window of two faults at once is the pair's, not either
// kind's; the faults in force at a violation name both.
func TestStallsOfAPair(t *testing.T) {
	ops := []Op{
		{Client: 0, Outcome: OK, Return: 1 * time.Second},
		{Client: 0, Outcome: OK, Return: 9 * time.Second},
		{Client: 0, Outcome: OK, Return: 20 * time.Second},
		{Client: 0, Outcome: OK, Return: 22 * time.Second},
	}
	faults := []Fault{
		{Kind: "pause", Target: "node1", Start: 2 * time.Second, Undo: 6 * time.Second, Recovered: 7 * time.Second, With: "cut-etcd node2"},
		{Kind: "cut-etcd", Target: "node2", Start: 2 * time.Second, Undo: 5 * time.Second, Recovered: 7 * time.Second, With: "pause node1"},
		{Kind: "pause", Target: "node3", Start: 21 * time.Second, Undo: 21500 * time.Millisecond, Recovered: 21600 * time.Millisecond},
	}
	got := Stalls(ops, faults)
	if got[Paired] != 7*time.Second {
		t.Errorf("the pair's stall %v, want 7s", got[Paired])
	}
	if got["pause"] != time.Second || got["cut-etcd"] != 0 {
		t.Errorf("stalls of the kinds alone %v, want pause 1s and no cut-etcd", got)
	}
	r := Check([]Op{incr(0, 0, 3000, 3010, OK), incr(1, 0, 3005, 3020, OK)}, faults)
	if len(r.Violations) != 1 || len(r.Violations[0].Faults) != 2 {
		t.Fatalf("want one violation with both faults of the pair in force: %v", r.Violations)
	}
	if KnownIssue(Violation{What: "counter c: a byte-range lock outlived its open", Faults: faults[:2]}) == "" {
		t.Error("a pair with a fencing fault is not a fencing fault in force")
	}
}

// TestScheduleOnly: a schedule told to deal some kinds deals those alone
// (pairs included), and refuses a kind it does not know.
func TestScheduleOnly(t *testing.T) {
	s := NewSchedule(3, 3, 3, 3*time.Second)
	if err := s.Only([]string{"cut-etcd", "kill"}); err != nil {
		t.Fatal(err)
	}
	for range 40 {
		for _, f := range s.Next().Faults {
			if f.Kind != "cut-etcd" && f.Kind != "kill" {
				t.Fatalf("dealt %q, want only cut-etcd and kill", f.Kind)
			}
		}
	}
	if err := s.Only([]string{"flood"}); err == nil {
		t.Fatal("a kind the nemesis does not know was taken")
	}
}
