package framework

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// BedOptions configures NewBed.
type BedOptions struct {
	// Nodes is the number of node hosts, one smbnode each (default 3).
	Nodes int
	// Backend is the storage every node mounts (default Local).
	Backend Backend
	// ClientDefaults mounts and serves the backend with its client's and
	// server's defaults instead of the options the cluster requires.
	ClientDefaults bool
	// LeaseTTL is the nodes' etcd lease TTL (default 3s).
	LeaseTTL time.Duration
	// NodeArgs are extra smbnode arguments for every node.
	NodeArgs []string
	// NodeBinary is the smbnode every node runs; empty means BuildNode's.
	NodeBinary string
}

// Bed is a cluster deployed as on separate machines, on one: each node,
// each etcd member and the storage servers in a host of their own (a
// network namespace on a private bridge, see Host); each node in a mount
// namespace of its own with its own client's mount of the backend at
// SharePath; etcd a three-member cluster; public addresses moved by the
// real --address-hook (ip addr add/del and a gratuitous ARP on the node
// host's veth). The coordinator and the clients run in this process, in
// the root namespace, which reaches every host through the bridge's
// address.
//
// The embedded Cluster gives the nodes (Nodes, in host order: Nodes[i]
// runs on Hosts[i]), smbctl and the waits of a one-host cluster.
type Bed struct {
	*Cluster
	// ID is the bed's number: its subnet is 10.231.ID.0/24 and its names
	// start smbc-ID-.
	ID int
	// Hosts are the node hosts, EtcdHosts the etcd members' and Storage
	// the backend's.
	Hosts     []*Host
	EtcdHosts []*Host
	Storage   *Host
	// EtcdMembers are the etcd processes, one per EtcdHosts.
	EtcdMembers []*Proc
	Backend     Backend
	Coherent    bool
	// SharePath is where every node mounts the backend: one path, the
	// same on every node (an empty directory in the root namespace).
	SharePath string

	life     testing.TB // NewBed's: the processes' lifetime
	mu       sync.Mutex
	past     map[int][]*ClusterNode // each node's earlier processes (RestartNode), oldest first
	tmp      string                 // the hosts' temporary directories are made here
	state    string                 // /run/smbc-bed/ID: the mount namespace files
	hook     string                 // the --address-hook script
	nodeArgs []string
}

// Bed names and addresses. A bed's hosts are named smbc-ID-NAME (network
// namespaces, the root ends of their veth pairs), its bridge smbc-ID-br
// with 10.231.ID.1/24.
const (
	bedStateDir = "/run/smbc-bed"
	bedPrefix   = "smbc-"
	bedIface    = "eth0" // every host's end of its veth pair
	// BedSMBPort is every node's SMB port on the bed.
	BedSMBPort   = 445
	bedPeerPort  = 7446
	etcdClient   = 2379
	etcdPeer     = 2380
	firstHostIP  = 11  // node host i: .11+i
	firstPubIP   = 101 // node i's public address: .101+i
	firstEtcdIP  = 21
	storageIP    = 31
	bedEtcdCount = 3
)

// RequireBed skips the test unless the bed can run here: root, /dev/fuse,
// and the programs it uses (Debian iproute2, util-linux, etcd-server,
// arping; the backend's own are checked by the backend).
func RequireBed(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the test bed needs root (network and mount namespaces)")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("the test bed needs /dev/fuse")
	}
	for _, p := range []string{"ip", "nsenter", "unshare", "mount", "arping", EtcdBinary} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed (CI installs it; see .ci/run)", p)
		}
	}
}

// NewBed brings a bed up: hosts, etcd, the coordinator, the backend and
// opts.Nodes nodes serving their public addresses, each with the backend
// mounted at SharePath. Everything is torn down when the test ends, also
// after a failed start.
func NewBed(t testing.TB, opts BedOptions) *Bed {
	t.Helper()
	noteIfFailed(t)
	RequireBed(t)
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	if opts.Backend == nil {
		opts.Backend = &Local{}
	}
	if opts.LeaseTTL == 0 {
		opts.LeaseTTL = 3 * time.Second
	}
	start := time.Now()
	b := &Bed{Backend: opts.Backend, Coherent: !opts.ClientDefaults, nodeArgs: opts.NodeArgs, life: t}
	// Asked for before anything else, the test's temporary directory is
	// removed after the bed's teardown has killed every process that
	// writes there (Host.TempDir).
	b.tmp = t.TempDir()
	b.allocate(t)
	b.network(t)
	for i := 1; i <= opts.Nodes; i++ {
		b.Hosts = append(b.Hosts, b.addHost(t, "h"+strconv.Itoa(i), firstHostIP+i-1))
	}
	for i := 1; i <= bedEtcdCount; i++ {
		b.EtcdHosts = append(b.EtcdHosts, b.addHost(t, "e"+strconv.Itoa(i), firstEtcdIP+i-1))
	}
	b.Storage = b.addHost(t, "s1", storageIP)
	var phases []string
	phase := func(what string) {
		phases = append(phases, fmt.Sprintf("%s %v", what, time.Since(start).Round(time.Millisecond)))
	}
	phase("hosts")
	b.startEtcd(t)
	b.Cluster = newCluster(t, opts.LeaseTTL, opts.NodeArgs)
	b.nodeBin = opts.NodeBinary
	b.Port = BedSMBPort
	b.command = func(name string, argv []string) *exec.Cmd {
		cmd := b.HostOf(name).Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), EnvTestClockFile+"="+b.ClockFile(name))
		return cmd
	}
	b.startEtcdAndCoordinator(t, false, false, b.EtcdEndpoints())
	phase("etcd")
	b.Backend.Start(t, b.Storage, b.Coherent)
	phase("backend")
	b.SharePath = filepath.Join(b.tmp, "share")
	if err := os.Mkdir(b.SharePath, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range b.Hosts {
		b.mount(t, b.Hosts[i])
	}
	phase("mounts")
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	b.hook = filepath.Join(root, "integration", "framework", "bed-address-hook")
	for i := range b.Hosts {
		b.Nodes = append(b.Nodes, b.startNode(t, i))
	}
	phase("nodes")
	t.Logf("bed %d (%s, coherent %v) up in %v (at: %s)", b.ID, b.Backend.Name(), b.Coherent,
		time.Since(start).Round(time.Millisecond), strings.Join(phases, ", "))
	return b
}

// Subnet is the bed's network, 10.231.ID.
func (b *Bed) Subnet() string { return "10.231." + strconv.Itoa(b.ID) }

// PublicAddr is node i's (0-based) public address, host:port: an address
// of its own that the node's --address-hook puts on its host's veth, not
// the host's fixed address.
func (b *Bed) PublicAddr(i int) string {
	return net.JoinHostPort(b.Subnet()+"."+strconv.Itoa(firstPubIP+i), strconv.Itoa(BedSMBPort))
}

// HostOf returns the host node name runs on.
func (b *Bed) HostOf(name string) *Host {
	i, err := strconv.Atoi(strings.TrimPrefix(name, "node"))
	if err != nil || i < 1 || i > len(b.Hosts) {
		panic("framework: no bed host for node " + name)
	}
	return b.Hosts[i-1]
}

// name returns the bed-wide name of one of its objects.
func (b *Bed) name(s string) string { return bedPrefix + strconv.Itoa(b.ID) + "-" + s }

// allocate sweeps what dead earlier runs left and takes a free bed number:
// /run/smbc-bed/ID.pid, made by link(2) (which fails if it exists), holds
// the owner's pid.
func (b *Bed) allocate(t testing.TB) {
	t.Helper()
	if err := os.MkdirAll(bedStateDir, 0o755); err != nil {
		t.Fatal(err)
	}
	privateMount(t, bedStateDir)
	sweepBeds(t)
	tmp := filepath.Join(bedStateDir, "new."+strconv.Itoa(os.Getpid()))
	writeFile(t, tmp, strconv.Itoa(os.Getpid()))
	defer os.Remove(tmp)
	for id := 1 + rand.IntN(250); ; id++ {
		if id > 250 {
			id = 1
		}
		if os.Link(tmp, filepath.Join(bedStateDir, strconv.Itoa(id)+".pid")) == nil {
			b.ID = id
			break
		}
	}
	b.state = filepath.Join(bedStateDir, strconv.Itoa(b.ID))
	if err := os.MkdirAll(b.state, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { teardownBed(b.ID) })
}

// privateMount makes dir a mount point of its own with private
// propagation, as ip-netns does for /run/netns: a namespace file can be
// bound only under a mount that does not propagate.
func privateMount(t testing.TB, dir string) {
	t.Helper()
	if exec.Command("mountpoint", "-q", dir).Run() != nil {
		mustRun(t, "mount", "--bind", dir, dir)
	}
	mustRun(t, "mount", "--make-private", dir)
}

// sweepBeds tears down the beds whose owner process is gone.
func sweepBeds(t testing.TB) {
	t.Helper()
	pids, _ := filepath.Glob(filepath.Join(bedStateDir, "*.pid"))
	for _, f := range pids {
		id, err := strconv.Atoi(strings.TrimSuffix(filepath.Base(f), ".pid"))
		if err != nil {
			continue
		}
		b, _ := os.ReadFile(f)
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if pid > 0 && syscall.Kill(pid, 0) == nil {
			continue
		}
		t.Logf("removing bed %d of dead process %d", id, pid)
		teardownBed(id)
	}
	// Namespaces and bridges of a bed without a number file (removed by
	// hand): a bed takes its number before it makes any, and gives it
	// back only after removing them all.
	var orphans []int
	out, _ := exec.Command("ip", "-o", "link", "show", "type", "bridge").Output()
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 1 {
			orphans = append(orphans, bedNumber(strings.TrimSuffix(f[1], ":")))
		}
	}
	out, _ = exec.Command("ip", "netns", "list").Output()
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			orphans = append(orphans, bedNumber(f[0]))
		}
	}
	for _, id := range orphans {
		if id > 0 && !fileExists(filepath.Join(bedStateDir, strconv.Itoa(id)+".pid")) {
			teardownBed(id)
		}
	}
	sweepSharedDirs()
}

// bedNumber returns the number of the bed a namespace or link named name
// belongs to (smbc-ID-...), 0 if none.
func bedNumber(name string) int {
	rest, ok := strings.CutPrefix(name, bedPrefix)
	if !ok {
		return 0
	}
	id, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(id)
	if err != nil {
		return 0
	}
	return n
}

// teardownBed removes everything of bed id: every process in its network
// namespaces, the mount namespaces, the network namespaces (and with them
// the veth pairs), the bridge, its state and finally its number.
func teardownBed(id int) {
	prefix := bedPrefix + strconv.Itoa(id) + "-"
	out, _ := exec.Command("ip", "netns", "list").Output()
	var nss []string
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(f[0], prefix) {
			nss = append(nss, f[0])
		}
	}
	killNetNSProcesses(nss)
	state := filepath.Join(bedStateDir, strconv.Itoa(id))
	files, _ := filepath.Glob(filepath.Join(state, "mnt-*"))
	for _, f := range files {
		exec.Command("umount", f).Run()
	}
	for _, ns := range nss {
		// The root end of the host's veth pair (named as the namespace)
		// first: deleting it deletes both ends at once, while a deleted
		// namespace's devices go later, in the kernel's own time, and
		// the next bed of this number would find the name taken.
		exec.Command("ip", "link", "del", ns).Run()
		exec.Command("ip", "netns", "del", ns).Run()
	}
	exec.Command("ip", "link", "del", prefix+"br").Run()
	os.RemoveAll(state)
	os.Remove(state + ".pid")
}

// killNetNSProcesses kills every process in the network namespaces nss
// (SIGKILL: a stopped one too) and waits until none is left.
func killNetNSProcesses(nss []string) {
	deadline := time.Now().Add(StopDeadline)
	for time.Now().Before(deadline) {
		left := 0
		for _, ns := range nss {
			out, _ := exec.Command("ip", "netns", "pids", ns).Output()
			for _, f := range strings.Fields(string(out)) {
				if pid, err := strconv.Atoi(f); err == nil {
					syscall.Kill(pid, syscall.SIGKILL)
					left++
				}
			}
		}
		if left == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond) // a poll of the kernel's process table, not a wait for an event
	}
}

// network makes the bridge (with the address the root namespace reaches
// the hosts by).
func (b *Bed) network(t testing.TB) {
	t.Helper()
	br := b.name("br")
	mustRun(t, "ip", "link", "add", br, "type", "bridge")
	mustRun(t, "ip", "addr", "add", b.Subnet()+".1/24", "dev", br)
	mustRun(t, "ip", "link", "set", br, "up")
}

// addHost makes host name with fixed address .ip: its network namespace
// joined to the bridge, and its mount namespace with private /var/log and
// /run (/var/run), where daemons and FUSE clients write their logs, pid
// files and sockets: glusterd's CLI socket is /run/glusterd.socket, and
// two beds' glusterds would otherwise answer each other's CLI.
func (b *Bed) addHost(t testing.TB, name string, ip int) *Host {
	t.Helper()
	h := &Host{Name: name, NetNS: b.name(name), MountNS: filepath.Join(b.state, "mnt-"+name),
		Addr: b.Subnet() + "." + strconv.Itoa(ip), Iface: bedIface, tmp: b.tmp}
	mustRun(t, "ip", "netns", "add", h.NetNS)
	mustRun(t, "ip", "link", "add", h.NetNS, "type", "veth", "peer", "name", bedIface, "netns", h.NetNS)
	mustRun(t, "ip", "link", "set", h.NetNS, "master", b.name("br"), "up")
	for _, args := range [][]string{
		{"addr", "add", h.Addr + "/24", "dev", bedIface},
		{"link", "set", bedIface, "up"},
		{"link", "set", "lo", "up"},
	} {
		mustRun(t, "ip", append([]string{"-n", h.NetNS}, args...)...)
	}
	writeFile(t, h.MountNS, "")
	mustRun(t, "unshare", "--mount="+h.MountNS, "--propagation", "private", "true")
	h.Private(t, "/var/log")
	h.Private(t, "/run")
	return h
}

func mustRun(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// startEtcd starts a three-member etcd cluster, one member per etcd host,
// and waits until it answers.
func (b *Bed) startEtcd(t testing.TB) {
	t.Helper()
	var initial []string
	for _, h := range b.EtcdHosts {
		initial = append(initial, h.Name+"=http://"+net.JoinHostPort(h.Addr, strconv.Itoa(etcdPeer)))
	}
	for _, h := range b.EtcdHosts {
		client := "http://" + net.JoinHostPort(h.Addr, strconv.Itoa(etcdClient))
		peer := "http://" + net.JoinHostPort(h.Addr, strconv.Itoa(etcdPeer))
		b.EtcdMembers = append(b.EtcdMembers, h.Start(t, "etcd", EtcdBinary, "--name", h.Name,
			"--data-dir", filepath.Join(h.TempDir(t), "etcd"),
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", b.name("etcd"), "--pre-vote", "--log-level", "warn", "--logger", "zap"))
	}
	WaitFor(t, StartDeadline, "the bed's etcd answering", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		cli, err := clientv3.New(clientv3.Config{Endpoints: b.EtcdEndpoints(), DialTimeout: time.Second})
		if err != nil {
			return false
		}
		defer cli.Close()
		_, err = cli.Put(ctx, "/bed-ready", "1")
		return err == nil
	})
}

// EtcdEndpoints are the etcd members' client URLs.
func (b *Bed) EtcdEndpoints() []string {
	var eps []string
	for _, h := range b.EtcdHosts {
		eps = append(eps, "http://"+net.JoinHostPort(h.Addr, strconv.Itoa(etcdClient)))
	}
	return eps
}

// EtcdLeader returns the index in EtcdMembers of the member that leads
// now, asking every running member; -1 if none answers.
func (b *Bed) EtcdLeader(t testing.TB) int {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: b.EtcdEndpoints(), DialTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	for i, ep := range b.EtcdEndpoints() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := cli.Status(ctx, ep)
		cancel()
		if err == nil && st.Leader == st.Header.MemberId {
			return i
		}
	}
	return -1
}

// EtcdMemberHealthy reports whether member i (of EtcdMembers) answers a
// linearizable read through its own endpoint.
func (b *Bed) EtcdMemberHealthy(t testing.TB, i int) bool {
	t.Helper()
	ep := b.EtcdEndpoints()[i]
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: time.Second})
	if err != nil {
		return false
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = cli.Get(ctx, "/bed-ready")
	return err == nil
}

// mount makes the share's mount point on host h: the backend mounted at
// SharePath in h's mount namespace. A backend's servers may take a moment
// to accept clients after Start: the mount is tried until it succeeds.
func (b *Bed) mount(t testing.TB, h *Host) {
	t.Helper()
	argv := b.Backend.MountCommand(b.SharePath, b.Coherent)
	var last Result
	ctx, cancel := context.WithTimeout(context.Background(), StartDeadline)
	defer cancel()
	for {
		last = h.Exec(t, argv[0], argv[1:]...)
		// The mount must be there and answer.
		if last.ExitCode == 0 && h.Exec(t, "mountpoint", "-q", b.SharePath).ExitCode == 0 &&
			h.Exec(t, "stat", b.SharePath+"/.").ExitCode == 0 {
			return
		}
		h.Exec(t, "umount", "-l", b.SharePath)
		select {
		case <-ctx.Done():
			t.Fatalf("mounting %s on %s: not within %v:\n%s", b.Backend.Name(), h.Name, StartDeadline, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// startNode admits node i+1 with its public address and starts it in its
// host.
func (b *Bed) startNode(t testing.TB, i int) *ClusterNode {
	t.Helper()
	name, pub := "node"+strconv.Itoa(i+1), b.PublicAddr(i)
	tokenFile := b.admit(t, name, pub)
	n := b.launch(t, i, tokenFile)
	b.waitServing(t, name, pub)
	return n
}

// launch starts node i+1's process in its host with the join token in
// tokenFile.
func (b *Bed) launch(t testing.TB, i int, tokenFile string) *ClusterNode {
	t.Helper()
	h := b.Hosts[i]
	name, pub := "node"+strconv.Itoa(i+1), b.PublicAddr(i)
	extra := append([]string{"--join-token-file", tokenFile,
		"--peer-listen", net.JoinHostPort(h.Addr, strconv.Itoa(bedPeerPort)),
		"--address-hook", b.hook, "--address-interface", h.Iface}, b.nodeArgs...)
	n := b.LaunchNode(t, name, pub, extra...)
	n.TokenFile = tokenFile
	return n
}

// KillNode kills node i's (0-based) process with SIGKILL, as a crash
// would, and then does what the host's service manager does after the
// process died (ExecStopPost): removes the public addresses it left on
// the host's interface (the hook's "del"), which would otherwise answer
// beside the node that takes them over.
func (b *Bed) KillNode(t testing.TB, i int) {
	t.Helper()
	b.Nodes[i].Kill(t)
	h := b.Hosts[i]
	for _, ip := range b.HostIPs(t, h) {
		if ip != h.Addr {
			h.MustExec(t, b.hook, "del", ip, h.Iface)
		}
	}
}

// RestartNode starts node i (0-based) again after it exited, in the same
// host and mount namespace (the backend still mounted there), and waits
// until it serves its public address again. The process lives as long as
// the bed (a shared bed's outlives t).
func (b *Bed) RestartNode(t testing.TB, i int) *ClusterNode {
	t.Helper()
	old := b.Nodes[i]
	select {
	case <-old.Exited():
	default:
		t.Fatalf("%s is still running", old.Name)
	}
	b.mu.Lock()
	if b.past == nil {
		b.past = map[int][]*ClusterNode{}
	}
	b.past[i] = append(b.past[i], old)
	b.mu.Unlock()
	Within(t, b.life, func() { b.Nodes[i] = b.launch(b.life, i, old.TokenFile) })
	b.waitServing(t, old.Name, b.PublicAddr(i))
	return b.Nodes[i]
}

// NodeLog is everything node i (0-based) has logged over the bed's life:
// each process RestartNode replaced, oldest first, then the current one,
// each headed by a line naming it.
func (b *Bed) NodeLog(i int) string {
	b.mu.Lock()
	procs := append(append([]*ClusterNode(nil), b.past[i]...), b.Nodes[i])
	b.mu.Unlock()
	var sb strings.Builder
	for k, n := range procs {
		fmt.Fprintf(&sb, "=== %s, process %d of %d\n%s\n", n.Name, k+1, len(procs), n.Log())
	}
	return sb.String()
}

// HostIPs returns the IPv4 addresses on host h's interface.
func (b *Bed) HostIPs(t testing.TB, h *Host) []string {
	t.Helper()
	r := Run(t, "", "ip", "-n", h.NetNS, "-4", "-o", "addr", "show", "dev", h.Iface)
	var ips []string
	for _, l := range strings.Split(r.Stdout, "\n") {
		f := strings.Fields(l)
		for j := 0; j+1 < len(f); j++ {
			if f[j] == "inet" {
				ip, _, _ := strings.Cut(f[j+1], "/")
				ips = append(ips, ip)
			}
		}
	}
	return ips
}

// EnvTestClockFile is node/clock.EnvFile: the control file of a node's
// test-only clock offset. Every bed node is started with its own
// (ClockFile), so that StepClock can step one node's wall clock.
const EnvTestClockFile = "SMBCLUSTER_TEST_CLOCK_FILE"

// ClockFile is the control file of node name's clock offset.
func (b *Bed) ClockFile(name string) string { return filepath.Join(b.dir, name+".clock") }

// StepClock sets node i's (0-based) wall clock to the machine's plus
// offset (zero: back in step), as a step of the node's clock would: the
// node reads its control file a few times a second (node/clock), and
// keeps the offset across a restart until it is set back.
func (b *Bed) StepClock(t testing.TB, i int, offset time.Duration) {
	t.Helper()
	f := b.ClockFile(b.Nodes[i].Name)
	if err := os.WriteFile(f+".new", []byte(offset.String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(f+".new", f); err != nil {
		t.Fatal(err)
	}
}
