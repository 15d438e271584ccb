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
	// Durable opens a new file with a durable (or, on the continuously
	// available share, persistent) handle, writes chunks through to
	// storage, drops its connection and reconnects the open through the
	// next node, and reads the chunks back.
	Durable
	// Publish creates a temporary file, writes a unique value to it and
	// renames it over a name, replacing the file there.
	Publish
	// Delete opens a name delete-on-close, sharing nothing, and closes it.
	Delete
	// NameRead reads the file at a name, or finds none.
	NameRead
	// ChanWrite writes a unique value over a file of the client's own
	// through one channel of its session; ChanRead reads it back through
	// another channel (the first when the session has one).
	ChanWrite
	ChanRead
)

var kindNames = [...]string{"write", "read", "increment", "hold", "final-read", "durable", "publish", "delete",
	"name-read", "chan-write", "chan-read"}

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
	// Node2 is the node of the client's second channel (a session bound
	// on two nodes), -1 when it has one channel; a request of the
	// operation went through either.
	Node2 int
	// Via: ChanWrite, ChanRead: the node of the channel the WRITE or
	// READ went through.
	Via int

	// Durable: the handle granted was persistent; the chunks written
	// through it; the reconnect through the next node (Reconnected, its
	// node, and the last refusal).
	Persistent  bool
	Chunks      []Chunk
	Reconnected bool
	ReconnNode  int
	ReconnErr   string
	// NameRead: the name had a file (else it read as none: STATUS_OBJECT_NAME_NOT_FOUND).
	Found bool
	// Publish: the temporary name the value was written under, and
	// whether an open of it succeeded after the rename was acknowledged
	// (the old name should be gone).
	Temp      string
	TempFound bool
}

// Chunk is one write of a durable open: its bytes at Off, its outcome,
// and what the reconnected open read there (Read: the READ answered).
type Chunk struct {
	Off     int64
	Value   string
	Outcome Outcome
	Read    bool
	Got     string
}

func (o Op) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d c%d node%d", o.ID, o.Client, o.Node+1)
	if o.Node2 >= 0 && o.Client >= 0 && o.Node2 != o.Node {
		fmt.Fprintf(&b, "+%d", o.Node2+1)
	}
	fmt.Fprintf(&b, " %s %s", o.Kind, o.File)
	switch o.Kind {
	case Durable:
		if o.Persistent {
			b.WriteString(" persistent")
		}
		for _, c := range o.Chunks {
			fmt.Fprintf(&b, " @%d %q %s", c.Off, c.Value, c.Outcome)
			if c.Read {
				fmt.Fprintf(&b, " read %q", c.Got)
			}
		}
		if o.Reconnected {
			fmt.Fprintf(&b, " reconnected through node%d", o.ReconnNode+1)
		}
		if o.ReconnErr != "" {
			fmt.Fprintf(&b, " reconnect refused (%s)", o.ReconnErr)
		}
	case Publish:
		fmt.Fprintf(&b, " %q from %s", o.Value, o.Temp)
		if o.TempFound {
			b.WriteString(" (the old name still opened after the rename)")
		}
	case NameRead:
		if o.Found {
			fmt.Fprintf(&b, " %q", o.Value)
		} else if o.Outcome == OK {
			b.WriteString(" none")
		}
	case ChanWrite, ChanRead:
		fmt.Fprintf(&b, " %q through node%d", o.Value, o.Via+1)
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
