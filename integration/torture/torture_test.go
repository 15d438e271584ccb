package torture

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/integration/framework"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
)

func TestMain(m *testing.M) { framework.Main(m) }

const (
	parallel    = 2                 // smbtorture processes at a time, per run
	testTimeout = 120 * time.Second // per smbtorture process
	// clusterNodes is the size of TestTortureCluster's cluster.
	clusterNodes = 3
	// clusterDeadline bounds the wait for shares and users to reach
	// every node.
	clusterDeadline = 60 * time.Second
)

// target is a server smbtorture runs against: per slot where it connects,
// a share and the directory behind it; and the tests expected to fail.
type target struct {
	slots []slot
	users map[string]string // alice and bob
	known map[string]knownFail
}

// slot is where one worker's tests run, one at a time.
type slot struct {
	host   string
	port   int
	share  string
	dir    string // the directory behind share
	before func() // if set, called before each test
	// empty empties the share before each test (default: emptyDir(dir)).
	empty func() error
}

// knownFail is an expected failure: its reason and the list it is in.
type knownFail struct{ reason, file string }

// torturePrelude skips the test under -short and returns the smbtorture
// binary and the allowlist.
func torturePrelude(t *testing.T) (string, map[string]string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping smbtorture")
	}
	allowPath := "allowlist.txt"
	if p := os.Getenv("SMBTORTURE_ALLOWLIST"); p != "" {
		allowPath = p // e.g. to try candidates, or to run a subset
	}
	allow := readList(t, allowPath)
	if len(allow) == 0 {
		t.Skip("allowlist.txt is empty")
	}
	return framework.RequireTool(t, "smbtorture"), allow
}

// TestTorture runs every allowlisted smbtorture test in its own process
// against one server.
func TestTorture(t *testing.T) {
	bin, allow := torturePrelude(t)
	t.Parallel() // beside TestTortureCluster
	opts := framework.Options{Users: map[string]string{
		"alice": framework.DefaultUsers["alice"],
		"bob":   framework.DefaultUsers["bob"],
	}}
	for i := range parallel {
		opts.Shares = append(opts.Shares, framework.Share{Name: fmt.Sprintf("torture%d", i)})
	}
	n := framework.Start(t, opts)
	tg := target{users: n.Users, known: readKnown(t, "knownfail.txt")}
	for _, s := range opts.Shares {
		tg.slots = append(tg.slots, slot{host: n.Host, port: n.Port, share: s.Name, dir: n.SharePath(s.Name)})
	}
	runAll(t, bin, tg, allow)
}

// TestTortureCluster runs the same allowlist against a cluster of three
// nodes serving the same directories, through round-robin forwarders:
// each new TCP connection of a test lands on the next node, so a test that
// opens a second connection meets the first one's opens, locks, oplocks
// and notifies from another node. Each slot has its own forwarder,
// rewound before each test: a test's k-th connection always goes to node
// k mod 3, whatever runs beside it. Tests expected to fail only across
// nodes are in cluster-knownfail.txt.
func TestTortureCluster(t *testing.T) {
	bin, allow := torturePrelude(t)
	if target := os.Getenv(framework.EnvTarget); target != "" && target != "node" {
		t.Skipf("%s=%s: the cluster run is smbnode's", framework.EnvTarget, target)
	}
	t.Parallel() // beside TestTorture
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
	var forwarders []*framework.RoundRobin
	for i := range parallel {
		name, dir := fmt.Sprintf("torture%d", i), t.TempDir()
		c.MustSMBCtl(t, "share", "add", name, dir)
		f := framework.StartRoundRobin(t, backends...)
		forwarders = append(forwarders, f)
		tg.slots = append(tg.slots, slot{host: f.Addr().IP.String(), port: f.Addr().Port,
			share: name, dir: dir, before: f.Rewind})
	}
	for _, n := range c.Nodes {
		waitServes(t, n, tg)
	}
	runAll(t, bin, tg, allow)
	for i, f := range forwarders {
		t.Logf("slot %d: connections placed per node: %v", i, f.Placed())
	}
}

// TestTortureBed runs the allowlist against three nodes deployed as on
// separate hosts (framework.NewBed): each node its own host (network and
// mount namespaces) with its own GlusterFS FUSE mount of one replica-3
// volume, etcd three members, clients through round-robin forwarders as
// in TestTortureCluster. Every share's storage is checked by the nodes
// (node/storecheck) before they serve it. SMBCLUSTER_TORTURE_BED=off
// skips it.
func TestTortureBed(t *testing.T) {
	bin, allow := torturePrelude(t)
	if target := os.Getenv(framework.EnvTarget); target != "" && target != "node" {
		t.Skipf("%s=%s: the bed run is smbnode's", framework.EnvTarget, target)
	}
	if os.Getenv("SMBCLUSTER_TORTURE_BED") == "off" {
		t.Skip("SMBCLUSTER_TORTURE_BED=off")
	}
	framework.RequireBed(t)
	framework.RequireGlusterFS(t)
	// Not beside TestTorture and TestTortureCluster: the three at once on
	// two cores made TestTortureCluster's timing-bound tests fail
	// (smb2.durable-open.oplock's second CREATE came before the node had
	// seen the first connection's end).
	b := framework.NewBed(t, framework.BedOptions{Backend: &framework.GlusterFS{}})
	tg := target{
		users: map[string]string{"alice": framework.DefaultUsers["alice"], "bob": framework.DefaultUsers["bob"]},
		known: readKnown(t, "knownfail.txt", "cluster-knownfail.txt", "bed-knownfail.txt"),
	}
	for name := range readList(t, "bed-skip.txt") {
		delete(allow, name)
	}
	for _, u := range sortedKeys(tg.users) {
		b.MustSMBCtl(t, "user", "add", u, "--password", tg.users[u])
	}
	var backends []string
	for _, n := range b.Nodes {
		backends = append(backends, n.Addr)
	}
	// The shares' directories are on the volume: made, and emptied before
	// each test, through node 1's mount.
	h := b.Hosts[0]
	for i := range parallel {
		name := fmt.Sprintf("torture%d", i)
		dir := filepath.Join(b.SharePath, name)
		h.MustExec(t, "mkdir", "-p", dir)
		b.MustSMBCtl(t, "share", "add", name, dir)
		f := framework.StartRoundRobin(t, backends...)
		tg.slots = append(tg.slots, slot{host: f.Addr().IP.String(), port: f.Addr().Port, share: name, dir: dir, before: f.Rewind,
			empty: func() error {
				r := h.Exec(t, "find", dir, "-mindepth", "1", "-maxdepth", "1", "!", "-name", statev1.StorageProbePrefix+"*",
					"-exec", "rm", "-rf", "{}", "+")
				if r.ExitCode != 0 {
					return fmt.Errorf("%s", r.Output())
				}
				return nil
			}})
	}
	for _, n := range b.Nodes {
		waitServes(t, n, tg)
	}
	runAll(t, bin, tg, allow)
}

// waitServes waits until node n serves every share of tg to every user.
func waitServes(t *testing.T, n *framework.ClusterNode, tg target) {
	t.Helper()
	for _, s := range tg.slots {
		for _, u := range sortedKeys(tg.users) {
			cl := framework.SMBClient{Node: n.Node, User: u, Password: tg.users[u]}
			framework.WaitFor(t, clusterDeadline, u+" on "+n.Name+"/"+s.share, func() bool {
				return cl.Script(t, "", s.share, "ls").ExitCode == 0
			})
		}
	}
}

// runAll runs every test of allow against tg, each in its own process,
// one worker per slot, and fails t naming every test
// that did not have its expected outcome. A test that failed unexpectedly
// runs once more, and only a second failure counts; what passed the
// second time is logged, named. The workers call t.Run without
// t.Parallel, so that go test's -parallel limit (GOMAXPROCS) does not
// serialize TestTorture's and TestTortureCluster's tests with each other.
func runAll(t *testing.T, bin string, tg target, allow map[string]string) {
	names := make(chan string, len(allow))
	for _, name := range sortedKeys(allow) {
		names <- name
	}
	close(names)
	start := time.Now()
	var mu sync.Mutex
	var bad, flaky []string
	ran := 0
	outcomes := map[string]int{} // "SUITE pass", "SUITE fail": how many
	t.Run("smbtorture", func(t *testing.T) {
		var wg sync.WaitGroup
		for _, s := range tg.slots {
			wg.Go(func() {
				for name := range names {
					t.Run(name, func(t *testing.T) {
						passed, msg, detail := runOne(t, bin, tg, s, name)
						again := false
						if msg != "" && !passed {
							// smbtorture's tests wait fixed times for
							// breaks and replies; on two cores shared
							// with the other test packages one may miss
							// its time. Once more, alone in its slot: a
							// fault of ours fails both runs.
							t.Logf("did not pass, run again: %s\n%s", msg, detail)
							passed, msg, detail = runOne(t, bin, tg, s, name)
							again = msg == ""
						}
						if msg != "" {
							t.Errorf("%s\n%s", msg, detail)
						}
						mu.Lock()
						defer mu.Unlock()
						if again {
							flaky = append(flaky, name)
						}
						ran++
						outcome := " fail"
						if passed {
							outcome = " pass"
						}
						outcomes[suiteOf(name)+outcome]++
						if msg != "" {
							bad = append(bad, name+": "+msg)
						}
					})
				}
			})
		}
		wg.Wait()
	})
	t.Logf("%v for %d tests; pass/fail per suite: %s", time.Since(start).Round(time.Second), ran, perSuite(outcomes))
	if len(flaky) > 0 {
		sort.Strings(flaky)
		t.Logf("%d passed only when run again: %s", len(flaky), strings.Join(flaky, ", "))
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		for _, b := range bad {
			framework.NoteFailure(t.Name() + ": " + b)
		}
		t.Errorf("%d of %d smbtorture tests did not have the expected outcome:\n\t%s",
			len(bad), ran, strings.Join(bad, "\n\t"))
	}
}

// suiteOf returns smb2.SUITE of smb2.SUITE.TEST.
func suiteOf(name string) string {
	if i := strings.Index(name, "."); i >= 0 {
		if j := strings.Index(name[i+1:], "."); j >= 0 {
			return name[:i+1+j]
		}
	}
	return name
}

// perSuite formats "SUITE pass" and "SUITE fail" counts as SUITE P/N.
func perSuite(outcomes map[string]int) string {
	suites := map[string]bool{}
	for k := range outcomes {
		suites[strings.Fields(k)[0]] = true
	}
	var parts []string
	for _, s := range sortedKeys(suites) {
		p, f := outcomes[s+" pass"], outcomes[s+" fail"]
		parts = append(parts, fmt.Sprintf("%s %d/%d", s, p, p+f))
	}
	return strings.Join(parts, ", ")
}

// runOne runs one smbtorture test in slot s and reports whether it passed,
// and "" when that was the expected outcome, or why not with the end of
// smbtorture's output.
func runOne(t *testing.T, bin string, tg target, s slot, name string) (passed bool, why, detail string) {
	// Each test starts from an empty share, as it would alone: what an
	// earlier test in this slot left behind (smb2.delete-on-close-perms'
	// "Existing" tests leave a file whose inherited DACL grants no DELETE
	// in a directory that grants no FILE_DELETE_CHILD, which READONLY's
	// deltree then rightly cannot remove) is not this test's business.
	empty := s.empty
	if empty == nil {
		empty = func() error { return emptyDir(s.dir) }
	}
	if err := empty(); err != nil {
		t.Fatalf("emptying share %s: %v", s.share, err)
	}
	if s.before != nil {
		s.before()
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "//"+s.host+"/"+s.share,
		"--configfile="+os.DevNull,
		"-p", strconv.Itoa(s.port),
		"-U", "alice%"+tg.users["alice"],
		"--option=torture:user2name=bob",
		"--option=torture:user2password="+tg.users["bob"],
		"--fullname", "--format=subunit",
		name)
	cmd.Dir = t.TempDir()
	cmd.SysProcAttr = framework.OwnGroup()
	cmd.WaitDelay = 10 * time.Second // after the kill, for the output pipe
	out, err := cmd.CombinedOutput()
	res := parseSubunit(string(out), name)
	passed = err == nil && len(res) > 0 && allSuccess(res)
	why = summarize(res, err, ctx.Err())
	known, isKnown := tg.known[name]
	switch {
	case passed && isKnown:
		return true, "unexpected success: remove from " + known.file,
			fmt.Sprintf("a known failure (%s) passed", known.reason)
	case passed:
		return true, "", ""
	case isKnown:
		t.Logf("known failure (%s): %s", known.reason, why)
		return false, "", ""
	}
	return false, why, tail(string(out), 60)
}

// emptyDir removes everything inside dir, leaving dir itself (the server
// serves it).
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), statev1.StorageProbePrefix) {
			continue // the cluster's storage check's, not the test's
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// resultRE matches a subunit result line: "success: NAME", "failure: NAME [",
// "error: NAME [ multipart"; NAME may hold spaces ("smb2.ioctl.copy-chunk
// streams").
var resultRE = regexp.MustCompile(`(?m)^(success|successful|failure|fail|error|skip|xfail|uxsuccess): (.*?)(?: \[(?: multipart)?)?\r?$`)

// parseSubunit returns the result of every test at or below name.
func parseSubunit(out, name string) map[string]string {
	res := map[string]string{}
	for _, m := range resultRE.FindAllStringSubmatch(out, -1) {
		if m[2] == name || strings.HasPrefix(m[2], name+".") {
			res[m[2]] = m[1]
		}
	}
	return res
}

func allSuccess(res map[string]string) bool {
	for _, r := range res {
		if r != "success" && r != "successful" {
			return false
		}
	}
	return true
}

// summarize says in one line why a run did not pass.
func summarize(res map[string]string, err, ctxErr error) string {
	var parts []string
	for _, name := range sortedKeys(res) {
		if r := res[name]; r != "success" && r != "successful" {
			parts = append(parts, r+" "+name)
		}
	}
	if len(res) == 0 {
		parts = append(parts, "no test result reported")
	}
	if ctxErr != nil {
		parts = append(parts, fmt.Sprintf("killed after %v", testTimeout))
	} else if err != nil {
		parts = append(parts, "smbtorture: "+err.Error())
	}
	return strings.Join(parts, "; ")
}

// readList reads allowlist.txt or knownfail.txt: one test name per line,
// optionally followed by "# reason"; blank lines and comment lines ignored.
func readList(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	list := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, reason, _ := strings.Cut(sc.Text(), "#")
		if name := strings.TrimSpace(line); name != "" {
			list[name] = strings.TrimSpace(reason)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return list
}

// readKnown reads expected-failure lists (knownfail.txt format); a name
// in several keeps the first list's entry.
func readKnown(t *testing.T, paths ...string) map[string]knownFail {
	t.Helper()
	known := map[string]knownFail{}
	for _, p := range paths {
		for name, reason := range readList(t, p) {
			if _, dup := known[name]; !dup {
				known[name] = knownFail{reason, p}
			}
		}
	}
	return known
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("[... %d lines ...]", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
