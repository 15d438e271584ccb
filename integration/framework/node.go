package framework

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Deadlines for a server's lifecycle. They bound waits on conditions; none is
// slept through.
const (
	StartDeadline = 60 * time.Second
	StopDeadline  = 30 * time.Second
)

// EnvTarget selects the server Start runs: "node" (default) or "samba".
const EnvTarget = "SMBCLUSTER_TARGET"

// EnvLogLevel overrides the --log-level StartNode passes (default "info").
const EnvLogLevel = "SMBCLUSTER_LOG_LEVEL"

// Share is one exported share. An empty Path means a fresh directory under
// the test's temporary directory.
type Share struct {
	Name     string
	Path     string
	Encrypt  bool
	ReadOnly bool
}

// Options configures a server. Zero values give one share named "share" and
// the users in DefaultUsers, listening on 127.0.0.1 at a free port.
type Options struct {
	Shares []Share
	Users  map[string]string
	Args   []string // extra command-line arguments (smbnode) or [global] lines (samba)
	Addr   string   // host:port; default 127.0.0.1:<free port>
	// SigningRequired refuses unsigned sessions (smbnode --signing-required,
	// smbd "server signing = mandatory").
	SigningRequired bool
	// NoFile, when set, is the server's descriptor limit (RLIMIT_NOFILE,
	// soft and hard), set by prlimit(1), which then executes the server.
	NoFile int
}

// DefaultUsers are the accounts a server gets when Options.Users is nil.
var DefaultUsers = map[string]string{
	"alice": "Alice-Pass-1",
	"bob":   "Bob-Pass-2",
}

// Node is a running SMB server owned by one test.
type Node struct {
	Addr  string // host:port
	Host  string
	Port  int
	Kind  string // "smbnode" or "samba"
	Users map[string]string

	shares map[string]Share
	cmd    *exec.Cmd
	out    *logBuffer
	exited chan struct{} // closed when the process has exited
	err    error         // the process's exit status; read after exited
	extra  func()        // kills helper processes (samba-dcerpcd); may be nil
	// sigtermOK accepts death by SIGTERM as a clean exit (smbd signals its
	// own process group when it shuts down).
	sigtermOK bool
}

// SharePath returns the directory on disk that backs share name.
func (n *Node) SharePath(name string) string {
	s, ok := n.shares[name]
	if !ok {
		panic(fmt.Sprintf("framework: no share %q", name))
	}
	return s.Path
}

// Shares returns the configured shares.
func (n *Node) Shares() []Share {
	var out []Share
	for _, s := range n.shares {
		out = append(out, s)
	}
	return out
}

// Log returns everything the server has written to stdout and stderr so far.
func (n *Node) Log() string { return n.out.String() }

// Pid is the server process's id (prlimit executes the server in place).
func (n *Node) Pid() int { return n.cmd.Process.Pid }

// Start starts the server named by SMBCLUSTER_TARGET ("node" or "samba").
func Start(t testing.TB, opts Options) *Node {
	t.Helper()
	noteIfFailed(t)
	switch target := os.Getenv(EnvTarget); target {
	case "", "node":
		return StartNode(t, opts)
	case "samba":
		return StartSamba(t, opts)
	default:
		t.Fatalf("%s=%q: want node or samba", EnvTarget, target)
		return nil
	}
}

// StartNode starts bin/smbnode (built by BuildNode) with opts and waits until
// it accepts connections.
func StartNode(t testing.TB, opts Options) *Node {
	t.Helper()
	bin := BuildNode(t)
	opts = withDefaults(t, opts)
	level := os.Getenv(EnvLogLevel)
	if level == "" {
		level = "info"
	}
	// No endpoint mapper on port 135 (tests side by side share loopback).
	args := []string{"--listen", opts.Addr, "--log-level", level, "--epm-port", "-1"}
	for _, s := range opts.Shares {
		spec := s.Name + "=" + s.Path
		if s.Encrypt {
			spec += ",encrypt"
		}
		if s.ReadOnly {
			spec += ",readonly"
		}
		args = append(args, "--share", spec)
	}
	for _, u := range sortedKeys(opts.Users) {
		args = append(args, "--user", u+":"+opts.Users[u])
	}
	if opts.SigningRequired {
		args = append(args, "--signing-required")
	}
	args = append(args, opts.Args...)
	n := newNode("smbnode", opts)
	n.cmd = exec.Command(bin, args...)
	if opts.NoFile > 0 {
		n.cmd = exec.Command("prlimit", append([]string{fmt.Sprintf("--nofile=%d", opts.NoFile), bin}, args...)...)
	}
	n.launch(t)
	return n
}

// withDefaults fills in the zero fields of opts and creates share directories.
func withDefaults(t testing.TB, opts Options) Options {
	t.Helper()
	if opts.Addr == "" {
		opts.Addr = FreeAddr(t, "127.0.0.1")
	}
	if opts.Users == nil {
		opts.Users = DefaultUsers
	}
	if len(opts.Shares) == 0 {
		opts.Shares = []Share{{Name: "share"}}
	}
	shares := make([]Share, len(opts.Shares))
	for i, s := range opts.Shares {
		if s.Path == "" {
			s.Path = filepath.Join(t.TempDir(), s.Name)
		}
		if err := os.MkdirAll(s.Path, 0o755); err != nil {
			t.Fatal(err)
		}
		shares[i] = s
	}
	opts.Shares = shares
	return opts
}

func newNode(kind string, opts Options) *Node {
	host, portStr, _ := net.SplitHostPort(opts.Addr)
	port, _ := strconv.Atoi(portStr)
	n := &Node{
		Addr: opts.Addr, Host: host, Port: port, Kind: kind,
		Users:  opts.Users,
		shares: map[string]Share{},
		out:    &logBuffer{},
		exited: make(chan struct{}),
	}
	for _, s := range opts.Shares {
		n.shares[s.Name] = s
	}
	return n
}

// FreeAddr returns host:port with a port that was free a moment ago. The
// port is picked below the kernel's ephemeral range
// (ip_local_port_range), so that no outgoing connection takes it as its
// source port before the caller binds it: a port the kernel hands out for
// ":0" is from that range, and the machine's own loopback traffic took one
// between FreeAddr and the bind (TestMakeRun's coordinator, in CI).
func FreeAddr(t testing.TB, host string) string {
	t.Helper()
	lo := ephemeralLow()
	for range 200 {
		p := minPickedPort + rand.IntN(lo-minPickedPort)
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err != nil {
			continue
		}
		addr := l.Addr().String()
		l.Close()
		return addr
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// minPickedPort is the lowest port FreeAddr picks: above the well-known and
// the usual service ports.
const minPickedPort = 10000

// ephemeralLow is the first port of the kernel's ephemeral range.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		var lo, hi int
		if _, err := fmt.Sscan(string(b), &lo, &hi); err == nil && lo > minPickedPort+1000 {
			return lo
		}
	}
	return 32768
}

// launch starts n.cmd, registers its cleanup and waits for the port.
func (n *Node) launch(t testing.TB) {
	t.Helper()
	n.cmd.Stdout, n.cmd.Stderr = n.out, n.out
	// Own process group: smbd signals its whole group when it exits.
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// Runs last: dump the log once everything else has been torn down.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s %s log:\n%s", n.Kind, n.Addr, n.out.String())
		}
	})
	if err := n.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", n.Kind, err)
	}
	trackProc(n.Kind+" "+n.Addr, n.cmd.Process.Pid, n.out, n.exited)
	go func() {
		n.err = n.cmd.Wait()
		close(n.exited)
	}()
	t.Cleanup(func() { n.stop(t) })
	if err := n.waitListening(StartDeadline); err != nil {
		t.Fatalf("%s on %s: %v", n.Kind, n.Addr, err)
	}
}

// waitListening polls the TCP port with a short backoff until it accepts,
// the process exits, or the deadline passes.
func (n *Node) waitListening(deadline time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	backoff := 5 * time.Millisecond
	for {
		d := net.Dialer{Timeout: time.Second}
		c, err := d.DialContext(ctx, "tcp", n.Addr)
		if err == nil {
			c.Close()
			return nil
		}
		timer := time.NewTimer(backoff)
		select {
		case <-n.exited:
			timer.Stop()
			return fmt.Errorf("exited before listening: %v", n.err)
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("not listening after %v: %v", deadline, err)
		case <-timer.C:
		}
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}

// panicRE matches a Go panic or fatal runtime error in a server log, and a
// recovered panic logged at error level through slog (text or JSON).
var panicRE = regexp.MustCompile(`(?m)^(panic: |fatal error: |goroutine \d+ \[running\]:|PANIC)|` +
	`level=ERROR[^\n]*(?i:panic)|"level":"ERROR"[^\n]*(?i:panic)`)

// stop sends SIGTERM and fails the test if the process does not exit
// cleanly within StopDeadline.
func (n *Node) stop(t testing.TB) {
	t.Helper()
	if n.extra != nil {
		defer n.extra()
	}
	select {
	case <-n.exited:
		t.Errorf("%s on %s exited early: %v", n.Kind, n.Addr, n.err)
		return
	default:
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(StopDeadline)
	defer timer.Stop()
	select {
	case <-n.exited:
	case <-timer.C:
		_ = n.cmd.Process.Kill()
		<-n.exited
		t.Errorf("%s on %s did not exit within %v of SIGTERM", n.Kind, n.Addr, StopDeadline)
		return
	}
	if n.err != nil && !(n.sigtermOK && isSIGTERM(n.err)) {
		var ee *exec.ExitError
		if !errors.As(n.err, &ee) || !ee.Exited() || ee.ExitCode() != 0 {
			t.Errorf("%s on %s: exit after SIGTERM: %v", n.Kind, n.Addr, n.err)
		}
	}
	if loc := panicRE.FindStringIndex(n.out.String()); loc != nil {
		t.Errorf("%s on %s logged a panic at byte %d", n.Kind, n.Addr, loc[0])
	}
}

func isSIGTERM(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM
}

// logBuffer is a goroutine-safe append-only buffer capped at maxLog bytes;
// beyond the cap it keeps the head and the most recent tail.
type logBuffer struct {
	mu      sync.Mutex
	head    []byte
	tail    []byte
	dropped int
}

const maxLog = 8 << 20

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.head) < maxLog/2 {
		n := min(len(p), maxLog/2-len(b.head))
		b.head = append(b.head, p[:n]...)
		p2 := p[n:]
		b.tail = append(b.tail, p2...)
	} else {
		b.tail = append(b.tail, p...)
	}
	if over := len(b.tail) - maxLog/2; over > 0 {
		b.dropped += over
		b.tail = append(b.tail[:0], b.tail[over:]...)
	}
	return len(p), nil
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dropped == 0 {
		return string(b.head) + string(b.tail)
	}
	return fmt.Sprintf("%s\n[... %d bytes dropped ...]\n%s", b.head, b.dropped, b.tail)
}
