package framework

import (
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) { Main(m) }

// envHangHelper makes TestHangGuardHelper hang: TestHangGuard runs it so.
const envHangHelper = "SMBCLUSTER_HANG_HELPER"

// TestHangGuard: a test that hangs with a server running is reported
// before go test's timeout — the test's name, where it waits, the end of
// its server's log — the server is killed, and the run ends with the
// summary, not the timeout's goroutine dump.
func TestHangGuard(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHangGuardHelper$", "-test.timeout=10s", "-test.v")
	cmd.Env = append(os.Environ(), envHangHelper+"=1")
	b, err := cmd.CombinedOutput()
	out := string(b)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("the hanging run ended with %v, want exit status 1:\n%s", err, out)
	}
	for _, want := range []string{
		"--- hang: the run is about to reach its -test.timeout (10s); tests still running: TestHangGuardHelper\n",
		"framework.TestHangGuardHelper(", // where it waits
		"hang-guard-marker",              // its server's log
		"still running at the -test.timeout (10s) less 1s, and ended: TestHangGuardHelper",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "panic: test timed out") {
		t.Errorf("the run reached go test's timeout:\n%s", out)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) < 2 || lines[len(lines)-2] != "--- summary: 1 failures noted" {
		t.Errorf("the output does not end with the summary:\n%s", out)
	}
	m := regexp.MustCompile(`of sleeper's log \(pid (\d+)\)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no log of the server in the report:\n%s", out)
	}
	pid, _ := strconv.Atoi(m[1])
	WaitFor(t, 10*time.Second, "the hung test's server killed", func() bool {
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) || zombie(pid)
	})
}

// zombie reports whether process pid has exited and waits to be reaped.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// TestHangGuardHelper hangs, with a server running, when TestHangGuard
// runs it.
func TestHangGuardHelper(t *testing.T) {
	if os.Getenv(envHangHelper) == "" {
		t.Skip("run by TestHangGuard")
	}
	trackTest(t)
	out := &logBuffer{}
	cmd := exec.Command("sh", "-c", "echo hang-guard-marker; exec sleep 600")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	trackProc("sleeper", cmd.Process.Pid, out, exited)
	go func() {
		cmd.Wait()
		close(exited)
	}()
	WaitFor(t, 5*time.Second, "the server's log", func() bool { return strings.Contains(out.String(), "hang-guard-marker") })
	<-make(chan struct{}) // the hang
}
