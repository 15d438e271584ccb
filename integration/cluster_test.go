package integration

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	osuser "os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/integration/framework"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"google.golang.org/protobuf/proto"
)

// clusterDeadline bounds waits for a change to reach the nodes.
const clusterDeadline = 30 * time.Second

// TestCluster is the admin plane's acceptance test: embedded etcd, the
// coordinator and two nodes, driven with smbctl and checked with smbclient
// and a Go SMB client.
func TestCluster(t *testing.T) {
	framework.RequireTool(t, "smbclient")
	c := framework.NewCluster(t, framework.ClusterOptions{Nodes: 2})
	n1, n2 := c.Nodes[0], c.Nodes[1]
	// The share outlives the subtests, which all use it.
	dataDir := t.TempDir()
	c.MustSMBCtl(t, "share", "add", "data", dataDir, "--comment", "cluster data")

	t.Run("ShareOnEveryNode", func(t *testing.T) {
		c.MustSMBCtl(t, "user", "add", "erin", "--password", "Erin-Pass-1")
		local := t.TempDir()
		os.WriteFile(filepath.Join(local, "hello.txt"), []byte("hello from node1\n"), 0o644)
		erin := func(n *framework.ClusterNode) framework.SMBClient {
			return framework.SMBClient{Node: n.Node, User: "erin", Password: "Erin-Pass-1"}
		}
		framework.WaitFor(t, clusterDeadline, "share data on node1", func() bool {
			return erin(n1).Script(t, local, "data", "put hello.txt").ExitCode == 0
		})
		var r framework.Result
		framework.WaitFor(t, clusterDeadline, "share data on node2", func() bool {
			r = erin(n2).Script(t, local, "data", "get hello.txt copy.txt")
			return r.ExitCode == 0
		})
		if b, err := os.ReadFile(filepath.Join(local, "copy.txt")); err != nil || string(b) != "hello from node1\n" {
			t.Errorf("file read through node2: %q %v\n%s", b, err, r)
		}
		for _, n := range c.Nodes {
			if l := erin(n).List(t); l.ExitCode != 0 || !strings.Contains(l.Stdout, "data") {
				t.Errorf("smbclient -L on %s does not list share data:\n%s", n.Name, l)
			}
		}
	})

	t.Run("StorageChecked", func(t *testing.T) {
		// Both nodes checked the share's storage through their mounts
		// (one directory here: coherent) and serve it; the probes stay
		// out of the clients' sight and reach.
		var shares []struct {
			Name     string `json:"name"`
			VolumeID string `json:"volume_id"`
			Views    []struct {
				Node, State, Reason string
				ZeroCopy            bool `json:"zero_copy"`
			} `json:"views"`
		}
		framework.WaitFor(t, clusterDeadline, "both nodes serving share data after its storage check", func() bool {
			c.SMBCtlJSON(t, &shares, "share", "ls", "-o", "json")
			n := 0
			for _, sh := range shares {
				for _, v := range sh.Views {
					if sh.Name == "data" && v.State == "serving" && v.ZeroCopy {
						n++
					}
				}
			}
			return n == 2
		})
		if _, err := os.Stat(filepath.Join(dataDir, statev1.StorageProbeDir)); err != nil {
			t.Fatalf("no probe directory in the share: %v", err)
		}
		c.MustSMBCtl(t, "user", "add", "pat", "--password", "Pat-Pass-1")
		pat := framework.SMBClient{Node: n2.Node, User: "pat", Password: "Pat-Pass-1"}
		var r framework.Result
		framework.WaitFor(t, clusterDeadline, "pat lists the share", func() bool {
			r = pat.Script(t, "", "data", "ls")
			return r.ExitCode == 0
		})
		if strings.Contains(r.Stdout, statev1.StorageProbeDir) {
			t.Errorf("the probe directory is listed to clients:\n%s", r)
		}
		r = pat.Script(t, "", "data", "ls "+statev1.StorageProbeDir+`\*`)
		if !strings.Contains(r.Output(), "NT_STATUS_ACCESS_DENIED") {
			t.Errorf("listing the probe directory:\n%s", r)
		}
		r = pat.Script(t, "", "data", "mkdir "+statev1.StorageProbeDir+`\x`)
		if !strings.Contains(r.Output(), "NT_STATUS_ACCESS_DENIED") {
			t.Errorf("creating in the probe directory:\n%s", r)
		}
	})

	t.Run("UserRemovedEndsSessions", func(t *testing.T) {
		c.MustSMBCtl(t, "user", "add", "frank", "--password", "Frank-Pass-1")
		frank := framework.SMBClient{Node: n2.Node, User: "frank", Password: "Frank-Pass-1"}
		var r framework.Result
		framework.WaitFor(t, clusterDeadline, "frank logs in", func() bool {
			r = frank.Script(t, "", "data", "ls")
			return r.ExitCode == 0
		})
		live := servertest.Connect(t, n2.Addr, "frank", "Frank-Pass-1", "data", smb2.Dialect311)
		c.MustSMBCtl(t, "user", "rm", "frank")
		framework.WaitFor(t, clusterDeadline, "frank's live session to end", func() bool {
			_, err := live.TreeConnect("data")
			return err == smb2.StatusUserSessionDeleted || err == smb2.StatusNetworkSessionExpired
		})
		if r := frank.Script(t, "", "data", "ls"); r.ExitCode == 0 || !strings.Contains(r.Output(), "LOGON_FAILURE") {
			t.Errorf("login of a removed user:\n%s", r)
		}
	})

	t.Run("DrainStopsOffering", func(t *testing.T) {
		c.MustSMBCtl(t, "user", "add", "gina", "--password", "Gina-Pass-1")
		// A node offers its own addresses first, then its peers'
		// (node/cluster offerPeers).
		var s, s2 *servertest.Conn
		framework.WaitFor(t, clusterDeadline, "gina logs in", func() bool {
			s = dialSession(t, n1.Addr, "gina", "Gina-Pass-1")
			return s != nil
		})
		framework.WaitFor(t, clusterDeadline, "gina logs in on node2", func() bool {
			s2 = dialSession(t, n2.Addr, "gina", "Gina-Pass-1")
			return s2 != nil
		})
		framework.WaitFor(t, clusterDeadline, "each node offering itself, then the other", func() bool {
			return slices.Equal(offeredIPs(t, s), []string{"127.0.0.1", "127.0.0.2"}) && slices.Equal(offeredIPs(t, s2), []string{"127.0.0.2", "127.0.0.1"})
		})
		// Drained, node2 gives its public address up to node1: the
		// connection made to it ends, and a client reconnecting to it
		// reaches node1, which offers only its own address (node2, draining,
		// is left out). (A draining
		// node refuses new sessions: node/cluster TestDrain.)
		c.MustSMBCtl(t, "node", "drain", "node2")
		if err := s2.WaitClosed(); err != nil {
			t.Errorf("the connection to node2's address once node2 drains: %v", err)
		}
		framework.WaitFor(t, clusterDeadline, "node1 serving node2's address", func() bool {
			return servingOf(t, c, n2.Addr) == "node1"
		})
		var s3 *servertest.Conn
		framework.WaitFor(t, clusterDeadline, "gina logs in through node2's address", func() bool {
			s3 = tryDialSession(t, n2.Addr, "gina", "Gina-Pass-1")
			return s3 != nil
		})
		if ips := offeredIPs(t, s3); !slices.Equal(ips, []string{"127.0.0.1"}) {
			t.Errorf("through node2's address while node2 drains, offered %v, want node1's own", ips)
		}
		if ips := offeredIPs(t, s); !slices.Equal(ips, []string{"127.0.0.1"}) {
			t.Errorf("node1 offers %v while node2 drains", ips)
		}
		if _, draining := c.NodeState(t, "node2"); !draining {
			t.Error("node ls does not show node2 draining")
		}
		c.MustSMBCtl(t, "node", "resume", "node2")
		framework.WaitFor(t, clusterDeadline, "node2 offered again through its address", func() bool {
			s4 := tryDialSession(t, n2.Addr, "gina", "Gina-Pass-1")
			return s4 != nil && slices.Equal(offeredIPs(t, s4), []string{"127.0.0.2", "127.0.0.1"})
		})
	})

	t.Run("AdminAuthAndInput", func(t *testing.T) {
		if r := c.SMBCtlNoToken(t, "node", "ls"); r.ExitCode != 5 {
			t.Errorf("no token: exit %d, want 5 (unauthenticated)\n%s", r.ExitCode, r)
		}
		if r := c.SMBCtlNoToken(t, "--token", "wrong-token-0123456789", "node", "ls"); r.ExitCode != 5 {
			t.Errorf("wrong token: exit %d, want 5 (unauthenticated)\n%s", r.ExitCode, r)
		}
		for _, args := range [][]string{
			{"share", "add", "bad/name", t.TempDir()},
			{"share", "add", "rel", "relative/path"},
			{"node", "add", "Bad_Name"},
			{"user", "add", "bad\\user", "--password", "x"},
		} {
			if r := c.SMBCtl(t, args...); r.ExitCode != 2 {
				t.Errorf("smbctl %v: exit %d, want 2 (invalid argument)\n%s", args, r.ExitCode, r)
			}
		}
	})

	t.Run("NotAdmittedRefused", func(t *testing.T) {
		tok := filepath.Join(t.TempDir(), "token")
		os.WriteFile(tok, []byte("smbjoin1_not-a-real-token"), 0o600)
		r := runNode(t, c, "stranger", "127.0.0.3:"+strconv.Itoa(c.Port), "--join-token-file", tok)
		if r.ExitCode == 0 || !strings.Contains(r.Output(), "node stranger is not admitted: run smbctl node add stranger") {
			t.Errorf("a node never admitted:\n%s", r)
		}
		r = runNode(t, c, "node1", "127.0.0.3:"+strconv.Itoa(c.Port), "--join-token-file", tok)
		if r.ExitCode == 0 || !strings.Contains(r.Output(), "join token does not match") {
			t.Errorf("a node with another's token:\n%s", r)
		}
	})

	t.Run("KilledNodeShowsDown", func(t *testing.T) {
		if st, _ := c.NodeState(t, "node2"); st != "up" {
			t.Fatalf("node2 is %q before the kill", st)
		}
		n2.Kill(t)
		// The lease TTL bounds how long a dead node shows up; the
		// deadline leaves room for etcd's lease expiry checks.
		framework.WaitFor(t, 5*c.LeaseTTL+10*time.Second, "node2 shown down", func() bool {
			st, _ := c.NodeState(t, "node2")
			return st == "down"
		})
		if st, _ := c.NodeState(t, "node1"); st != "up" {
			t.Errorf("node1 is %q", st)
		}
	})
}

// runNode runs smbnode as a cluster node expected to refuse to start.
func runNode(t *testing.T, c *framework.Cluster, name, addr string, extra ...string) framework.Result {
	t.Helper()
	args := append([]string{"--listen", addr, "--etcd", strings.Join(c.Endpoints, ","), "--name", name,
		"--secret-file", filepath.Join(filepath.Dir(c.TokenFile), "secret")}, extra...)
	return framework.Run(t, "", framework.BuildNode(t), args...)
}

// dialSession opens a session of user on addr, nil if the logon fails.
func dialSession(t *testing.T, addr, user, password string) *servertest.Conn {
	t.Helper()
	s := servertest.Dial(t, addr)
	if err := s.Negotiate(smb2.Dialect311); err != nil {
		t.Fatal(err)
	}
	if err := s.SessionSetup(user, password); err != nil {
		s.Close()
		return nil
	}
	if _, err := s.TreeConnect("IPC$"); err != nil {
		t.Fatal(err)
	}
	return s
}

// tryDialSession is dialSession, but nil when nothing listens on addr
// (a public address between two holders) or the logon fails.
func tryDialSession(t *testing.T, addr, user, password string) *servertest.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil
	}
	s := servertest.NewConn(t, nc)
	if s.Negotiate(smb2.Dialect311) != nil || s.SessionSetup(user, password) != nil {
		s.Close()
		return nil
	}
	if _, err := s.TreeConnect("IPC$"); err != nil {
		s.Close()
		return nil
	}
	return s
}

// offeredIPs returns what FSCTL_QUERY_NETWORK_INTERFACE_INFO offers.
func offeredIPs(t *testing.T, s *servertest.Conn) []string {
	t.Helper()
	out, err := s.Ioctl(smb2.FsctlQueryNetworkInterfaceInfo, smb2.AnyFileID, nil, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		return nil // nothing offered
	}
	ifs, err := fscc.DecodeNetworkInterfaces(out)
	if err != nil {
		t.Fatal(err)
	}
	var ips []string
	for _, i := range ifs {
		ips = append(ips, i.IP.String())
	}
	return ips
}

// TestMakeRun runs what `make run` runs (deploy/localcluster) on a fresh
// directory, connects to its demo share on every node with smbclient,
// administers it as README says (checkDevAdmin), and stops it with Ctrl-C
// (SIGINT).
func TestMakeRun(t *testing.T) {
	framework.RequireTool(t, "smbclient")
	root, err := framework.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "localcluster")
	build := exec.Command("go", "build", "-o", bin, "./deploy/localcluster")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./deploy/localcluster: %v\n%s", err, out)
	}
	port := framework.CommonFreePort(t, 3)
	coord := framework.FreeAddr(t, "127.0.0.1")
	// The checkout around run/ is open to every local user, as one in a
	// home directory usually is: only run's own modes keep them out.
	dir := filepath.Join(openTempDir(t), "run")
	// The starting user's configuration directory, where smbctl finds the
	// development token.
	configEnv := []string{"XDG_CONFIG_HOME=" + filepath.Join(t.TempDir(), "config")}
	metricsPort := framework.CommonFreePort(t, 3)
	cmd := exec.Command(bin, "--dir", dir, "--port", strconv.Itoa(port), "--coordinator", coord,
		"--metrics-port", strconv.Itoa(metricsPort), "--coordinator-metrics", framework.FreeAddr(t, "127.0.0.1"))
	cmd.Env = append(os.Environ(), configEnv...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.SysProcAttr = framework.OwnGroup()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		var all strings.Builder
		for sc.Scan() {
			all.WriteString(sc.Text() + "\n")
			if strings.HasPrefix(sc.Text(), "Ctrl-C stops the cluster") {
				ready <- all.String()
			}
		}
		io.Copy(io.Discard, stdout)
		exited <- cmd.Wait()
	}()
	var banner string
	select {
	case banner = <-ready:
	case err := <-exited:
		t.Fatalf("localcluster exited before it was ready: %v\n%s", err, stderr.String())
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("localcluster not ready\n%s", stderr.String())
	}
	if !strings.Contains(banner, "smbclient //127.0.0.1/demo -p "+strconv.Itoa(port)+" -U demo%demo") {
		t.Errorf("the banner does not say how to connect:\n%s", banner)
	}
	node1Metrics := "127.0.0.1:" + strconv.Itoa(metricsPort)
	if !strings.Contains(banner, "http://"+node1Metrics+"/metrics") {
		t.Errorf("the banner does not say where the metrics are:\n%s", banner)
	}
	if s, err := scrapeMetrics(t, node1Metrics); err != nil || s["smbcluster_smb_requests_total"] == nil {
		t.Errorf("node1's /metrics: %v", err)
	}
	for i := 1; i <= 3; i++ {
		host := "127.0.0." + strconv.Itoa(i)
		n := &framework.Node{Host: host, Port: port, Addr: net.JoinHostPort(host, strconv.Itoa(port))}
		r := framework.SMBClient{Node: n, User: "demo", Password: "demo"}.Script(t, "", "demo", "ls")
		if r.ExitCode != 0 {
			t.Errorf("demo share on %s:\n%s", host, r)
		}
	}
	checkSecondRun(t, bin, dir, port, coord, configEnv)
	ctl := "bin/smbctl --insecure --endpoint " + coord
	if !strings.Contains(banner, ctl+" node ls") {
		t.Errorf("the banner does not say how to administer the cluster (%s node ls):\n%s", ctl, banner)
	}
	checkDevAdmin(t, coord, dir, configEnv)
	checkDevEtcd(t, banner, dir, port)
	cmd.Process.Signal(syscall.SIGINT)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("localcluster after Ctrl-C: %v\n%s", err, stderr.String())
		}
	case <-ctx.Done():
		cmd.Process.Kill()
		t.Fatal("localcluster did not stop on Ctrl-C")
	}
	if _, err := os.Stat(filepath.Join(dir, "shares", "demo")); err != nil {
		t.Errorf("demo share directory: %v", err)
	}
	link := filepath.Join(strings.TrimPrefix(configEnv[0], "XDG_CONFIG_HOME="), "smbctl", "dev", coord+".token")
	if _, err := os.Lstat(link); !os.IsNotExist(err) {
		t.Errorf("the development token's link %s outlives the cluster: %v", link, err)
	}
}

// checkSecondRun: a second `make run` while one runs — on the same
// directory, or another directory with the same coordinator address, or
// with a node's address held — says so and exits non-zero at once, and
// leaves the running cluster as it was (checkDevAdmin, after it, still
// administers it with its token).
func checkSecondRun(t *testing.T, bin, dir string, port int, coord string, env []string) {
	t.Helper()
	other := filepath.Join(t.TempDir(), "run")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"same dir", []string{"--dir", dir, "--port", strconv.Itoa(port), "--coordinator", coord}, dir + " is in use by another localcluster"},
		{"same coordinator", []string{"--dir", other, "--port", strconv.Itoa(framework.CommonFreePort(t, 3)), "--coordinator", coord, "--metrics-port", "0", "--coordinator-metrics", ""}, "address in use: " + coord},
		{"same node address", []string{"--dir", other, "--port", strconv.Itoa(port), "--coordinator", framework.FreeAddr(t, "127.0.0.1"), "--metrics-port", "0", "--coordinator-metrics", ""}, "address in use: 127.0.0.1:" + strconv.Itoa(port)},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		cmd := exec.CommandContext(ctx, bin, tc.args...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || timedOut {
			t.Errorf("second run, %s: %v, want exit 1\n%s", tc.name, err, out)
		}
		if !strings.Contains(string(out), tc.want) || strings.Contains(string(out), "panic") {
			t.Errorf("second run, %s: want %q, got\n%s", tc.name, tc.want, out)
		}
	}
}

// checkDevAdmin: the user who started the development cluster
// administers it with smbctl and only the flags README gives, within its
// share roots; another local user (nobody) is refused, with or without the
// path of the token file.
func checkDevAdmin(t *testing.T, coord, dir string, ownerEnv []string) {
	ctl := framework.BuildSMBCtl(t)
	conn := []string{"--insecure", "--endpoint", coord}
	owner := func(args ...string) framework.Result {
		t.Helper()
		return framework.RunAs(t, nil, ownerEnv, "", ctl, append(conn, args...)...)
	}
	if r := owner("node", "ls"); r.ExitCode != 0 || !strings.Contains(r.Stdout, "node3") {
		t.Errorf("the owner's node ls:\n%s", r)
	}
	team := filepath.Join(dir, "shares", "team")
	os.Mkdir(team, 0o755)
	if r := owner("share", "add", "team", team); r.ExitCode != 0 {
		t.Errorf("the owner's share add under run/shares:\n%s", r)
	}
	os.Symlink("/etc", filepath.Join(dir, "shares", "etc"))
	for _, p := range []string{"/etc", filepath.Join(dir, "shares", "etc"), filepath.Join(dir, "shares", "etc", "ssh")} {
		r := owner("share", "add", "etcshare", p)
		if r.ExitCode != 5 || !strings.Contains(r.Stderr, "outside the share roots") || !strings.Contains(r.Stderr, filepath.Join(dir, "shares")) {
			t.Errorf("the owner's share add etcshare %s: want exit 5 naming the share root\n%s", p, r)
		}
	}
	escape := dir + "/shares" + strings.Repeat("/..", strings.Count(dir, "/")+1) + "/etc"
	if r := owner("share", "add", "etcshare", escape); r.ExitCode != 2 || !strings.Contains(r.Stderr, "not clean") {
		t.Errorf("the owner's share add etcshare %s: want exit 2 (not clean)\n%s", escape, r)
	}

	if os.Geteuid() != 0 {
		t.Log("not root: another user's smbctl is not tried")
		return
	}
	nobody := nobodyCredential(t)
	// smbctl where nobody can run it; nobody's own home.
	pub, err := os.MkdirTemp("", "smbctl-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(pub) })
	bin := filepath.Join(pub, "smbctl")
	b, err := os.ReadFile(ctl)
	if err == nil {
		err = os.WriteFile(bin, b, 0o755)
	}
	if err == nil {
		err = os.Chmod(pub, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + pub, "XDG_CONFIG_HOME="}
	r := framework.RunAs(t, nobody, env, pub, bin, append(conn, "share", "add", "etcshare", "/etc")...)
	if r.ExitCode != 5 || !strings.Contains(r.Stderr, "administered only by the user who started it") {
		t.Errorf("nobody's share add: want exit 5 saying only the starting user may administer\n%s", r)
	}
	r = framework.RunAs(t, nobody, env, pub, bin, append(conn, "user", "add", "evil", "--password", "Evil-Pass-1")...)
	if r.ExitCode != 5 {
		t.Errorf("nobody's user add: want exit 5\n%s", r)
	}
	r = framework.RunAs(t, nobody, env, pub, bin, append(conn, "--token-file", filepath.Join(dir, "admin-token"), "node", "ls")...)
	if r.ExitCode == 0 || !strings.Contains(r.Stderr, "permission denied") {
		t.Errorf("nobody's node ls with the owner's token file: want permission denied\n%s", r)
	}
	if r := owner("share", "ls"); strings.Contains(r.Stdout, "etcshare") {
		t.Errorf("a share etcshare exists:\n%s", r)
	}
}

// openTempDir is a new t.TempDir() that other users may enter, as may its
// parent.
func openTempDir(t *testing.T) string {
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// checkDevEtcd: the development cluster's etcd, named in the banner, is a
// unix socket in run/etcd; the starting user's etcd client writes records
// the nodes apply, while another local user (nobody) cannot connect, so
// cannot add a share of /etc past the coordinator.
func checkDevEtcd(t *testing.T, banner, dir string, port int) {
	_, rest, _ := strings.Cut(banner, ": etcd ")
	endpoint, _, _ := strings.Cut(rest, ",")
	if want := "unix://" + filepath.Join(dir, "etcd", "client.sock"); endpoint != want {
		t.Errorf("the banner's etcd endpoint is %q, want %q:\n%s", endpoint, want, banner)
	}
	if os.Geteuid() != 0 {
		t.Log("not root: another user's etcd client is not tried")
		return
	}
	framework.RequireTool(t, "curl")
	n := &framework.Node{Host: "127.0.0.1", Port: port, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	r := etcdPutShare(t, nobodyCredential(t), endpoint, "etcleak", "/etc")
	if r.ExitCode == 0 {
		t.Errorf("nobody wrote a share record for /etc into the development etcd:\n%s", r)
	}
	// The owner's record comes later in etcd's order, so once a node serves
	// it, nobody's would have been served too.
	if r := etcdPutShare(t, nil, endpoint, "ownerprobe", filepath.Join(dir, "shares", "demo")); r.ExitCode != 0 {
		t.Fatalf("the owner's etcd client:\n%s", r)
	}
	framework.WaitFor(t, clusterDeadline, "the share the owner wrote into etcd served", func() bool {
		return framework.SMBClient{Node: n, User: "demo", Password: "demo"}.Script(t, "", "ownerprobe", "ls").ExitCode == 0
	})
	if r := (framework.SMBClient{Node: n, User: "demo", Password: "demo"}).Script(t, "", "etcleak", "get passwd -"); r.ExitCode == 0 {
		t.Errorf("/etc served as etcleak:\n%s", r)
	}
}

// etcdPutShare writes a share record straight into etcd through its JSON
// gateway with curl, as cred (nil: this user).
func etcdPutShare(t *testing.T, cred *syscall.Credential, endpoint, name, path string) framework.Result {
	rec, err := proto.Marshal(&statev1.ShareRecord{Name: name, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString
	body := fmt.Sprintf(`{"key": %q, "value": %q}`, b64([]byte(statev1.ShareKey(name))), b64(rec))
	args := []string{"-sS", "--fail", "--max-time", "10", "-d", body}
	if sock, ok := strings.CutPrefix(endpoint, "unix://"); ok {
		args = append(args, "--unix-socket", sock, "http://localhost/v3/kv/put")
	} else {
		args = append(args, endpoint+"/v3/kv/put")
	}
	return framework.RunAs(t, cred, nil, "/", "curl", args...)
}

// nobodyCredential is user nobody's uid and gid.
func nobodyCredential(t *testing.T) *syscall.Credential {
	u, err := osuser.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}
}
