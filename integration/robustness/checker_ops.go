package robustness

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// The checker's parts for the operations of ops.go: durable reconnects,
// names, and writes read back through another channel (channels, with
// the registers' model, is in checker.go).

// durables checks every durable operation whose open was reconnected:
// each chunk whose write-through WRITE was answered success and that the
// reconnected open read must read as written. A reconnect no node took
// is no violation (the history counts it: a node fault may legitimately
// cost a durable open, e.g. past its timeout); nor is a chunk whose WRITE
// went unanswered, whatever it reads.
func (r *Report) durables(ops []Op, faults []Fault) {
	for _, o := range ops {
		if o.Kind != Durable || !o.Reconnected {
			continue
		}
		for _, c := range o.Chunks {
			if c.Outcome == OK && c.Read && c.Got != c.Value {
				handle := "durable"
				if o.Persistent {
					handle = "persistent"
				}
				r.add(fmt.Sprintf("a %s open of %s lost an acknowledged write: offset %d reads %q after the reconnect through node%d, want %q",
					handle, o.File, c.Off, c.Got, o.ReconnNode+1, c.Value), o.Return, []Op{o}, faults)
				break
			}
		}
	}
}

// nameState is a name: a file with a value there, or none.
type nameState struct {
	found bool
	value string
}

// nameInput is a name's operation as porcupine's model takes it: a
// publish of a value (rename over the name), a delete, or a read.
type nameInput struct {
	publish, delete bool
	value           string
}

// nameModel is a name that has no file at first.
var nameModel = porcupine.Model{
	Init: func() any { return nameState{} },
	Step: func(state, input, output any) (bool, any) {
		in := input.(nameInput)
		switch {
		case in.publish:
			return true, nameState{true, in.value}
		case in.delete:
			return true, nameState{}
		}
		return output.(nameState) == state.(nameState), state
	},
	DescribeOperation: func(input, output any) string {
		in := input.(nameInput)
		switch {
		case in.publish:
			return fmt.Sprintf("publish %q", in.value)
		case in.delete:
			return "delete"
		}
		if out := output.(nameState); out.found {
			return fmt.Sprintf("read %q", out.value)
		}
		return "read: no file"
	},
}

// nameOps turns a name's operations into porcupine's: publishes and
// deletes as writes (never returning if their outcome is unknown; left
// out if refused), reads answered (a file's value, or none) as reads.
func nameOps(ops []Op) []porcupine.Operation {
	var out []porcupine.Operation
	for _, o := range ops {
		switch {
		case (o.Kind == Publish || o.Kind == Delete) && o.Outcome != Failed:
			out = append(out, porcupine.Operation{ClientId: o.Client, Input: nameInput{publish: o.Kind == Publish,
				delete: o.Kind == Delete, value: o.Value}, Call: int64(o.Call), Return: writeReturn(o), Metadata: o.ID})
		case o.Kind == NameRead && o.Outcome == OK:
			out = append(out, porcupine.Operation{ClientId: o.Client, Input: nameInput{},
				Output: nameState{o.Found, o.Value}, Call: int64(o.Call), Return: int64(o.Return), Metadata: o.ID})
		}
	}
	return out
}

// names checks the names: linearizable — a read after an acknowledged
// delete finds no file unless a publish may have come between, a read
// after an acknowledged rename finds its value unless another publish or
// a delete may have come between — and no acknowledged rename left its
// old name openable.
func (r *Report) names(ops []Op, faults []Fault) {
	r.linearizable(ops, faults, nameFiles)
	for _, o := range ops {
		if o.Kind == Publish && o.Outcome == OK && o.TempFound {
			r.add(fmt.Sprintf("the rename of %s to %s was acknowledged, and its old name still opened after it", o.Temp, o.File),
				o.Return, []Op{o}, faults)
		}
	}
}
