package framework

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The hang guard. A test that hangs runs into go test's -timeout, whose
// panic prints every goroutine of the test binary: the tail of the output
// — all a CI report shows — is then a goroutine dump, with nothing to say
// which test hung, nor what its servers were doing. Main arms the guard
// instead: shortly before the timeout it prints the tests still running,
// where the package's own goroutines wait, and the end of every live
// server's log, kills the servers and exits with the summary as the last
// lines.

// running is what the guard reports: the tests that started servers and
// have not ended, and the processes alive.
var running = struct {
	mu    sync.Mutex
	tests map[string]int
	procs map[*liveProc]struct{}
}{tests: map[string]int{}, procs: map[*liveProc]struct{}{}}

// liveProc is a server process whose log the guard prints.
type liveProc struct {
	name string
	out  *logBuffer
	pid  int
}

// trackTest counts t as running until it ends.
func trackTest(t testing.TB) {
	name := t.Name()
	running.mu.Lock()
	running.tests[name]++
	running.mu.Unlock()
	t.Cleanup(func() {
		running.mu.Lock()
		defer running.mu.Unlock()
		if running.tests[name]--; running.tests[name] <= 0 {
			delete(running.tests, name)
		}
	})
}

// trackProc keeps the process pid, named name and logging to out, in the
// guard's report until exited is closed.
func trackProc(name string, pid int, out *logBuffer, exited <-chan struct{}) {
	p := &liveProc{name: name, out: out, pid: pid}
	running.mu.Lock()
	running.procs[p] = struct{}{}
	running.mu.Unlock()
	go func() {
		<-exited
		running.mu.Lock()
		delete(running.procs, p)
		running.mu.Unlock()
	}()
}

// guardMargin is how long before the timeout the guard reports: a tenth
// of it, at most two minutes.
func guardMargin(timeout time.Duration) time.Duration { return min(2*time.Minute, timeout/10) }

// armHangGuard starts the guard for the run's -test.timeout (flags
// parsed); the returned func disarms it.
func armHangGuard() func() {
	f := flag.Lookup("test.timeout")
	if f == nil {
		return func() {}
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return func() {}
	}
	timeout, _ := g.Get().(time.Duration)
	if timeout <= 0 {
		return func() {}
	}
	t := time.AfterFunc(timeout-guardMargin(timeout), func() {
		reportHang(os.Stdout, timeout)
		printSummary()
		os.Exit(1)
	})
	return func() { t.Stop() }
}

// logTail is the number of lines of each live server's log the guard
// prints.
const logTail = 60

// reportHang writes what the guard knows to w and kills the live servers.
func reportHang(w io.Writer, timeout time.Duration) {
	running.mu.Lock()
	tests := make([]string, 0, len(running.tests))
	for name := range running.tests {
		tests = append(tests, name)
	}
	procs := make([]*liveProc, 0, len(running.procs))
	for p := range running.procs {
		procs = append(procs, p)
	}
	running.mu.Unlock()
	slices.Sort(tests)
	slices.SortFunc(procs, func(a, b *liveProc) int { return strings.Compare(a.name, b.name) })

	fmt.Fprintf(w, "--- hang: the run is about to reach its -test.timeout (%v); tests still running: %s\n",
		timeout, strings.Join(tests, ", "))
	fmt.Fprintf(w, "--- hang: where the tests' goroutines wait:\n%s\n", ownStacks())
	for _, p := range procs {
		fmt.Fprintf(w, "--- hang: the last %d lines of %s's log (pid %d):\n%s\n", logTail, p.name, p.pid,
			lastLines(p.out.String(), logTail))
		syscall.Kill(p.pid, syscall.SIGKILL)
	}
	NoteFailure(fmt.Sprintf("still running at the -test.timeout (%v) less %v, and ended: %s",
		timeout, guardMargin(timeout), strings.Join(tests, ", ")))
}

// ownPlumbing matches the stacks of the goroutines every run has (the
// test binary's main, the guard, its process watchers).
var ownPlumbing = regexp.MustCompile(`testing\.\(\*M\)\.Run|framework\.reportHang|framework\.trackProc\.func`)

// ownStacks returns the stacks of the goroutines that run this module's
// code, each distinct stack once (with how many goroutines share it).
func ownStacks() string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) || len(buf) >= 64<<20 {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var order []string
	count := map[string]int{}
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		s := string(g)
		if !strings.Contains(s, "smbcluster/smbcluster/") || ownPlumbing.MatchString(s) {
			continue
		}
		// The header names the goroutine and how long it waited:
		// the rest is what goroutines have in common.
		head, body, _ := strings.Cut(s, "\n")
		if count[body] == 0 {
			order = append(order, head+"\n"+body)
		}
		count[body]++
	}
	var b strings.Builder
	for _, s := range order {
		_, body, _ := strings.Cut(s, "\n")
		if n := count[body]; n > 1 {
			fmt.Fprintf(&b, "[%d goroutines like this one]\n", n)
		}
		b.WriteString(s)
		b.WriteString("\n\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	i := len(s)
	for range n {
		j := strings.LastIndexByte(s[:i], '\n')
		if j < 0 {
			return s
		}
		i = j
	}
	return s[i+1:]
}
