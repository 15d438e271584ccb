package robustness

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Kind is what an operation did.
type Kind int

const (
	// RegWrite writes a unique value over a register file.
	RegWrite Kind = iota
	// RegRead reads a register file.
	RegRead
	// Increment reads a counter under an exclusive byte-range lock and
	// writes it back plus one.
	Increment
	// Hold opens a file by share mode (exclusive, or read shared with
	// readers), holds it a moment and closes it.
	Hold
	// FinalRead reads a counter after the run, every fault undone.
	FinalRead
)

var kindNames = [...]string{"write", "read", "increment", "hold", "final-read"}

func (k Kind) String() string { return kindNames[k] }

// Outcome is how an operation ended as its client saw it.
type Outcome int

const (
	// OK: the server answered success to every step.
	OK Outcome = iota
	// Failed: refused before anything changed (an NTSTATUS of the open,
	// the lock, or a read); it did not take effect.
	Failed
	// Unknown: no answer (connection lost, deadline passed) or an error
	// after the change was sent; it may or may not have taken effect.
	Unknown
)

var outcomeNames = [...]string{"ok", "failed", "unknown"}

func (o Outcome) String() string { return outcomeNames[o] }

// Op is one operation of the history. Times are since the run's start,
// on the monotonic clock.
type Op struct {
	ID      int
	Client  int
	Node    int // the public address (node index) the client's connection went to
	Kind    Kind
	File    string
	Value   string // a register's value written or read
	Count   int64  // Increment: the counter read (and Count+1 written); FinalRead: the value
	Excl    bool   // Hold: exclusive (read/write, sharing nothing); else read, sharing read
	Cached  bool   // RegWrite: under a write lease, done once cached (Return), sent at the break
	Call    time.Duration
	Return  time.Duration // when the outcome was known (also for Unknown: when the client gave up)
	Outcome Outcome
	Err     string
	// After is how the requests after the outcome failed (an UNLOCK, a
	// CLOSE), which do not change it.
	After string
	// Hold: from the open's answer to the close's request; Held says the
	// close succeeded, so the server held the open all that time.
	From, To time.Duration
	Held     bool
	// TimedOut: a request of the operation went unanswered for the
	// request bound; the client gave up on the connection.
	TimedOut bool
}

func (o Op) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d c%d node%d %s %s", o.ID, o.Client, o.Node+1, o.Kind, o.File)
	switch o.Kind {
	case RegWrite, RegRead:
		fmt.Fprintf(&b, " %q", o.Value)
		if o.Cached {
			b.WriteString(" cached under a write lease")
		}
	case Increment, FinalRead:
		fmt.Fprintf(&b, " read %d", o.Count)
	case Hold:
		mode := "shared"
		if o.Excl {
			mode = "exclusive"
		}
		fmt.Fprintf(&b, " %s held [%v, %v] closed ok %v", mode, ms(o.From), ms(o.To), o.Held)
	}
	fmt.Fprintf(&b, " [%v, %v] %s", ms(o.Call), ms(o.Return), o.Outcome)
	if o.Err != "" {
		fmt.Fprintf(&b, " (%s)", o.Err)
	}
	if o.After != "" {
		fmt.Fprintf(&b, " then %s", o.After)
	}
	return b.String()
}

func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }

// History records operations from many goroutines.
type History struct {
	start time.Time

	mu  sync.Mutex
	ops []Op
}

// NewHistory starts a history's clock.
func NewHistory() *History { return &History{start: time.Now()} }

// Now is the time since the history's start (monotonic).
func (h *History) Now() time.Duration { return time.Since(h.start) }

// Add records a completed operation.
func (h *History) Add(o Op) {
	h.mu.Lock()
	o.ID = len(h.ops)
	h.ops = append(h.ops, o)
	h.mu.Unlock()
}

// Ops returns the operations, ordered by invocation.
func (h *History) Ops() []Op {
	h.mu.Lock()
	ops := append([]Op(nil), h.ops...)
	h.mu.Unlock()
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	return ops
}

// Fault is one fault the nemesis injected, from its start until it was
// undone.
type Fault struct {
	Kind   string
	Target string
	// Detail is the fault's size, if it has one: a delayed link's
	// delay and jitter, a clock step's offset.
	Detail      string
	Start, Undo time.Duration
	// Recovered is when the cluster served normally again after Undo
	// (every node up, serving its address); zero if it did not. For two
	// faults at once, after the later Undo.
	Recovered time.Duration
	// With names the other fault ("kind target") injected at once with
	// this one, each with its own record; empty for a fault alone.
	With string
}

func (f Fault) String() string {
	s := f.Kind + " " + f.Target
	if f.Detail != "" {
		s += " " + f.Detail
	}
	s += fmt.Sprintf(" [%v, %v] recovered %v", ms(f.Start), ms(f.Undo), ms(f.Recovered))
	if f.With != "" {
		s += " (at once with " + f.With + ")"
	}
	return s
}
