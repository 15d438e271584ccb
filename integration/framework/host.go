package framework

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Host is one machine of a bed: a network namespace joined to the bed's
// bridge by a veth pair (one fixed address) and a mount namespace of its
// own, both persistent, so that a process killed there can be started
// again in the same namespaces (and find the same mounts).
type Host struct {
	// Name is the host's name in the bed: "h1" ... for node hosts, "e1"
	// ... for etcd members, "s1" for storage.
	Name string
	// NetNS is the network namespace's name (ip netns) and MountNS the
	// file its mount namespace is bound to (nsenter --mount).
	NetNS   string
	MountNS string
	// Addr is the host's fixed (management) IPv4 address on the bed's
	// bridge, Iface the host's end of its veth pair.
	Addr  string
	Iface string

	tmp string // the bed's temporary directory (TempDir)

	// delay is the host's delayed link (Delay), nil if none.
	delayMu sync.Mutex
	delay   *delayQueue
}

// TempDir returns a new directory for the host's state (a daemon's data,
// a brick), removed when the test ends but only after every process of
// the bed is gone — unlike t.TempDir's, asked for after the bed started,
// which the test removes while the bed's processes still write there.
func (h *Host) TempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp(h.tmp, h.Name+"-")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// Command returns a command that runs name with args in the host's
// network and mount namespaces. It is the caller's to start; it runs as
// the leader of its own process group, killed with the test process.
func (h *Host) Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command("nsenter", append([]string{"--net=" + filepath.Join("/run/netns", h.NetNS),
		"--mount=" + h.MountNS, "--", name}, args...)...)
	cmd.SysProcAttr = OwnGroup()
	return cmd
}

// Exec runs name with args in the host's namespaces and returns its
// outcome (Run's deadline and result).
func (h *Host) Exec(t testing.TB, name string, args ...string) Result {
	t.Helper()
	return Run(t, "", "nsenter", append([]string{"--net=" + filepath.Join("/run/netns", h.NetNS),
		"--mount=" + h.MountNS, "--", name}, args...)...)
}

// MustExec is Exec that fails the test unless the program exits 0.
func (h *Host) MustExec(t testing.TB, name string, args ...string) Result {
	t.Helper()
	r := h.Exec(t, name, args...)
	if r.ExitCode != 0 {
		t.Fatalf("on %s:\n%s", h.Name, r)
	}
	return r
}

// Private gives the host's mount namespace a directory of its own at path
// (an empty temporary directory bind-mounted over it), e.g. a daemon's
// state directory under /var/lib, so that nothing of the machine's is
// read or written.
func (h *Host) Private(t testing.TB, path string) string {
	t.Helper()
	dir := h.TempDir(t)
	h.MustExec(t, "mkdir", "-p", path)
	h.MustExec(t, "mount", "--bind", dir, path)
	return dir
}

// Proc is a long-running process on a bed host (a daemon in the
// foreground), killed when the bed is torn down.
type Proc struct {
	Host *Host
	Name string
	argv []string
	cmd  *exec.Cmd
	out  *logBuffer
	// exited is closed when the current incarnation has exited.
	exited chan struct{}
}

// Start runs argv on the host as a Proc named name. Its output is kept
// (Log) and shown when the test fails.
func (h *Host) Start(t testing.TB, name string, argv ...string) *Proc {
	t.Helper()
	p := &Proc{Host: h, Name: name, argv: argv, out: &logBuffer{}}
	p.start(t)
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("%s on %s log:\n%s", name, h.Name, p.out.String())
		}
	})
	return p
}

func (p *Proc) start(t testing.TB) {
	t.Helper()
	p.cmd = p.Host.Command(p.argv[0], p.argv[1:]...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.exited = make(chan struct{})
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s on %s: %v", p.Name, p.Host.Name, err)
	}
	trackProc(p.Name+" on "+p.Host.Name, p.cmd.Process.Pid, p.out, p.exited)
	exited, cmd := p.exited, p.cmd
	go func() {
		cmd.Wait()
		close(exited)
	}()
}

// Kill kills the process with SIGKILL (stopped or not) and waits for it
// to exit.
func (p *Proc) Kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Kill()
	<-p.exited
}

// Restart starts the process again, as before, after it exited or was
// killed.
func (p *Proc) Restart(t testing.TB) {
	t.Helper()
	p.Kill()
	p.start(t)
}

// Stop stops the process (SIGSTOP) and returns once all its threads are
// stopped: its sockets stay open and nothing answers. Continue lets it go
// on.
func (p *Proc) Stop(t testing.TB) {
	t.Helper()
	if err := stop(p.cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
}

// Continue lets a stopped process go on (SIGCONT).
func (p *Proc) Continue(t testing.TB) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}

// Exited is closed when the process (this incarnation) has exited.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Log returns what the process has written so far.
func (p *Proc) Log() string { return strings.TrimSpace(p.out.String()) }

// Pid is the process's id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }
