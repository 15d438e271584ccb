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

func durable(persistent, reconnected bool, chunks ...Chunk) Op {
	c, r := at(0, 100)
	return Op{Client: 0, Kind: Durable, File: "d", Persistent: persistent, Chunks: chunks, Reconnected: reconnected,
		ReconnNode: 1, Call: c, Return: r, Outcome: OK}
}

func chunk(off int64, value string, out Outcome, got string) Chunk {
	return Chunk{Off: off, Value: value, Outcome: out, Read: true, Got: got}
}

func publish(client int, value string, from, to int, out Outcome) Op {
	c, r := at(from, to)
	return Op{Client: client, Kind: Publish, File: "n", Value: value, Temp: "t", Call: c, Return: r, Outcome: out}
}

func del(client int, from, to int, out Outcome) Op {
	c, r := at(from, to)
	return Op{Client: client, Kind: Delete, File: "n", Call: c, Return: r, Outcome: out}
}

// nameRead is a read of name n that found value, or no file if value is
// "-".
func nameRead(client int, value string, from, to int) Op {
	c, r := at(from, to)
	o := Op{Client: client, Kind: NameRead, File: "n", Call: c, Return: r, Outcome: OK, Found: value != "-"}
	if o.Found {
		o.Value = value
	}
	return o
}

func chanOp(kind Kind, value string, from, to int, out Outcome) Op {
	c, r := at(from, to)
	return Op{Client: 0, Kind: kind, File: "m", Value: value, Call: c, Return: r, Outcome: out, Node2: 1}
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
		{"durable chunks read back", []Op{durable(false, true, chunk(0, "a", OK, "a"), chunk(16, "b", OK, "b"))}, ""},
		{"durable chunk lost", []Op{durable(false, true, chunk(0, "a", OK, "a"), chunk(16, "b", OK, ""))},
			"a durable open of d lost an acknowledged write: offset 16"},
		{"persistent chunk lost", []Op{durable(true, true, chunk(0, "a", OK, "x"))}, "a persistent open of d lost"},
		{"durable chunk unanswered may be lost", []Op{durable(false, true, chunk(0, "a", OK, "a"), chunk(16, "b", Unknown, ""))}, ""},
		{"durable not reconnected is counted, not a violation", []Op{durable(false, false, chunk(0, "a", OK, ""))}, ""},
		{"name published and read", []Op{publish(0, "a", 0, 10, OK), nameRead(1, "a", 20, 30)}, ""},
		{"name none at first", []Op{nameRead(1, "-", 0, 10), publish(0, "a", 20, 30, OK)}, ""},
		{"name deleted reads none", []Op{publish(0, "a", 0, 10, OK), del(1, 20, 30, OK), nameRead(2, "-", 40, 50)}, ""},
		{"name deleted and published again", []Op{publish(0, "a", 0, 10, OK), del(1, 20, 30, OK),
			publish(0, "b", 35, 45, OK), nameRead(2, "b", 50, 60)}, ""},
		{"name deleted but openable", []Op{publish(0, "a", 0, 10, OK), del(1, 20, 30, OK), nameRead(2, "a", 40, 50)},
			"name n (published by rename, deleted) is not linearizable: the read answered at 50ms"},
		{"name renamed over but old value read", []Op{publish(0, "a", 0, 10, OK), publish(1, "b", 20, 30, OK), nameRead(2, "a", 40, 50)},
			"name n (published by rename, deleted) is not linearizable"},
		{"name rename acknowledged but none read", []Op{publish(0, "a", 0, 10, OK), nameRead(2, "-", 40, 50)},
			"name n (published by rename, deleted) is not linearizable"},
		{"name delete of unknown outcome may land late", []Op{publish(0, "a", 0, 10, OK), del(1, 20, 30, Unknown),
			nameRead(2, "a", 40, 50), nameRead(2, "-", 60, 70)}, ""},
		{"name refused delete never lands", []Op{publish(0, "a", 0, 10, OK), del(1, 20, 30, Failed), nameRead(2, "-", 40, 50)},
			"name n (published by rename, deleted) is not linearizable"},
		{"name delete during a publish", []Op{publish(0, "a", 0, 30, OK), del(1, 10, 20, OK), nameRead(2, "a", 40, 50)}, ""},
		{"rename left its old name", []Op{func() Op { o := publish(0, "a", 0, 10, OK); o.TempFound = true; return o }()},
			"the rename of t to n was acknowledged, and its old name still opened"},
		{"channel read back", []Op{chanOp(ChanWrite, "a", 0, 10, OK), chanOp(ChanRead, "a", 11, 20, OK),
			chanOp(ChanWrite, "b", 30, 40, OK), chanOp(ChanRead, "b", 41, 50, OK)}, ""},
		{"channel read back stale", []Op{chanOp(ChanWrite, "a", 0, 10, OK), chanOp(ChanWrite, "b", 30, 40, OK), chanOp(ChanRead, "a", 41, 50, OK)},
			"a write read back through another channel: file m is not linearizable: the read answered at 50ms"},
		{"channel unknown write may land", []Op{chanOp(ChanWrite, "a", 0, 10, Unknown), chanOp(ChanWrite, "b", 30, 40, OK), chanOp(ChanRead, "a", 41, 50, OK)}, ""},
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
	// A read that did not wait for a write cached under a lease, at a
	// fence (issue 9): known; without a cached write among its
	// operations, or without a fencing fault, not.
	cached := Op{Kind: RegWrite, File: "r", Value: "c00-1", Cached: true, Return: time.Second, Outcome: OK}
	v.Ops = []Op{cached, empty}
	if k := KnownIssue(v); !strings.Contains(k, "issue 9") {
		t.Errorf("a read past a cached write at a fence: %q", k)
	}
	v.Faults = []Fault{{Kind: "cut-peers"}}
	if k := KnownIssue(v); k != "" {
		t.Errorf("known with only a cut from the peers in force: %s", k)
	}
}

// A durable chunk's value fills its chunk exactly: a longer one would
// overlap the next chunk and read back cut short.
func TestChunkValue(t *testing.T) {
	for _, c := range [][3]int{{0, 0, 0}, {5, 123456789, 2}, {99, 999999999, durableChunks - 1}} {
		if v := chunkValue(c[0], c[1], c[2]); len(v) != chunkSize {
			t.Errorf("chunk value %q is %d bytes, want %d", v, len(v), chunkSize)
		}
	}
}
