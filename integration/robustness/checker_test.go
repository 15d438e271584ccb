package robustness

import (
	"strings"
	"testing"
	"time"
)

// The checker on histories written by hand: it passes what is allowed and
// reports each kind of violation.

func at(a, b int) (time.Duration, time.Duration) {
	return time.Duration(a) * time.Millisecond, time.Duration(b) * time.Millisecond
}

func reg(kind Kind, client int, value string, from, to int, out Outcome) Op {
	c, r := at(from, to)
	return Op{Client: client, Kind: kind, File: "r", Value: value, Call: c, Return: r, Outcome: out}
}

func hold(client int, excl bool, from, to int) Op {
	f, e := at(from, to)
	return Op{Client: client, Kind: Hold, File: "h", Excl: excl, Call: f, From: f, To: e, Return: e, Outcome: OK, Held: true}
}

func incr(client int, read int64, from, to int, out Outcome) Op {
	c, r := at(from, to)
	return Op{Client: client, Kind: Increment, File: "n", Count: read, Call: c, Return: r, Outcome: out}
}

func final(v int64, when int) Op {
	c, r := at(when, when+1)
	return Op{Client: -1, Kind: FinalRead, File: "n", Count: v, Call: c, Return: r, Outcome: OK}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []Op
		want string // the start of the one violation's text; "" for none
	}{
		{"register read after write", []Op{
			reg(RegWrite, 0, "a", 0, 10, OK), reg(RegRead, 1, "a", 20, 30, OK)}, ""},
		{"register concurrent read sees either", []Op{
			reg(RegWrite, 0, "a", 0, 10, OK), reg(RegWrite, 0, "b", 20, 40, OK), reg(RegRead, 1, "a", 25, 30, OK)}, ""},
		{"register stale read", []Op{
			reg(RegWrite, 0, "a", 0, 10, OK), reg(RegWrite, 0, "b", 20, 30, OK), reg(RegRead, 1, "a", 40, 50, OK)},
			"register r is not linearizable: the read answered at 50ms"},
		{"register unknown write may land late", []Op{
			reg(RegWrite, 0, "a", 0, 10, Unknown), reg(RegWrite, 1, "b", 20, 30, OK), reg(RegRead, 1, "a", 40, 50, OK)}, ""},
		{"register failed write never lands", []Op{
			reg(RegWrite, 0, "a", 0, 10, Failed), reg(RegRead, 1, "a", 40, 50, OK)}, "register r is not linearizable"},
		{"shared holds overlap", []Op{hold(0, false, 0, 100), hold(1, false, 50, 150)}, ""},
		{"exclusive holds in turn", []Op{hold(0, true, 0, 100), hold(1, true, 101, 150)}, ""},
		{"exclusive beside shared", []Op{hold(0, false, 0, 100), hold(1, true, 50, 150)}, "conflicting share modes held at once on h"},
		{"counter in order", []Op{incr(0, 0, 0, 10, OK), incr(1, 1, 20, 30, OK), final(2, 40)}, ""},
		{"counter lost update", []Op{incr(0, 0, 0, 10, OK), incr(1, 0, 5, 30, OK)}, "lost update on n"},
		{"counter unknown may have landed", []Op{incr(0, 0, 0, 10, Unknown), incr(1, 1, 20, 30, OK), final(2, 40)}, ""},
		{"counter below acknowledged", []Op{incr(0, 0, 0, 10, OK), incr(1, 1, 20, 30, OK), final(1, 40)}, "counter n ends at 1 after 2"},
		{"counter above attempted", []Op{incr(0, 0, 0, 10, OK), final(3, 40)}, "counter n ends at 3 after 1"},
		{"counter locked after the run", []Op{incr(0, 0, 0, 10, OK),
			{Client: -1, Kind: FinalRead, File: "n", Outcome: Failed, Err: "STATUS_FILE_LOCK_CONFLICT, 1m0s after the run"}},
			"counter n cannot be read after the run"},
		{"request unanswered", []Op{{Kind: RegRead, File: "r", Outcome: Unknown, TimedOut: true}}, "no answer within the request bound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(tc.ops, []Fault{{Kind: "kill", Target: "node1", Start: 0, Undo: time.Second, Recovered: 2 * time.Second}})
			switch {
			case tc.want == "" && len(r.Violations) > 0:
				t.Errorf("violations of an allowed history:\n%v", r.Violations)
			case tc.want != "" && len(r.Violations) != 1:
				t.Errorf("%d violations, want one (%s): %v", len(r.Violations), tc.want, r.Violations)
			case tc.want != "" && !strings.HasPrefix(r.Violations[0].What, tc.want):
				t.Errorf("violation %q, want %q", r.Violations[0].What, tc.want)
			case tc.want != "" && len(r.Violations[0].Faults) != 1:
				t.Errorf("violation without the fault in force: %v", r.Violations[0])
			}
		})
	}
}

func TestStalls(t *testing.T) {
	ops := []Op{
		{Client: 0, Outcome: OK, Return: 1 * time.Second},
		{Client: 0, Outcome: OK, Return: 9 * time.Second},
		{Client: 1, Outcome: OK, Return: 4 * time.Second},
		{Client: 1, Outcome: OK, Return: 5 * time.Second},
	}
	got := Stalls(ops, []Fault{{Kind: "pause", Start: 2 * time.Second, Undo: 6 * time.Second, Recovered: 7 * time.Second}})
	if got["pause"] != 7*time.Second {
		t.Errorf("longest stall %v, want 7s (client 0, from the fault's start at 2s to its next success at 9s)", got["pause"])
	}
}

func TestKnownIssue(t *testing.T) {
	v := Violation{What: "counter c: a byte-range lock outlived its open: LOCK refused from 1s on", At: time.Second}
	if k := KnownIssue(v); k != "" {
		t.Errorf("known without a fault in force: %s", k)
	}
	v.Faults = []Fault{{Kind: "lossy-link"}, {Kind: "cut-peers"}}
	if k := KnownIssue(v); k != "" {
		t.Errorf("known with faults that fence no node: %s", k)
	}
	v.Faults = []Fault{{Kind: "cut-etcd"}}
	if k := KnownIssue(v); !strings.Contains(k, "outlives its open") {
		t.Errorf("a lock that outlived its open at a fence: %q", k)
	}
	// An empty read at a fence was the client reading a lost
	// connection as a file's end (docs/ROBUSTNESS.md, issue 3): no
	// longer excused.
	empty := Op{Kind: RegRead, File: "r", Value: "", Return: time.Second, Outcome: OK}
	v = Violation{What: "register r is not linearizable: the read answered at 1s cannot be explained", At: time.Second,
		Ops: []Op{empty}, Faults: []Fault{{Kind: "cut-etcd"}}}
	if k := KnownIssue(v); k != "" {
		t.Errorf("known for an empty read: %s", k)
	}
}
