package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/coordinator/coord"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
)

// ClusterOptions configures NewCluster.
type ClusterOptions struct {
	// Nodes is the number of nodes, on 127.0.0.1, 127.0.0.2, ... (default 2).
	Nodes int
	// LeaseTTL is the nodes' etcd lease TTL (default 3s, the product's):
	// a killed node shows down within it. Shorter makes a node on a
	// loaded machine fence itself (its keep-alives late), as it should.
	LeaseTTL time.Duration
	// EtcdProcess runs etcd as a process of its own (StartEtcdProcess),
	// which the test can stop and continue, instead of embedded.
	EtcdProcess bool
	// NodeArgs are extra smbnode arguments for every node (--auth kerberos).
	NodeArgs []string
	// Metrics serves /metrics and /stats on every node (--metrics-addr,
	// one port on each node's address: ClusterNode.MetricsAddr) and
	// /metrics on the coordinator (Cluster.CoordMetricsAddr).
	Metrics bool
}

// Cluster is an embedded etcd, a coordinator (in this process, plaintext
// on loopback with a bearer token, shares allowed under os.TempDir()) and
// smbnode processes that joined it, all on the same SMB port of their own
// loopback address.
type Cluster struct {
	Endpoints []string // etcd
	CoordAddr string
	Token     string
	TokenFile string
	Port      int // every node's SMB port
	Nodes     []*ClusterNode
	LeaseTTL  time.Duration
	// Etcd is the etcd process when ClusterOptions.EtcdProcess is set.
	Etcd *EtcdProcess
	// MetricsPort is the nodes' metrics port, CoordMetricsAddr the
	// coordinator's metrics address, with ClusterOptions.Metrics.
	MetricsPort      int
	CoordMetricsAddr string

	dir        string
	secretFile string
	nodeArgs   []string
	nodeBin    string // the smbnode the nodes run; empty: BuildNode's
	// command makes the command that runs a node (name, argv); nil runs
	// it here (exec.Command). A bed runs it in the node's host.
	command func(name string, argv []string) *exec.Cmd
}

// ClusterNode is one smbnode of a Cluster.
type ClusterNode struct {
	*Node
	Name string
	// TokenFile holds the node's join token (StartNode): another
	// process started with it joins as the same node.
	TokenFile string
	// MetricsAddr is where the node serves /metrics (ClusterOptions.Metrics).
	MetricsAddr string
	killed      bool
}

// NewCluster starts a cluster of opts.Nodes nodes and waits until every
// node listens. Everything stops when the test ends.
func NewCluster(t testing.TB, opts ClusterOptions) *Cluster {
	t.Helper()
	noteIfFailed(t)
	if opts.Nodes == 0 {
		opts.Nodes = 2
	}
	if opts.LeaseTTL == 0 {
		opts.LeaseTTL = 3 * time.Second
	}
	c := newCluster(t, opts.LeaseTTL, opts.NodeArgs)
	c.startEtcdAndCoordinator(t, opts.EtcdProcess, opts.Metrics, nil)
	c.Port = CommonFreePort(t, opts.Nodes)
	if opts.Metrics {
		c.MetricsPort = CommonFreePort(t, opts.Nodes)
	}
	for i := 1; i <= opts.Nodes; i++ {
		c.Nodes = append(c.Nodes, c.StartNode(t, "node"+strconv.Itoa(i), "127.0.0."+strconv.Itoa(i)))
	}
	return c
}

// newCluster makes a Cluster's directory, secret and admin token.
func newCluster(t testing.TB, leaseTTL time.Duration, nodeArgs []string) *Cluster {
	t.Helper()
	c := &Cluster{dir: t.TempDir(), LeaseTTL: leaseTTL, Token: "test-token-" + strconv.Itoa(os.Getpid()) + "-0123456789",
		nodeArgs: nodeArgs}
	c.secretFile = filepath.Join(c.dir, "secret")
	c.TokenFile = filepath.Join(c.dir, "token")
	writeFile(t, c.secretFile, string(statev1.GenerateSecret()))
	writeFile(t, c.TokenFile, c.Token)
	return c
}

func writeFile(t testing.TB, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// startEtcdAndCoordinator starts etcd (embedded, or a process of its own
// when process is set; none when endpoints name a running one) and the
// coordinator.
func (c *Cluster) startEtcdAndCoordinator(t testing.TB, process, metrics bool, endpoints []string) {
	t.Helper()
	cfg := coord.Config{
		Listen: "127.0.0.1:0", SecretFile: c.secretFile, Token: c.Token,
		ShareRoots: []string{os.TempDir()}, // tests share directories from t.TempDir()
		Version:    "test", Log: slog.New(slog.DiscardHandler),
	}
	if metrics {
		cfg.MetricsAddr = "127.0.0.1:0"
	}
	switch {
	case endpoints != nil:
		cfg.Endpoints = endpoints
	case process:
		c.Etcd = StartEtcdProcess(t, filepath.Join(c.dir, "etcd"))
		cfg.Endpoints = c.Etcd.Endpoints
	default:
		cfg.EmbeddedEtcd = filepath.Join(c.dir, "etcd")
	}
	co, err := coord.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { co.Stop(false) })
	c.Endpoints = co.Endpoints
	c.CoordAddr = co.Addr.String()
	if co.MetricsAddr != nil {
		c.CoordMetricsAddr = co.MetricsAddr.String()
	}
}

// CommonFreePort finds a port free on 127.0.0.1 ... 127.0.0.n, so that
// nodes on those addresses share one SMB port.
func CommonFreePort(t testing.TB, n int) int {
	t.Helper()
	for attempt := 0; attempt < 50; attempt++ {
		_, p, _ := net.SplitHostPort(FreeAddr(t, "127.0.0.1"))
		ok := true
		for i := 2; i <= n && ok; i++ {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0."+strconv.Itoa(i), p))
			if err != nil {
				ok = false
				continue
			}
			l.Close()
		}
		if ok {
			port, _ := strconv.Atoi(p)
			return port
		}
	}
	t.Fatal("no port free on every node address")
	return 0
}

// StartNode admits node name at host:c.Port with smbctl and starts it.
func (c *Cluster) StartNode(t testing.TB, name, host string) *ClusterNode {
	t.Helper()
	addr := net.JoinHostPort(host, strconv.Itoa(c.Port))
	tokenFile := c.admit(t, name, addr)
	extra := append([]string{"--join-token-file", tokenFile}, c.nodeArgs...)
	var metricsAddr string
	if c.MetricsPort != 0 {
		metricsAddr = net.JoinHostPort(host, strconv.Itoa(c.MetricsPort))
		extra = append(extra, "--metrics-addr", metricsAddr)
	}
	n := c.LaunchNode(t, name, addr, extra...)
	n.TokenFile, n.MetricsAddr = tokenFile, metricsAddr
	c.waitServing(t, name, addr)
	return n
}

// admit admits node name with public address addr (smbctl node add) and
// returns the file holding its join token.
func (c *Cluster) admit(t testing.TB, name, addr string) string {
	t.Helper()
	var added struct {
		JoinToken string `json:"join_token"`
	}
	c.SMBCtlJSON(t, &added, "node", "add", name, "--address", addr)
	tokenFile := filepath.Join(c.dir, name+".join-token")
	writeFile(t, tokenFile, added.JoinToken)
	return tokenFile
}

// waitServing waits until node name serves its public address addr:
// until it has joined and taken it, another node serves it (and
// LaunchNode's dial reached that one).
func (c *Cluster) waitServing(t testing.TB, name, addr string) {
	t.Helper()
	WaitFor(t, StartDeadline, name+" serving its public address "+addr, func() bool {
		return slices.Contains(c.NodeListed(t, name).Serving, addr)
	})
}

// LaunchNode starts bin/smbnode as cluster node name on addr with extra
// arguments, and waits until it listens.
func (c *Cluster) LaunchNode(t testing.TB, name, addr string, extra ...string) *ClusterNode {
	t.Helper()
	level := os.Getenv(EnvLogLevel)
	if level == "" {
		level = "info"
	}
	args := append([]string{"--listen", addr, "--log-level", level, "--etcd", strings.Join(c.Endpoints, ","),
		"--name", name, "--secret-file", c.secretFile, "--lease-ttl", c.LeaseTTL.String(),
		// No endpoint mapper on port 135 unless a test asks (extra comes
		// after): clusters of tests run side by side share the addresses.
		"--epm-port", "-1"}, extra...)
	n := &ClusterNode{Node: newNode("smbnode", Options{Addr: addr}), Name: name}
	bin := c.nodeBin
	if bin == "" {
		bin = BuildNode(t)
	}
	if c.command != nil {
		n.cmd = c.command(name, append([]string{bin}, args...))
	} else {
		n.cmd = exec.Command(bin, args...)
	}
	n.cmd.Stdout, n.cmd.Stderr = n.out, n.out
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node %s (%s) log:\n%s", name, addr, n.out.String())
		}
	})
	if err := n.cmd.Start(); err != nil {
		t.Fatalf("start smbnode: %v", err)
	}
	trackProc("node "+name+" "+addr, n.cmd.Process.Pid, n.out, n.exited)
	go func() {
		n.err = n.cmd.Wait()
		close(n.exited)
	}()
	t.Cleanup(func() { n.shutdown(t) })
	if err := n.waitListening(StartDeadline); err != nil {
		t.Fatalf("node %s on %s: %v", name, addr, err)
	}
	return n
}

// Exited is closed when the node's process has exited; ExitErr is its
// status then.
func (n *ClusterNode) Exited() <-chan struct{} { return n.exited }
func (n *ClusterNode) ExitErr() error          { return n.err }

// Signal sends sig to the node's process (SIGTERM: a graceful shutdown
// the test watches with Exited). SIGSTOP returns once every thread of
// the process is stopped: from then on nothing the test sends the node
// is served until SIGCONT.
func (n *ClusterNode) Signal(sig os.Signal) error {
	if sig == syscall.SIGSTOP {
		return stop(n.cmd.Process.Pid)
	}
	return n.cmd.Process.Signal(sig)
}

// Kill kills the node's process with SIGKILL (no chance to leave the
// cluster) and waits for it to exit.
func (n *ClusterNode) Kill(t testing.TB) {
	t.Helper()
	n.killed = true
	n.cmd.Process.Kill()
	<-n.exited
}

// shutdown stops a node that is still running with SIGTERM and checks
// that it exits cleanly without a panic in its log.
func (n *ClusterNode) shutdown(t testing.TB) {
	if n.killed {
		return
	}
	select {
	case <-n.exited:
		return // the test looked at its exit
	default:
	}
	n.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(StopDeadline)
	defer timer.Stop()
	select {
	case <-n.exited:
	case <-timer.C:
		n.cmd.Process.Kill()
		<-n.exited
		t.Errorf("node %s did not exit within %v of SIGTERM", n.Name, StopDeadline)
		return
	}
	if n.err != nil {
		t.Errorf("node %s: exit after SIGTERM: %v", n.Name, n.err)
	}
	if loc := panicRE.FindStringIndex(n.out.String()); loc != nil {
		t.Errorf("node %s logged a panic at byte %d", n.Name, loc[0])
	}
}

// ctlBuild builds smbctl once per test binary.
var ctlBuild struct {
	once sync.Once
	bin  string
	err  error
}

// BuildSMBCtl builds ./cli once and returns the binary's path.
func BuildSMBCtl(t testing.TB) string {
	t.Helper()
	ctlBuild.once.Do(func() {
		// make test builds bin/smbctl next to the SMBNODE_BIN it names.
		if nb := os.Getenv(EnvNodeBinary); nb != "" {
			if bin := filepath.Join(filepath.Dir(nb), "smbctl"); fileExists(bin) {
				ctlBuild.bin = bin
				return
			}
		}
		root, err := ModuleRoot()
		if err != nil {
			ctlBuild.err = err
			return
		}
		dir, err := os.MkdirTemp("", "smbctl-build-")
		if err != nil {
			ctlBuild.err = err
			return
		}
		bin := filepath.Join(dir, "smbctl")
		cmd := exec.Command("go", "build", "-o", bin, "./cli")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			ctlBuild.err = fmt.Errorf("go build ./cli: %v\n%s", err, out)
			return
		}
		ctlBuild.bin = bin
	})
	if ctlBuild.err != nil {
		t.Fatal(ctlBuild.err)
	}
	return ctlBuild.bin
}

// SMBCtl runs smbctl against the cluster's coordinator with its token.
func (c *Cluster) SMBCtl(t testing.TB, args ...string) Result {
	t.Helper()
	conn := []string{"--endpoint", c.CoordAddr, "--insecure", "--token-file", c.TokenFile}
	return Run(t, "", BuildSMBCtl(t), append(conn, args...)...)
}

// SMBCtlNoToken runs smbctl with the given connection flags only.
func (c *Cluster) SMBCtlNoToken(t testing.TB, args ...string) Result {
	t.Helper()
	return Run(t, "", BuildSMBCtl(t), append([]string{"--endpoint", c.CoordAddr, "--insecure"}, args...)...)
}

// MustSMBCtl runs smbctl and fails the test unless it exits 0.
func (c *Cluster) MustSMBCtl(t testing.TB, args ...string) Result {
	t.Helper()
	r := c.SMBCtl(t, args...)
	if r.ExitCode != 0 {
		t.Fatalf("smbctl failed:\n%s", r)
	}
	return r
}

// SMBCtlJSON runs smbctl with -o json and decodes its output into v.
func (c *Cluster) SMBCtlJSON(t testing.TB, v any, args ...string) {
	t.Helper()
	r := c.MustSMBCtl(t, append(args, "-o", "json")...)
	if err := json.NewDecoder(bytes.NewReader([]byte(r.Stdout))).Decode(v); err != nil {
		t.Fatalf("%s: output is not JSON: %v\n%s", r.Cmd, err, r.Stdout)
	}
}

// NodeState returns node name's state as `smbctl node ls` reports it
// ("admitted", "up", "down") and whether it is draining.
func (c *Cluster) NodeState(t testing.TB, name string) (string, bool) {
	t.Helper()
	n := c.NodeListed(t, name)
	return n.State, n.Draining
}

// ListedNode is a node as `smbctl node ls -o json` lists it.
type ListedNode struct {
	Name     string `json:"name"`
	State    string `json:"state"` // "admitted", "up", "down"
	Draining bool   `json:"draining"`
	Epoch    uint64 `json:"epoch"`
	// Serving are the public addresses the node serves now.
	Serving []string `json:"serving"`
}

// NodeListed returns node name as `smbctl node ls` lists it (zero if it
// is not listed).
func (c *Cluster) NodeListed(t testing.TB, name string) ListedNode {
	t.Helper()
	var nodes []ListedNode
	c.SMBCtlJSON(t, &nodes, "node", "ls")
	for _, n := range nodes {
		if n.Name == name {
			return n
		}
	}
	return ListedNode{}
}

// WaitFor polls cond every few milliseconds until it holds, failing the
// test after deadline.
func WaitFor(t testing.TB, deadline time.Duration, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within %v", what, deadline)
		case <-tick.C:
		}
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
