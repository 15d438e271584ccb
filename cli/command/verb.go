package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// verb is one action of an admin noun ("share add"): its synopsis, and
// define, which registers the verb's own flags and returns what runs it.
type verb struct {
	name    string
	args    string // positional arguments, as shown in usage: "NAME PATH"
	nargs   int    // exact number of positional arguments; -n: at least n
	summary string
	define  func(fs *flag.FlagSet) action
}

// action runs a verb once its flags and arguments are parsed. It returns
// an error for callFailed to report, or a usageErr.
type action func(ctx context.Context, c *call) error

// usageErr is a bad command line found after parsing (conflicting flags).
type usageErr struct{ error }

func usagef(format string, args ...any) error { return usageErr{fmt.Errorf(format, args...)} }

// setupErr is a bad setting outside the command line (config file, token
// or CA file): ExitUsage, without pointing at --help.
type setupErr struct{ error }

func setupf(format string, args ...any) error { return setupErr{fmt.Errorf(format, args...)} }

// call is one verb's invocation.
type call struct {
	e    *env
	noun *noun
	name string   // "share add"
	args []string // positional arguments
	p    *printer
	conn *conn
}

// runNoun dispatches args to one of n's verbs.
func runNoun(ctx context.Context, e *env, n *noun, args []string) int {
	if len(n.verbs) == 1 && n.verbs[0].name == "" {
		return runVerb(ctx, e, n, &n.verbs[0], args) // a noun that is its own verb: smbctl status
	}
	if len(args) == 0 {
		io.WriteString(e.stderr, nounUsage(n))
		return ExitUsage
	}
	if a := args[0]; a == "-h" || a == "-help" || a == "--help" || a == "help" {
		io.WriteString(e.stdout, nounUsage(n))
		return ExitOK
	}
	for i := range n.verbs {
		v := &n.verbs[i]
		if v.name == args[0] || v.name == "ls" && args[0] == "list" || v.name == "rm" && args[0] == "remove" {
			return runVerb(ctx, e, n, v, args[1:])
		}
	}
	fmt.Fprintf(e.stderr, "smbctl %s: unknown verb %q\nRun 'smbctl %s --help' for usage.\n", n.name, args[0], n.name)
	return ExitUsage
}

// nounUsage lists n's verbs.
func nounUsage(n *noun) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: smbctl %s VERB [flags] [args]\n\n%s.\n\nVerbs:\n", n.name, capitalize(n.summary))
	for _, v := range n.verbs {
		fmt.Fprintf(&b, "  %-28s %s\n", strings.TrimSpace(v.name+" "+v.args), v.summary)
	}
	fmt.Fprintf(&b, "\nRun 'smbctl %s VERB --help' for a verb's flags.\n", n.name)
	return b.String()
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// verbUsage is the --help text of one verb, its flags included.
func verbUsage(n *noun, v *verb, fs *flag.FlagSet) string {
	var b strings.Builder
	name := strings.TrimSpace(n.name + " " + v.name)
	fmt.Fprintf(&b, "Usage: %s\n\n%s.\n\nFlags:\n", strings.TrimSpace("smbctl "+name+" [flags] "+v.args), capitalize(v.summary))
	var lines []string
	fs.VisitAll(func(f *flag.Flag) {
		if connFlagNames[f.Name] {
			return
		}
		arg, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if len(f.Name) == 1 {
			line = "  -" + f.Name
		}
		if arg != "" {
			line += " " + arg
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0s" && f.DefValue != "0" {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		lines = append(lines, fmt.Sprintf("%-28s %s", line, usage))
	})
	sort.Strings(lines)
	b.WriteString(strings.Join(lines, "\n") + "\n\n")
	b.WriteString(connHelp)
	return b.String()
}

// runVerb parses the verb's flags (anywhere among its arguments), then
// runs it against the coordinator.
func runVerb(ctx context.Context, e *env, n *noun, v *verb, args []string) int {
	name := strings.TrimSpace(n.name + " " + v.name)
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	var cf connFlags
	cf.register(fs, e.global)
	out := outputFlag(fs)
	act := v.define(fs)
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		io.WriteString(e.stdout, verbUsage(n, v, fs))
		return ExitOK
	}
	if err == nil && (v.nargs >= 0 && len(pos) != v.nargs || len(pos) < -v.nargs) {
		err = argCountError(v, pos)
	}
	if err != nil {
		return usageError(e, name, err)
	}
	p, err := newPrinter(e.stdout, *out)
	if err != nil {
		return usageError(e, name, err)
	}
	c := &call{e: e, noun: n, name: name, args: pos, p: p}
	if c.conn, err = cf.open(e, fs); err != nil {
		return c.failed(err)
	}
	defer c.conn.close()
	return c.failed(act(ctx, c))
}

func argCountError(v *verb, pos []string) error {
	switch {
	case v.nargs < 0:
		return fmt.Errorf("missing %s", strings.Fields(v.args)[0])
	case len(pos) > v.nargs:
		return fmt.Errorf("unexpected argument %q", pos[v.nargs])
	case v.nargs == 1:
		return fmt.Errorf("missing %s", v.args)
	}
	return fmt.Errorf("want %s, got %d argument(s)", v.args, len(pos))
}

// parseInterspersed parses flags that may come before, between or after
// positional arguments (smbctl share add data /srv/data --read-only) and
// returns the positional ones. Everything after "--" is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
