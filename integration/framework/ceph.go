package framework

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A CephFS is a throw-away Ceph cluster serving one CephFS filesystem: one
// monitor, one manager, one OSD (bluestore on a sparse file) and one MDS,
// each a process of the calling test started by hand (no systemd, no
// cephadm), with authentication off ("auth none") and pools of size 1.
// Everything it reads and writes — its ceph.conf, the daemons' data, admin
// sockets, logs and the clients' pid files — is under Dir; nothing under
// /etc/ceph or /var/lib/ceph is used (every command gets -c Conf). The
// daemons run in one host — the bed's storage host (Start), or the
// caller's network namespace (StartCephFS, on loopback) — and all bind
// one address, which is what a client (ceph-fuse) must reach: the monitor
// at MonAddr, the OSD and MDS at ports they pick on the same address.
// Everything, the clients mounted with MountCommand included, is killed
// when the test ends.
//
// &CephFS{} is a Backend of the multi-host test bed (NewBed starts it on
// its storage host and mounts it on every node host with MountCommand);
// StartCephFS starts one standing alone.
type CephFS struct {
	Dir     string // the cluster's state, configuration, sockets and logs
	Conf    string // its ceph.conf (pass with -c)
	Addr    string // the address every daemon binds
	MonAddr string // host:port of the monitor (msgr2)
	FSName  string // the filesystem's name ("cephfs")
	NetNS   string // the network namespace the daemons run in (Start); "" is the caller's
	// Startup is how long starting took, from the first command to the
	// MDS active (mon, mgr, OSD up, every PG active).
	Startup time.Duration

	prefix  []string // runs a program in the cluster's host (nsenter); nil: the caller's
	mu      sync.Mutex
	daemons map[string]*cephDaemon // by name ("mon.a", "osd.0")
	mounts  int                    // MountCommand calls so far (their pid files)
}

// CephOptions configures StartCephFS, which runs the cluster in the
// caller's network namespace (on a bed, Start runs it in the storage
// host's). The zero value binds 127.0.0.1, the monitor a free port.
type CephOptions struct {
	// Addr is the IP address every daemon binds; default 127.0.0.1.
	Addr string
	// MonPort is the monitor's port; default a free one.
	MonPort int
	// OSDSize is the size of the OSD's sparse block file; default 10 GiB
	// (only what is written takes disk space).
	OSDSize int64
}

// CephFuseBinary is the client a node mounts the filesystem with.
const CephFuseBinary = "/usr/bin/ceph-fuse"

// cephTools are the programs StartCephFS needs (Debian ceph-mon, ceph-mgr,
// ceph-osd, ceph-mds, ceph-fuse, ceph-common; CI installs them, see
// .ci/run).
var cephTools = []string{"ceph-mon", "ceph-mgr", "ceph-osd", "ceph-mds", "ceph-fuse",
	"ceph", "monmaptool", "ceph-authtool"}

// CephCoherentOptions are the ceph-fuse options a node's mount needs for
// the cluster. fuse_disable_pagecache opens every file direct-io, so reads
// (pread and sendfile alike) go to the Ceph client, whose capabilities
// keep it coherent with the other clients. Without it a file overwritten
// through another mount without changing its size is read stale from the
// kernel's page cache — through an open descriptor, after a reopen, and by
// sendfile — every time (FUSE drops a file's cached pages only when it
// sees the size change); TestCephFS measures it.
//
// Names, sizes, mtimes, renames and deletes are coherent with the
// defaults (capabilities and dentry leases, which ceph-fuse passes on to
// the kernel), and so are reads with the page cache off. client_oc=false
// (the Ceph client's object cache off) is for liveness, not coherence:
// with the object cache on, a read's readahead holds the file's Fc
// capability while the MDS revokes it, and Ceph 16.2's client can then
// leave a later read waiting for that revocation for ever (fixed upstream
// in Ceph 19, tracker 65971) — TestBedChannels saw two of its node's
// preads on ceph-fuse blocked for minutes, 2 runs in 9 on a busy
// machine, the client's cap dump showing Fr issued and the read waiting
// on Fc. With the object cache off, reads are synchronous to the OSDs and
// never take Fc refs. It costs: every write is synchronous to the OSD (with
// the page cache off, a 1 MiB writer and fsync 19-32 MiB/s against 142-262
// with it on, and 1 MiB reads through another mount 101 MiB/s against
// 261-317; two runs on a busy 2-core machine). docs/STORAGE.md requires
// both options.
var CephCoherentOptions = []string{"--fuse_disable_pagecache=true", "--client_oc=false"}

// RequireCephFS skips the test unless a CephFS cluster and ceph-fuse
// mounts can be made here: root, /dev/fuse, and the Ceph packages.
func RequireCephFS(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("CephFS needs root (ceph-fuse mounts, namespaces)")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("CephFS needs /dev/fuse: %v", err)
	}
	for _, tool := range cephTools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("Ceph not installed (apt-get install ceph-mon ceph-mgr ceph-osd ceph-mds ceph-fuse ceph-common): no %s", tool)
		}
	}
}

// StartCephFS creates a Ceph cluster with one CephFS filesystem, standing
// alone (not on a bed: in the caller's network namespace), and waits until
// it can be mounted. The test is skipped when RequireCephFS would skip it.
func StartCephFS(t testing.TB, opts CephOptions) *CephFS {
	t.Helper()
	RequireCephFS(t)
	c := &CephFS{Addr: opts.Addr}
	if c.Addr == "" {
		c.Addr = "127.0.0.1"
	}
	port := opts.MonPort
	if port == 0 {
		_, p, _ := net.SplitHostPort(FreeAddr(t, c.Addr))
		port, _ = strconv.Atoi(p)
	}
	c.start(t, t.TempDir(), port, opts.OSDSize)
	return c
}

// Start implements Backend: the cluster's daemons run in host (its network
// and mount namespaces) and bind host.Addr, the monitor on port 3300.
// Ceph has no server-side setting coherence needs (its clients' capabilities
// are the protocol), so coherent changes nothing here; it picks the
// client's options in MountCommand.
func (c *CephFS) Start(t testing.TB, host *Host, coherent bool) {
	t.Helper()
	RequireCephFS(t)
	c.Addr, c.NetNS = host.Addr, host.NetNS
	c.prefix = []string{"nsenter", "--net=" + filepath.Join("/run/netns", host.NetNS), "--mount=" + host.MountNS, "--"}
	c.start(t, host.TempDir(t), 0, 0) // removed after the bed's teardown killed every process
}

// start makes the cluster and waits until the MDS is active, the OSD up,
// every PG active and the manager available: 14-25 s on a busy 2-core
// machine.
func (c *CephFS) start(t testing.TB, dir string, port int, osdSize int64) {
	t.Helper()
	start := time.Now()
	c.Dir, c.FSName, c.daemons = dir, "cephfs", map[string]*cephDaemon{}
	if port == 0 {
		port = 3300
	}
	c.MonAddr = net.JoinHostPort(c.Addr, strconv.Itoa(port))
	if osdSize == 0 {
		osdSize = 10 << 30
	}
	c.Conf = filepath.Join(c.Dir, "ceph.conf")
	for _, d := range []string{"run", "log", "mon", "mgr", "osd", "mds", "crash"} {
		if err := os.MkdirAll(filepath.Join(c.Dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fsid := newUUID(t)
	writeFile(t, c.Conf, c.config(fsid, osdSize))
	t.Cleanup(func() { c.stop(t) })

	// The OSD's store is made (a few seconds) while the monitor starts and
	// the pools and the filesystem are created; it needs no monitor. The
	// OSD is registered with its id and uuid once the monitor answers.
	osdUUID, osdID := newUUID(t), "0"
	if err := os.MkdirAll(filepath.Join(c.Dir, "osd", "ceph-"+osdID), 0o755); err != nil {
		t.Fatal(err)
	}
	mkfs := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), StartDeadline)
	t.Cleanup(cancel) // before stop: a failed start leaves no mkfs behind
	go func() {
		_, err := c.command(ctx, false, "ceph-osd", "-c", c.Conf, "-i", osdID, "--mkfs", "--osd-uuid", osdUUID)
		mkfs <- err
	}()

	// The monitor: a monmap of one, its store, and the daemon.
	keyring := filepath.Join(c.Dir, "keyring")
	c.run(t, false, "ceph-authtool", "--create-keyring", keyring, "--gen-key", "-n", "mon.", "--cap", "mon", "allow *")
	monmap := filepath.Join(c.Dir, "monmap")
	c.run(t, false, "monmaptool", "--create", "--addv", "a", "[v2:"+c.MonAddr+"]", "--fsid", fsid, monmap)
	c.run(t, false, "ceph-mon", "-c", c.Conf, "--mkfs", "-i", "a", "--monmap", monmap, "--keyring", keyring)
	c.startDaemon(t, "mon.a", "ceph-mon", "-i", "a")
	c.waitFor(t, "the monitor answering", func(st *cephStatus) bool { return len(st.QuorumNames) > 0 })
	monUp := time.Since(start)

	c.startDaemon(t, "mgr.x", "ceph-mgr", "-i", "x")
	c.Ceph(t, "osd", "new", osdUUID, osdID)
	c.Ceph(t, "osd", "pool", "create", "cephfs_metadata", "8")
	c.Ceph(t, "osd", "pool", "create", "cephfs_data", "8")
	c.Ceph(t, "fs", "new", c.FSName, "cephfs_metadata", "cephfs_data")
	if err := os.MkdirAll(filepath.Join(c.Dir, "mds", "ceph-a"), 0o755); err != nil {
		t.Fatal(err)
	}
	c.startDaemon(t, "mds.a", "ceph-mds", "-i", "a")
	if err := <-mkfs; err != nil {
		t.Fatalf("ceph-osd --mkfs: %v\n%s", err, c.logTail("osd."+osdID))
	}
	osdMade := time.Since(start)
	c.startDaemon(t, "osd."+osdID, "ceph-osd", "-i", osdID)
	var osdUp, mdsActive, mgrUp time.Duration
	c.waitFor(t, "the MDS active, the OSD up, every PG active and the manager available", func(st *cephStatus) bool {
		for _, m := range []struct {
			at *time.Duration
			ok bool
		}{{&osdUp, st.OSDMap.NumUpOSDs > 0}, {&mdsActive, st.mdsActive()}, {&mgrUp, st.MgrMap.Available}} {
			if m.ok && *m.at == 0 {
				*m.at = time.Since(start)
			}
		}
		return st.ready()
	})
	c.Startup = time.Since(start)
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	t.Logf("ceph: %s up in %v: monitor answering after %v, OSD store made %v, manager available %v, OSD up %v, MDS active %v, every PG active %v",
		c.FSName, ms(c.Startup), ms(monUp), ms(osdMade), ms(mgrUp), ms(osdUp), ms(mdsActive), ms(c.Startup))
}

// config is the cluster's ceph.conf. The [client] section gives every
// client its own admin socket and log (several ceph-fuse run at once).
func (c *CephFS) config(fsid string, osdSize int64) string {
	d := c.Dir
	return fmt.Sprintf(`[global]
fsid = %[1]s
# One monitor, msgr2 only: every daemon binds the host's address, which
# is what a client on another host must reach (mon, OSD, MDS).
mon_host = v2:%[2]s
public_addr = %[3]s
ms_bind_msgr1 = false
auth_cluster_required = none
auth_service_required = none
auth_client_required = none
# One OSD: pools of one copy.
osd_pool_default_size = 1
osd_pool_default_min_size = 1
mon_allow_pool_size_one = true
mon_warn_on_pool_no_redundancy = false
osd_pool_default_pg_autoscale_mode = off
osd_crush_chooseleaf_type = 0
# Everything under the cluster's directory, nothing under /etc/ceph,
# /var/lib/ceph, /var/log/ceph or /var/run/ceph.
run_dir = %[4]s/run
admin_socket = %[4]s/run/$cluster-$name.asok
pid_file =
log_file = %[4]s/log/$cluster-$name.log
log_to_stderr = false
err_to_stderr = true
keyring = %[4]s/keyring
crash_dir = %[4]s/crash
mon_data = %[4]s/mon/$cluster-$id
mgr_data = %[4]s/mgr/$cluster-$id
osd_data = %[4]s/osd/$cluster-$id
mds_data = %[4]s/mds/$cluster-$id
# Bluestore on a sparse file beside the OSD's directory.
osd_objectstore = bluestore
bluestore_block_path = %[4]s/osd/$cluster-$id.block
bluestore_block_create = true
bluestore_block_size = %[5]d
bluestore_fsck_on_mkfs = false
bluestore_fsck_on_mount = false
# Small: a test machine, not a storage server (defaults 4 GiB each).
osd_memory_target = 1073741824
mds_cache_memory_limit = 268435456
# The manager loads only its always-on modules (status answers
# "ceph fs status"): half the memory and a faster start. PG states reach
# it every second, not every five (StartCephFS waits on them).
mgr_initial_modules =
mgr_disabled_modules = alerts diskprediction_local influx insights iostat localpool mirroring nfs osd_perf_query osd_support prometheus restful selftest snap_schedule stats telegraf test_orchestrator zabbix
mgr_stats_period = 1
# Health stays HEALTH_OK on a test machine.
mon_data_avail_warn = 1
mon_warn_on_insecure_global_id_reclaim_allowed = false

# Every client its own admin socket and log: several ceph-fuse at once.
[client]
admin_socket = %[4]s/run/$cluster-$name.$pid.asok
log_file = %[4]s/log/$cluster-$name.$pid.log
`, fsid, c.MonAddr, c.Addr, d, osdSize)
}

// Name implements Backend.
func (c *CephFS) Name() string { return "cephfs" }

// MountCommand is the argv that mounts the filesystem at dir, run in the
// network namespace and mount namespace the mount is for (the node host's:
// its network namespace must reach Addr). coherent adds
// CephCoherentOptions, what the cluster requires; false leaves the client's
// defaults.
//
// ceph-fuse daemonizes (no -f): the command exits 0 once the mount is in
// place (its parent waits for the child's mount) and the daemon, holding
// no descriptor of the caller's (Go's Output/CombinedOutput return), stays
// in the mount namespace it was started in and keeps the mount there. So
// run it with nsenter --net=/run/netns/NODE --mount=NODE's-mount-ns-file
// (Host.Exec), not with `ip netns exec` alone: that gives its command a
// mount namespace of its own, which nothing else shares, and the mount
// would be visible to no node. In the foreground (-f) the caller would
// have to keep the process and poll for the mount instead. The daemon
// writes its pid to a file under Dir; every client mounted this way is
// killed when the cluster is stopped at the end of the test (before the
// bed tears its namespaces down).
func (c *CephFS) MountCommand(dir string, coherent bool) []string {
	c.mu.Lock()
	c.mounts++
	n := c.mounts
	c.mu.Unlock()
	argv := []string{CephFuseBinary, "-c", c.Conf, "--client_fs=" + c.FSName,
		"--pid_file=" + c.fusePidFile(n)}
	if coherent {
		argv = append(argv, CephCoherentOptions...)
	}
	return append(argv, dir)
}

func (c *CephFS) fusePidFile(n int) string {
	return filepath.Join(c.Dir, "run", fmt.Sprintf("ceph-fuse.%d.pid", n))
}

// Ceph runs the ceph CLI against the cluster (in its network namespace)
// and returns its standard output; the test fails if it fails.
func (c *CephFS) Ceph(t testing.TB, args ...string) string {
	t.Helper()
	out, err := c.ceph(args...)
	if err != nil {
		t.Fatalf("ceph %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func (c *CephFS) ceph(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.command(ctx, true, "ceph", append([]string{"-c", c.Conf, "--connect-timeout", "10"}, args...)...)
}

// command runs one program to its end (in the cluster's network namespace
// when inNS) and returns its standard output; the error carries its
// standard error.
func (c *CephFS) command(ctx context.Context, inNS bool, name string, args ...string) (string, error) {
	cmd := c.cmd(ctx, inNS, name, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// run is command that fails the test.
func (c *CephFS) run(t testing.TB, inNS bool, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), StartDeadline)
	defer cancel()
	out, err := c.command(ctx, inNS, name, args...)
	if err != nil {
		t.Fatalf("%s: %v\n%s", shellQuote(name, args), err, out)
	}
	return out
}

// cmd is name with args, run in the cluster's host when inNS (through
// nsenter on a bed host, which executes the program in place: the process
// is the program).
func (c *CephFS) cmd(ctx context.Context, inNS bool, name string, args ...string) *exec.Cmd {
	if inNS && len(c.prefix) > 0 {
		return exec.CommandContext(ctx, c.prefix[0], append(append(c.prefix[1:len(c.prefix):len(c.prefix)], name), args...)...)
	}
	return exec.CommandContext(ctx, name, args...)
}

// cephDaemon is one daemon process, run in the foreground (-f).
type cephDaemon struct {
	name   string
	cmd    *exec.Cmd
	out    *logBuffer
	exited chan struct{}
}

func (c *CephFS) startDaemon(t testing.TB, name, bin string, args ...string) {
	t.Helper()
	d := &cephDaemon{name: name, out: &logBuffer{}, exited: make(chan struct{})}
	d.cmd = c.cmd(context.Background(), true, bin, append([]string{"-c", c.Conf, "-f"}, args...)...)
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.out
	d.cmd.SysProcAttr = OwnGroup()
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	go func() {
		d.cmd.Wait()
		close(d.exited)
	}()
	c.mu.Lock()
	c.daemons[name] = d
	c.mu.Unlock()
}

// stop kills the clients MountCommand mounted, then the daemons; on a
// failed test it logs the end of each daemon's log.
func (c *CephFS) stop(t testing.TB) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for n := 1; n <= c.mounts; n++ {
		b, err := os.ReadFile(c.fusePidFile(n))
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 && isCephFuse(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	for _, name := range sortedDaemons(c.daemons) {
		d := c.daemons[name]
		syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-d.exited:
		case <-time.After(StopDeadline):
			t.Errorf("%s did not exit on SIGKILL within %v", name, StopDeadline)
		}
		if t.Failed() {
			t.Logf("%s output:\n%s\n%s log (end):\n%s", name, d.out.String(), name, c.logTail(name))
		}
	}
}

// isCephFuse says whether pid is (still) a ceph-fuse process, so that a
// stale pid file kills nothing else.
func isCephFuse(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return err == nil && strings.TrimSpace(string(b)) == "ceph-fuse"
}

func sortedDaemons(m map[string]*cephDaemon) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// logTail is the last 8 KiB of daemon name's log file.
func (c *CephFS) logTail(name string) string {
	b, err := os.ReadFile(filepath.Join(c.Dir, "log", "ceph-"+name+".log"))
	if err != nil {
		return err.Error()
	}
	if len(b) > 8<<10 {
		b = b[len(b)-8<<10:]
	}
	return string(b)
}

// RSS is the resident memory of each daemon (by name) and their sum, in
// bytes.
func (c *CephFS) RSS() (map[string]int64, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	per := map[string]int64{}
	var sum int64
	for name, d := range c.daemons {
		rss := processRSS(d.cmd.Process.Pid)
		per[name] = rss
		sum += rss
	}
	return per, sum
}

// processRSS is pid's VmRSS in bytes (0 if it is gone).
func processRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// cephStatus is the part of `ceph status -f json` StartCephFS waits on.
type cephStatus struct {
	QuorumNames []string `json:"quorum_names"`
	OSDMap      struct {
		NumOSDs   int `json:"num_osds"`
		NumUpOSDs int `json:"num_up_osds"`
	} `json:"osdmap"`
	PGMap struct {
		NumPGs  int `json:"num_pgs"`
		ByState []struct {
			Name  string `json:"state_name"`
			Count int    `json:"count"`
		} `json:"pgs_by_state"`
	} `json:"pgmap"`
	FSMap struct {
		ByRank []struct {
			Status string `json:"status"`
		} `json:"by_rank"`
	} `json:"fsmap"`
	MgrMap struct {
		Available bool `json:"available"`
	} `json:"mgrmap"`
}

// mdsActive: every rank of the filesystem has an active MDS.
func (st *cephStatus) mdsActive() bool {
	for _, r := range st.FSMap.ByRank {
		if r.Status != "up:active" {
			return false
		}
	}
	return len(st.FSMap.ByRank) > 0
}

// ready: the MDS active, every OSD up, every PG active (as the manager
// reports them), the manager available.
func (st *cephStatus) ready() bool {
	if !st.mdsActive() || st.OSDMap.NumOSDs == 0 || st.OSDMap.NumUpOSDs != st.OSDMap.NumOSDs || !st.MgrMap.Available {
		return false
	}
	active := 0
	for _, s := range st.PGMap.ByState {
		if strings.Contains(s.Name, "active") {
			active += s.Count
		}
	}
	return st.PGMap.NumPGs > 0 && active == st.PGMap.NumPGs
}

// Status is `ceph status -f json`, decoded.
func (c *CephFS) status() (*cephStatus, error) {
	out, err := c.ceph("status", "-f", "json")
	if err != nil {
		return nil, err
	}
	var st cephStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		return nil, fmt.Errorf("ceph status: %w: %s", err, out)
	}
	return &st, nil
}

// waitFor polls `ceph status` until cond holds, a daemon exits, or
// StartDeadline passes.
func (c *CephFS) waitFor(t testing.TB, what string, cond func(*cephStatus) bool) {
	t.Helper()
	deadline := time.Now().Add(StartDeadline)
	var last error
	for {
		c.mu.Lock()
		for name, d := range c.daemons {
			select {
			case <-d.exited:
				c.mu.Unlock()
				t.Fatalf("ceph: %s exited while waiting for %s: %v\n%s\n%s", name, what, d.cmd.ProcessState, d.out.String(), c.logTail(name))
			default:
			}
		}
		c.mu.Unlock()
		st, err := c.status()
		if err == nil && cond(st) {
			return
		}
		if err == nil {
			b, _ := json.Marshal(st)
			err = errors.New(string(b))
		}
		last = err
		if time.Now().After(deadline) {
			t.Fatalf("ceph: %s: not within %v; last status: %v", what, StartDeadline, last)
		}
		<-time.After(100 * time.Millisecond) // between polls: each ceph CLI run costs ~0.3 s of CPU
	}
}

// newUUID is a random (version 4) UUID.
func newUUID(t testing.TB) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
