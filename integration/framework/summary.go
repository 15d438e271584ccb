package framework

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
)

// summary holds what the package's tests noted failing, printed by Main
// after every test ran: a long run's output ends with it, so that its
// last lines name what failed, wherever in the output the failure is.
var summary struct {
	mu    sync.Mutex
	lines []string
}

// NoteFailure adds msg to the summary Main prints at the end of the run,
// once however often it is noted.
func NoteFailure(msg string) {
	summary.mu.Lock()
	defer summary.mu.Unlock()
	if !slices.Contains(summary.lines, msg) {
		summary.lines = append(summary.lines, msg)
	}
}

// noteIfFailed notes t's name in the summary if t fails, and counts it
// as running for the hang guard until it ends. Start, NewCluster, NewBed
// and Shared call it, so every test that runs a server or uses a shared
// one is named at the end when it fails, and by the guard when it hangs.
func noteIfFailed(t testing.TB) {
	trackTest(t)
	t.Cleanup(func() {
		if t.Failed() {
			NoteFailure(t.Name() + " failed")
		}
	})
}

// printSummary writes the failures noted, if any, to standard output.
func printSummary() {
	summary.mu.Lock()
	defer summary.mu.Unlock()
	if len(summary.lines) == 0 {
		return
	}
	fmt.Fprintf(os.Stdout, "--- summary: %d failures noted\n", len(summary.lines))
	for _, l := range summary.lines {
		fmt.Fprintf(os.Stdout, "\t%s\n", l)
	}
}
