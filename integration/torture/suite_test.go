package torture

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/integration/framework"
)

// TestTortureSuiteCluster runs smbtorture as run-suites.sh does: one
// process per suite, on a share that is not emptied between runs, with
// connections placed round-robin over three nodes, the first connection
// on each node in turn, each suite twice. Only the tests of allowlist.txt
// in the suite must pass. The default suite, smb2.lease.request, lost its
// second run: its CREATE of a directory with a lease key in use on another
// file was refused (STATUS_INVALID_PARAMETER) but left the directory
// behind, and the next run's CREATE of it found it
// (STATUS_OBJECT_NAME_COLLISION, lease.c:165). SMBCLUSTER_TORTURE_SUITES
// names other suites (space-separated), e.g. smb2.lease (minutes).
func TestTortureSuiteCluster(t *testing.T) {
	bin, allow := torturePrelude(t)
	if target := os.Getenv(framework.EnvTarget); target != "" && target != "node" {
		t.Skipf("%s=%s: the cluster run is smbnode's", framework.EnvTarget, target)
	}
	suites := []string{"smb2.lease.request"}
	if s := os.Getenv("SMBCLUSTER_TORTURE_SUITES"); s != "" {
		suites = strings.Fields(s)
	}
	c := framework.NewCluster(t, framework.ClusterOptions{Nodes: clusterNodes})
	tg := target{
		users: map[string]string{"alice": framework.DefaultUsers["alice"], "bob": framework.DefaultUsers["bob"]},
		known: readKnown(t, "knownfail.txt", "cluster-knownfail.txt"),
	}
	for _, u := range sortedKeys(tg.users) {
		c.MustSMBCtl(t, "user", "add", u, "--password", tg.users[u])
	}
	var backends []string
	for _, n := range c.Nodes {
		backends = append(backends, n.Addr)
	}
	dir := t.TempDir()
	c.MustSMBCtl(t, "share", "add", "suite", dir)
	f := framework.StartRoundRobin(t, backends...)
	s := slot{host: f.Addr().IP.String(), port: f.Addr().Port, share: "suite", dir: dir}
	tg.slots = []slot{s}
	for _, n := range c.Nodes {
		waitServes(t, n, tg)
	}
	for _, suite := range suites {
		for first := range clusterNodes {
			t.Run(fmt.Sprintf("%s/first=%d", suite, first), func(t *testing.T) {
				if err := emptyDir(dir); err != nil {
					t.Fatal(err)
				}
				for run := range 2 {
					t.Logf("run %d", run+1)
					runSuite(t, bin, tg, s, f, first, suite, allow)
				}
			})
		}
	}
}

// runSuite runs suite in one smbtorture process, its first connection
// placed on node first, and fails t for each test of allow in it that
// did not pass.
func runSuite(t *testing.T, bin string, tg target, s slot, f *framework.RoundRobin, first int, suite string, allow map[string]string) {
	f.Rewind()
	for range first { // move the round-robin on
		cn, err := net.Dial("tcp", f.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		cn.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*testTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "//"+s.host+"/"+s.share,
		"--configfile="+os.DevNull,
		"-p", strconv.Itoa(s.port),
		"-U", "alice%"+tg.users["alice"],
		"--option=torture:user2name=bob",
		"--option=torture:user2password="+tg.users["bob"],
		"--fullname", "--format=subunit",
		suite)
	cmd.Dir = t.TempDir()
	cmd.SysProcAttr = framework.OwnGroup()
	cmd.WaitDelay = 10 * time.Second
	out, _ := cmd.CombinedOutput()
	res := parseSubunit(string(out), suite)
	if len(res) == 0 {
		t.Fatalf("no results\n%s", tail(string(out), 60))
	}
	for name, r := range res {
		if _, ok := allow[name]; !ok {
			continue
		}
		if _, known := tg.known[name]; known {
			continue
		}
		if r != "success" && r != "successful" {
			t.Errorf("%s: %s\n%s", name, r, tail(string(out), 60))
		}
	}
}
