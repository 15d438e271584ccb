package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// Exit codes of Main.
const (
	ExitOK     = 0 // success
	ExitError  = 1 // runtime error: connection failed, server error …
	ExitUsage  = 2 // bad command line
	ExitVerify = 3 // bench: data read back differ from what was written
)

// Version is smbctl's version, set at link time with
// -ldflags "-X github.com/smbcluster/smbcluster/cli/command.Version=v1.2.3".
var Version = "dev"

// env is what a command may touch of the outside world.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	stderrTTY      bool // progress output is wanted
}

// noun is one smbctl command; later nouns (node, share, user, session,
// status …) are one entry each.
type noun struct {
	name    string
	summary string
	run     func(ctx context.Context, e *env, args []string) int
}

var nouns []noun

func init() {
	nouns = []noun{
		{"bench", "measure an SMB server's throughput and latency", runBench},
		{"version", "print smbctl's version", runVersion},
	}
}

// Main runs smbctl with args (without the program name) and returns the
// exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	e := &env{stdout: stdout, stderr: stderr, getenv: os.Getenv, stderrTTY: isTTY(stderr)}
	return run(ctx, e, args)
}

func run(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		printUsage(e.stderr)
		return ExitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		printUsage(e.stdout)
		return ExitOK
	}
	for _, n := range nouns {
		if n.name == args[0] {
			return n.run(ctx, e, args[1:])
		}
	}
	fmt.Fprintf(e.stderr, "smbctl: unknown command %q\nRun 'smbctl --help' for usage.\n", args[0])
	return ExitUsage
}

func printUsage(w io.Writer) {
	var b strings.Builder
	b.WriteString("Usage: smbctl COMMAND [flags]\n\nCommands:\n")
	for _, n := range nouns {
		fmt.Fprintf(&b, "  %-9s %s\n", n.name, n.summary)
	}
	b.WriteString("\nRun 'smbctl COMMAND --help' for a command's flags.\n")
	b.WriteString("Exit codes: 0 ok, 1 runtime error, 2 usage error, 3 data verification failed.\n")
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

// isTTY reports whether w is a terminal.
func isTTY(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
