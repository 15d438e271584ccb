package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
)

// Exit codes of Main. Scripts may rely on them; printUsage documents them.
const (
	ExitOK          = 0 // success
	ExitError       = 1 // runtime error not covered below
	ExitUsage       = 2 // bad command line, or input the coordinator rejected as invalid
	ExitVerify      = 3 // bench: data read back differ from what was written
	ExitNotFound    = 4 // the node, share, user, session or open does not exist
	ExitAuth        = 5 // unauthenticated or permission denied
	ExitUnavailable = 6 // coordinator unreachable, or it (or its etcd) did not answer in time
	ExitConflict    = 7 // already exists, or not in a state that allows it (node up, revision changed)
	ExitIncomplete  = 8 // drain or close did not finish before its --timeout
)

// exitCodesHelp is the exit-code section of smbctl --help.
const exitCodesHelp = `Exit codes:
  0  ok
  1  runtime error
  2  usage error, or input the coordinator rejected as invalid
  3  bench: data read back differ from what was written
  4  not found (node, share, user, session, open)
  5  unauthenticated or permission denied
  6  coordinator unreachable or not answering in time
  7  already exists, or refused in the current state (node up, share changed)
  8  drain or close did not finish before --timeout
`

// Version is smbctl's version, set at link time with
// -ldflags "-X github.com/smbcluster/smbcluster/cli/command.Version=v1.2.3".
var Version = "dev"

// env is what a command may touch of the outside world.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	stderrTTY      bool // progress output is wanted

	stdin      io.Reader
	stdinTTY   bool                                // passwords are prompted for without echo
	readSecret func(prompt string) (string, error) // reads a line from the terminal without echo
	// dial, if set, replaces the TCP dialer for the coordinator (tests).
	dial func(ctx context.Context, addr string) (net.Conn, error)
	// global are the connection flags given before the command.
	global connFlags
}

// noun is one smbctl command. Admin nouns have verbs ("share add");
// the others (bench, version, completion) run directly.
type noun struct {
	name    string
	summary string
	run     func(ctx context.Context, e *env, args []string) int
	// flags, for a noun without verbs, registers its flags (completion).
	flags func(fs *flag.FlagSet)
	verbs []verb
	// listHint is the command that lists the noun's things, named in
	// "not found" errors.
	listHint string
}

var nouns []noun

func init() {
	nouns = []noun{
		{name: "node", summary: "admit, drain, resume, remove and list nodes", verbs: nodeVerbs, listHint: "smbctl node ls"},
		{name: "share", summary: "create, change, remove and list shares", verbs: shareVerbs, listHint: "smbctl share ls"},
		{name: "user", summary: "create, remove and list users; set passwords", verbs: userVerbs, listHint: "smbctl user ls"},
		{name: "kerberos", summary: "set, show and remove the cluster's Kerberos service keytab", verbs: kerberosVerbs, listHint: "smbctl kerberos get"},
		{name: "session", summary: "list and close SMB sessions", verbs: sessionVerbs, listHint: "smbctl session ls"},
		{name: "open", summary: "list and close open files", verbs: openVerbs, listHint: "smbctl open ls"},
		{name: "lock", summary: "list byte-range locks", verbs: lockVerbs, listHint: "smbctl lock ls"},
		{name: "witness", summary: "list the clients registered with the witness service", verbs: witnessVerbs, listHint: "smbctl witness ls"},
		{name: "client", summary: "move a witness client to another node", verbs: clientVerbs, listHint: "smbctl witness ls"},
		{name: "netname", summary: "take the cluster's network name (its client access point) offline and online", verbs: netnameVerbs, listHint: "smbctl netname get"},
		{name: "status", summary: "show the cluster's nodes, counts and etcd health", verbs: statusVerbs},
		{name: "top", summary: "watch request rates, throughput, latency, busy clients and hot files across the cluster", verbs: topVerbs},
		{name: "bench", summary: "measure an SMB server's throughput and latency", run: runBench,
			flags: func(fs *flag.FlagSet) { new(benchFlags).register(fs) }},
		{name: "version", summary: "print smbctl's version", run: runVersion,
			flags: func(fs *flag.FlagSet) { outputFlag(fs) }},
		{name: "completion", summary: "print a shell completion script (bash, zsh or fish)", run: runCompletion},
	}
}

// Main runs smbctl with args (without the program name) and returns the
// exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	e := &env{stdout: stdout, stderr: stderr, getenv: os.Getenv, stderrTTY: isTTY(stderr),
		stdin: os.Stdin, stdinTTY: isTTY(os.Stdin),
		readSecret: func(prompt string) (string, error) { return readTerminalSecret(os.Stdin, stderr, prompt) }}
	return run(ctx, e, args)
}

func run(ctx context.Context, e *env, args []string) int {
	// Connection flags may come before the command: smbctl --endpoint X share ls.
	fs := flag.NewFlagSet("smbctl", flag.ContinueOnError)
	e.global.register(fs, connFlags{})
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		printUsage(e.stdout)
		return ExitOK
	case err != nil:
		fmt.Fprintf(e.stderr, "smbctl: %v\nRun 'smbctl --help' for usage.\n", err)
		return ExitUsage
	}
	args = fs.Args()
	if len(args) == 0 {
		printUsage(e.stderr)
		return ExitUsage
	}
	if args[0] == "help" {
		printUsage(e.stdout)
		return ExitOK
	}
	if n := findNoun(args[0]); n != nil {
		if n.run != nil {
			return n.run(ctx, e, args[1:])
		}
		return runNoun(ctx, e, n, args[1:])
	}
	fmt.Fprintf(e.stderr, "smbctl: unknown command %q\nRun 'smbctl --help' for usage.\n", args[0])
	return ExitUsage
}

func findNoun(name string) *noun {
	for i := range nouns {
		if nouns[i].name == name {
			return &nouns[i]
		}
	}
	return nil
}

func printUsage(w io.Writer) {
	var b strings.Builder
	b.WriteString("Usage: smbctl [connection flags] COMMAND [VERB] [flags] [args]\n\nCommands:\n")
	for _, n := range nouns {
		fmt.Fprintf(&b, "  %-10s %s\n", n.name, n.summary)
	}
	b.WriteString("\nRun 'smbctl COMMAND --help' for a command's verbs and flags.\n\n")
	b.WriteString(connHelp)
	b.WriteString("\n" + exitCodesHelp)
	io.WriteString(w, b.String())
}

// parseFlags parses args into fs, whose usage text is usage. It returns
// ok=false and the exit code when the caller should stop: ExitOK after
// --help, ExitUsage after an error (already reported on stderr).
func parseFlags(e *env, fs *flag.FlagSet, usage string, args []string) (code int, ok bool) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		io.WriteString(e.stdout, usage)
		return ExitOK, false
	}
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err != nil {
		return usageError(e, fs.Name(), err), false
	}
	return ExitOK, true
}

// usageError reports err as a usage error of command name.
func usageError(e *env, name string, err error) int {
	fmt.Fprintf(e.stderr, "smbctl %s: %v\nRun 'smbctl %s --help' for usage.\n", name, err, name)
	return ExitUsage
}

// isTTY reports whether f is a terminal.
func isTTY(f any) bool {
	file, ok := f.(*os.File)
	if !ok {
		return false
	}
	fi, err := file.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
