package robustness

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// Violation is a promise the history shows broken: what, when, the
// operations around it and the faults in force then.
type Violation struct {
	What   string
	At     time.Duration
	Ops    []Op
	Faults []Fault
}

func (v Violation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "VIOLATION at %v: %s\n", ms(v.At), v.What)
	if len(v.Faults) == 0 {
		b.WriteString("  faults in force: none\n")
	}
	for _, f := range v.Faults {
		fmt.Fprintf(&b, "  fault in force: %v\n", f)
	}
	for _, o := range v.Ops {
		fmt.Fprintf(&b, "  %v\n", o)
	}
	return b.String()
}

// Report is the checker's verdict.
type Report struct {
	Violations []Violation
	// Undecided lists the registers porcupine could not decide within
	// its time limit: neither passed nor failed.
	Undecided []string
}

// CheckTimeout bounds porcupine on one register.
var CheckTimeout = 30 * time.Second

// Check decides ops (a whole run's history, FinalRead included) against
// the promises: registers linearizable; never two holders of conflicting
// share modes at once; no lost counter increment; no request unanswered
// past the request bound; every acknowledged write of a durable or
// persistent open readable after its reconnect; names published by
// rename and deleted linearizable, and a renamed file's old name gone;
// a write read back through another channel of the session
// linearizable. faults are what the nemesis did.
func Check(ops []Op, faults []Fault) Report {
	var r Report
	r.registers(ops, faults)
	r.shareModes(ops, faults)
	r.counters(ops, faults)
	r.durables(ops, faults)
	r.names(ops, faults)
	r.channels(ops, faults)
	for _, o := range ops {
		if o.TimedOut {
			r.add(fmt.Sprintf("no answer within the request bound (%v): %s", RequestBound, o.Err), o.Return, []Op{o}, faults)
		}
	}
	sort.SliceStable(r.Violations, func(i, j int) bool { return r.Violations[i].At < r.Violations[j].At })
	return r
}

func (r *Report) add(what string, at time.Duration, ops []Op, faults []Fault) {
	var from time.Duration
	for _, o := range ops {
		if from == 0 || o.Call < from {
			from = o.Call
		}
	}
	r.Violations = append(r.Violations, Violation{What: what, At: at, Ops: ops, Faults: inForce(faults, from, at)})
}

// inForce returns the faults that overlap [from, to], counting a fault
// until the cluster recovered from it.
func inForce(faults []Fault, from, to time.Duration) []Fault {
	var in []Fault
	for _, f := range faults {
		end := f.Recovered
		if end == 0 {
			end = math.MaxInt64
		}
		if f.Start <= to && end >= from {
			in = append(in, f)
		}
	}
	return in
}

// byFile groups the operations of kind k by file.
func byFile(ops []Op, kinds ...Kind) map[string][]Op {
	m := map[string][]Op{}
	for _, o := range ops {
		for _, k := range kinds {
			if o.Kind == k {
				m[o.File] = append(m[o.File], o)
			}
		}
	}
	return m
}

// registerInput is a register operation as porcupine's model takes it.
type registerInput struct {
	write bool
	value string
}

// registerModel is a file holding one value, "" at first.
var registerModel = porcupine.Model{
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		in := input.(registerInput)
		if in.write {
			return true, in.value
		}
		return output.(string) == state.(string), state
	},
	DescribeOperation: func(input, output any) string {
		in := input.(registerInput)
		if in.write {
			return fmt.Sprintf("write %q", in.value)
		}
		return fmt.Sprintf("read %q", output)
	},
}

// registerOps turns a register's operations into porcupine's: writes
// whose outcome is unknown never return (they may take effect at any
// time after their call); failed writes and reads without an answer say
// nothing and are left out. wk and rk are the kinds of its writes and
// reads (RegWrite and RegRead, ChanWrite and ChanRead).
func registerOps(ops []Op, wk, rk Kind) []porcupine.Operation {
	var out []porcupine.Operation
	for _, o := range ops {
		switch {
		case o.Kind == wk && o.Outcome != Failed:
			out = append(out, porcupine.Operation{ClientId: o.Client, Input: registerInput{true, o.Value},
				Call: int64(o.Call), Return: writeReturn(o), Metadata: o.ID})
		case o.Kind == rk && o.Outcome == OK:
			out = append(out, porcupine.Operation{ClientId: o.Client, Input: registerInput{},
				Call: int64(o.Call), Output: o.Value, Return: int64(o.Return), Metadata: o.ID})
		}
	}
	return out
}

// writeReturn is a write's return for porcupine: never, if its outcome
// is unknown.
func writeReturn(o Op) int64 {
	if o.Outcome == Unknown {
		return math.MaxInt64
	}
	return int64(o.Return)
}

// linear is a kind of file porcupine decides: its model, its writes and
// reads, how the operations of one file become porcupine's, and what a
// violation says.
type linear struct {
	model         porcupine.Model
	writes, reads []Kind
	porcupine     func([]Op) []porcupine.Operation
	what          string // "register %s is not linearizable"
}

var (
	registerFiles = linear{model: registerModel, writes: []Kind{RegWrite}, reads: []Kind{RegRead},
		porcupine: func(ops []Op) []porcupine.Operation { return registerOps(ops, RegWrite, RegRead) },
		what:      "register %s is not linearizable"}
	channelFiles = linear{model: registerModel, writes: []Kind{ChanWrite}, reads: []Kind{ChanRead},
		porcupine: func(ops []Op) []porcupine.Operation { return registerOps(ops, ChanWrite, ChanRead) },
		what:      "a write read back through another channel: file %s is not linearizable"}
	nameFiles = linear{model: nameModel, writes: []Kind{Publish, Delete}, reads: []Kind{NameRead},
		porcupine: nameOps, what: "name %s (published by rename, deleted) is not linearizable"}
)

// registers checks each register's linearizability.
func (r *Report) registers(ops []Op, faults []Fault) { r.linearizable(ops, faults, registerFiles) }

// channels checks each client's file written through one channel of its
// session and read back through another: linearizable as a register.
func (r *Report) channels(ops []Op, faults []Fault) { r.linearizable(ops, faults, channelFiles) }

// linearizable checks each file of kind k; on a violation it finds the
// earliest read that cannot be explained (the shortest cut of the
// history that fails: every write called by then, every read answered
// by then) and reports the operations on that file that took effect or
// may have (failed ones left out) in the two seconds before it.
func (r *Report) linearizable(ops []Op, faults []Fault, k linear) {
	files := byFile(ops, append(slices.Clone(k.writes), k.reads...)...)
	names := make([]string, 0, len(files))
	for f := range files {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		fops := files[f]
		switch porcupine.CheckOperationsTimeout(k.model, k.porcupine(fops), CheckTimeout) {
		case porcupine.Ok:
			continue
		case porcupine.Unknown:
			r.Undecided = append(r.Undecided, f)
			continue
		}
		at := firstIllegalRead(fops, k)
		var window []Op
		for _, o := range fops {
			if o.Outcome != Failed && o.Call <= at && o.Return >= at-2*time.Second {
				window = append(window, o)
			}
		}
		r.add(fmt.Sprintf(k.what+": the read answered at %v cannot be explained", f, ms(at)), at, window, faults)
	}
}

// firstIllegalRead returns the smallest answer time T of a read such that
// the cut at T (writes called by T, reads answered by T) is not
// linearizable. A cut of a linearizable history is linearizable, so the
// search is a bisection over the reads' answer times.
func firstIllegalRead(ops []Op, k linear) time.Duration {
	var ends []time.Duration
	for _, o := range ops {
		if slices.Contains(k.reads, o.Kind) && o.Outcome == OK {
			ends = append(ends, o.Return)
		}
	}
	sort.Slice(ends, func(i, j int) bool { return ends[i] < ends[j] })
	cut := func(t time.Duration) []Op {
		var c []Op
		for _, o := range ops {
			if slices.Contains(k.writes, o.Kind) && o.Call <= t || slices.Contains(k.reads, o.Kind) && o.Return <= t {
				c = append(c, o)
			}
		}
		return c
	}
	i := sort.Search(len(ends), func(i int) bool {
		return porcupine.CheckOperationsTimeout(k.model, k.porcupine(cut(ends[i])), CheckTimeout) == porcupine.Illegal
	})
	if i == len(ends) {
		return ends[len(ends)-1]
	}
	return ends[i]
}

// shareModes checks that no two opens the server held at once (each
// closed successfully) had conflicting share modes: an exclusive one
// (read/write, sharing nothing) beside any other.
func (r *Report) shareModes(ops []Op, faults []Fault) {
	for f, hs := range byFile(ops, Hold) {
		var held []Op
		for _, o := range hs {
			if o.Outcome == OK && o.Held {
				held = append(held, o)
			}
		}
		sort.Slice(held, func(i, j int) bool { return held[i].From < held[j].From })
		for i, a := range held {
			for _, b := range held[i+1:] {
				if b.From > a.To {
					break
				}
				if a.Excl || b.Excl {
					r.add(fmt.Sprintf("conflicting share modes held at once on %s (from %v to %v)", f, ms(b.From), ms(min(a.To, b.To))),
						b.From, []Op{a, b}, faults)
				}
			}
		}
	}
}

// counters checks every counter: no two acknowledged increments read the
// same value (one of them was lost, written under a lock that did not
// exclude the other), and the final value lies between the acknowledged
// increments and those plus the ones of unknown outcome.
func (r *Report) counters(ops []Op, faults []Fault) {
	files := byFile(ops, Increment, FinalRead)
	for f, cops := range files {
		seen := map[int64]Op{}
		acked, unknown := int64(0), int64(0)
		var final *Op
		var lastOK []Op
		for _, o := range cops {
			switch {
			case o.Kind == FinalRead && o.Outcome != OK:
				from := o.Call
				if len(lastOK) > 0 {
					from = lastOK[0].Call
				}
				window := append(slices.Clone(lastOK), o)
				for _, p := range cops {
					if p.Call >= from && p.Kind == Increment && p.Outcome != OK && p.Err != smb2.StatusLockNotGranted.String() {
						window = append(window, p)
					}
				}
				r.Violations = append(r.Violations, Violation{
					What: fmt.Sprintf("counter %s cannot be read after the run, every client's opens closed: %s (a byte-range lock outlived its open)", f, o.Err),
					At:   o.Return, Ops: window, Faults: inForce(faults, from, o.Return)})
			case o.Kind == FinalRead:
				final = &o
			case o.Kind == Increment && o.Outcome == OK:
				lastOK = append(lastOK, o)
				if len(lastOK) > 3 {
					lastOK = lastOK[1:]
				}
				acked++
				if p, ok := seen[o.Count]; ok {
					r.add(fmt.Sprintf("lost update on %s: two acknowledged increments under an exclusive lock both read %d", f, o.Count),
						max(p.Return, o.Return), []Op{p, o}, faults)
				}
				seen[o.Count] = o
			case o.Kind == Increment && o.Outcome == Unknown:
				unknown++
			}
		}
		if final == nil {
			continue
		}
		if final.Count < acked || final.Count > acked+unknown {
			r.add(fmt.Sprintf("counter %s ends at %d after %d acknowledged increments and %d of unknown outcome", f, final.Count, acked, unknown),
				final.Return, []Op{*final}, faults)
		}
	}
}
