package robustness

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/integration/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

const (
	user     = "rob"
	password = "Rob-Pass-1"
	share    = "data"
	// caShare is a share with continuous availability, where the durable
	// operations open persistent handles: directory ca of share's.
	caShare = "ca"
)

// Parameters of make robustness: a run's duration and seed.
const (
	envDuration = "SMBCLUSTER_ROBUST_DURATION"
	envSeed     = "SMBCLUSTER_ROBUST_SEED"
	envOut      = "SMBCLUSTER_ROBUST_OUT"
	envKinds    = "SMBCLUSTER_ROBUST_KINDS"   // comma-separated: only these faults (Nemesis.Only)
	envBackend  = "SMBCLUSTER_ROBUST_BACKEND" // local (default), glusterfs or cephfs
	// envStrict fails on the known issues too (known.go).
	envStrict = "SMBCLUSTER_ROBUST_STRICT"
)

// shortRun is each run's duration in make test: two runs, seed 1 and a
// random seed, about two minutes together.
const shortRun = 60 * time.Second

// TestRobustness runs the workload and the nemesis on a three-node bed
// and checks the history: runs of seed 1 and of a random seed (printed)
// in make test, or one run of SMBCLUSTER_ROBUST_SEED for
// SMBCLUSTER_ROBUST_DURATION (make robustness).
func TestRobustness(t *testing.T) {
	if testing.Short() {
		t.Skip("the robustness suite runs for minutes on the multi-host bed: not in -short")
	}
	d := shortRun
	if v := os.Getenv(envDuration); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatalf("%s=%q: %v", envDuration, v, err)
		}
	}
	strict := os.Getenv(envStrict) == "on"
	seeds := []uint64{1, rand.Uint64() % 1_000_000}
	if v := os.Getenv(envSeed); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", envSeed, v, err)
		}
		seeds = []uint64{s}
	}
	b := newBed(t, framework.BedOptions{Backend: backend(t)})
	for _, seed := range seeds {
		t.Run("seed="+strconv.FormatUint(seed, 10), func(t *testing.T) {
			t.Logf("seed %d (reproduce with make robustness ROBUST_SEED=%d ROBUST_DURATION=%v)", seed, seed, d)
			r := run(t, b, seed, d, true)
			for _, v := range r.report.Violations {
				if k := KnownIssue(v); k != "" && !strict {
					t.Logf("known issue (%s=on fails on it): %s\n%v", envStrict, k, v)
					continue
				}
				t.Error(v)
			}
			for _, p := range r.problems {
				t.Error(p)
			}
		})
	}
}

// TestRobustnessBrokenBuild shows that the checker catches what it must:
// nodes built with the robustnessbroken tag and told to skip the owner's
// share-mode and byte-range lock conflict checks serve the workload
// (without faults) for a short run, and the checker must report
// conflicting share modes held at once and a lost counter update.
func TestRobustnessBrokenBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("the robustness suite runs on the multi-host bed: not in -short")
	}
	framework.RequireBed(t)
	bin := framework.BuildNodeTags(t, "robustnessbroken")
	t.Setenv("SMBCLUSTER_BROKEN", "sharemode,locks")
	b := newBed(t, framework.BedOptions{NodeBinary: bin})
	r := run(t, b, 7, 30*time.Second, false)
	kinds := map[string]int{}
	for _, v := range r.report.Violations {
		switch {
		case strings.HasPrefix(v.What, "conflicting share modes"):
			kinds["share modes"]++
		case strings.HasPrefix(v.What, "lost update"), strings.HasPrefix(v.What, "counter"):
			kinds["lost updates"]++
		}
	}
	t.Logf("the broken build's run: %d violations: %v", len(r.report.Violations), kinds)
	if len(r.report.Violations) > 0 {
		t.Logf("the first:\n%v", r.report.Violations[0])
	}
	for _, k := range []string{"share modes", "lost updates"} {
		if kinds[k] == 0 {
			t.Errorf("the checker reported no violation of %s against a build that skips their check", k)
		}
	}
}

// backend is the storage the bed's nodes mount: SMBCLUSTER_ROBUST_BACKEND,
// local by default.
func backend(t *testing.T) framework.Backend {
	switch v := os.Getenv(envBackend); v {
	case "", "local":
		return &framework.Local{}
	case "glusterfs":
		framework.RequireGlusterFS(t)
		return &framework.GlusterFS{}
	case "cephfs":
		return &framework.CephFS{}
	default:
		t.Fatalf("%s=%q: want local, glusterfs or cephfs", envBackend, v)
		return nil
	}
}

// newBed is a three-node bed with the suite's user and share, serving
// the share through every node's address.
func newBed(t *testing.T, opts framework.BedOptions) *framework.Bed {
	t.Helper()
	b := framework.NewBed(t, opts)
	b.MustSMBCtl(t, "user", "add", user, "--password", password)
	b.MustSMBCtl(t, "share", "add", share, b.SharePath)
	w := &Workload{cfg: config(b, 0, "")}
	serves := func(name string) {
		for i := range b.Nodes {
			framework.WaitFor(t, framework.StartDeadline, "share "+name+" through "+b.PublicAddr(i), func() bool {
				l, err := w.dialAs(i, name, [16]byte{}, false)
				if err == nil {
					l.close()
				}
				return err == nil
			})
		}
	}
	serves(share)
	// The continuously available share's directory is made through the
	// first share: the local backend's storage is not SharePath in this
	// namespace.
	l, err := w.dial(0)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.c.Mkdir(caShare); err != nil {
		t.Fatalf("making the directory of share %s: %v", caShare, err)
	}
	l.close()
	b.MustSMBCtl(t, "share", "add", caShare, filepath.Join(b.SharePath, caShare), "--continuous-availability")
	serves(caShare)
	return b
}

func config(b *framework.Bed, seed uint64, prefix string) Config {
	var addrs []string
	for i := range b.Nodes {
		addrs = append(addrs, b.PublicAddr(i))
	}
	return Config{Addrs: addrs, Share: share, User: user, Password: password, Clients: 6, Seed: seed,
		Prefix: prefix, Registers: 6, Counters: 2, Holds: 3, Names: 2, CAShare: caShare, Multichannel: 2}
}

// result is one run's.
type result struct {
	ops      []Op
	faults   []Fault
	report   Report
	problems []string
	elapsed  time.Duration
}

// run runs the workload for d, with the nemesis if nemesis is set, reads
// the counters, checks the history and writes it, the faults and the
// verdict to a directory kept when the test fails.
func run(t *testing.T, b *framework.Bed, seed uint64, d time.Duration, nemesis bool) result {
	t.Helper()
	out := outDir(t)
	hist := NewHistory()
	w := Start(config(b, seed, fmt.Sprintf("rb-%d-%d-", seed, time.Now().UnixNano()%1_000_000)), hist)
	t.Cleanup(w.Stop) // a fatal nemesis step still ends every client
	var r result
	if nemesis {
		n := NewNemesis(b, hist, seed)
		if v := os.Getenv(envKinds); v != "" {
			if err := n.Only(strings.Split(v, ",")); err != nil {
				t.Fatalf("%s=%q: %v", envKinds, v, err)
			}
		}
		n.Run(t, d)
		r.faults, r.problems = n.Faults, n.Problems
	} else {
		<-time.After(d) // the workload's run, not a wait for a state
	}
	w.Stop()
	r.elapsed = hist.Now()
	if err := w.FinalReads(0); err != nil {
		t.Errorf("reading the counters after the run: %v", err)
	}
	r.ops = hist.Ops()
	start := time.Now()
	r.report = Check(r.ops, r.faults)
	summary := summarize(r, time.Since(start))
	t.Log(summary)
	writeOut(t, out, "summary.txt", summary)
	writeOut(t, out, "history.txt", joinOps(r.ops))
	writeOut(t, out, "faults.txt", joinFaults(r.faults))
	var vs strings.Builder
	for _, v := range r.report.Violations {
		vs.WriteString(v.String())
	}
	writeOut(t, out, "violations.txt", vs.String())
	t.Cleanup(func() {
		if !t.Failed() && os.Getenv(envOut) == "" {
			return // a directory asked for keeps the logs of a run that passed too
		}
		for i, n := range b.Nodes {
			writeOut(t, out, n.Name+".log", b.NodeLog(i)) // every process of the node's, a killed one's too
		}
		for _, m := range b.EtcdMembers {
			writeOut(t, out, m.Host.Name+"-etcd.log", m.Log())
		}
	})
	return r
}

// outDir is where a run's history and logs go: SMBCLUSTER_ROBUST_OUT
// (kept, with the nodes' and etcd members' logs, whatever the verdict),
// or a directory under the system's temporary one, removed when the test
// passes and kept (its name logged, the logs in it) when it fails.
func outDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(envOut)
	if dir != "" {
		dir = filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Logf("history and logs in %s", dir)
		return dir
	}
	dir, err := os.MkdirTemp("", "smbcluster-robustness-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("history and logs kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	return dir
}

func writeOut(t *testing.T, dir, name, s string) {
	if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
		t.Error(err)
	}
}

func joinOps(ops []Op) string {
	var b strings.Builder
	for _, o := range ops {
		fmt.Fprintln(&b, o)
	}
	return b.String()
}

func joinFaults(fs []Fault) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintln(&b, f)
	}
	return b.String()
}

// durableSummary is what the durable operations met: opens granted
// durable and persistent, reconnects taken and refused (with the last
// refusals' reasons), acknowledged chunks read back; and the operations
// that went through a session with two channels.
func durableSummary(ops []Op) string {
	var durable, persistent, reconnected, refused, chunks, multi int
	reasons := map[string]int{}
	for _, o := range ops {
		if o.Node2 >= 0 && o.Client >= 0 && o.Kind != Durable {
			multi++
		}
		if o.Kind != Durable || o.Outcome == Failed {
			continue
		}
		durable++
		if o.Persistent {
			persistent++
		}
		if o.Reconnected {
			reconnected++
		} else {
			refused++
			reasons[o.ReconnErr]++
		}
		for _, c := range o.Chunks {
			if c.Outcome == OK && c.Read {
				chunks++
			}
		}
	}
	s := fmt.Sprintf("  durable opens %d (%d persistent): reconnected %d, not reconnected %d", durable, persistent, reconnected, refused)
	if len(reasons) > 0 {
		s += fmt.Sprintf(" %v", reasons)
	}
	return s + fmt.Sprintf("; acknowledged chunks read back %d\n  operations through a session with two channels: %d\n", chunks, multi)
}

// summarize is a run's numbers: operations by kind and outcome, ops per
// second, the faults by kind with the longest stall a client saw in the
// window of each kind and the longest recovery, and the verdict.
func summarize(r result, checked time.Duration) string {
	var b strings.Builder
	type tally struct{ ok, failed, unknown int }
	byKind := map[Kind]*tally{}
	total := 0
	for _, o := range r.ops {
		if o.Client < 0 {
			continue
		}
		total++
		c := byKind[o.Kind]
		if c == nil {
			c = &tally{}
			byKind[o.Kind] = c
		}
		switch o.Outcome {
		case OK:
			c.ok++
		case Failed:
			c.failed++
		case Unknown:
			c.unknown++
		}
	}
	errs := map[string]int{}
	for _, o := range r.ops {
		if o.Outcome != OK && o.Err != "" {
			errs[o.Err]++
		}
	}
	secs := r.elapsed.Seconds()
	oks := 0
	for _, c := range byKind {
		oks += c.ok
	}
	fmt.Fprintf(&b, "%d operations in %v: %.0f ops/s (%.0f/s succeeded)\n", total, ms(r.elapsed), float64(total)/secs, float64(oks)/secs)
	for k := range Kind(len(kindNames)) {
		if c := byKind[k]; c != nil {
			fmt.Fprintf(&b, "  %-10s ok %6d  failed %6d  unknown %4d\n", k, c.ok, c.failed, c.unknown)
		}
	}
	b.WriteString(durableSummary(r.ops))
	if len(errs) > 0 {
		keys := make([]string, 0, len(errs))
		for e := range errs {
			keys = append(keys, e)
		}
		sort.Slice(keys, func(i, j int) bool { return errs[keys[i]] > errs[keys[j]] })
		fmt.Fprintf(&b, "  errors:")
		for _, e := range keys[:min(len(keys), 8)] {
			fmt.Fprintf(&b, " %s ×%d;", e, errs[e])
		}
		b.WriteString("\n")
	}
	if len(r.faults) > 0 {
		stalls := Stalls(r.ops, r.faults)
		count, paired := map[string]int{}, map[string]int{}
		recov := map[string]time.Duration{}
		pairs := 0
		for _, f := range r.faults {
			count[f.Kind]++
			key := f.Kind
			if f.With != "" {
				paired[f.Kind]++
				pairs++
				key = Paired
			}
			if f.Recovered > 0 {
				recov[key] = max(recov[key], f.Recovered-f.Undo)
			}
		}
		fmt.Fprintf(&b, "%d faults (%d of them two at once):\n  %-17s %5s %7s  %14s  %16s\n", len(r.faults), pairs,
			"kind", "count", "paired", "longest stall", "longest recovery")
		for _, k := range FaultKinds {
			if count[k] > 0 {
				fmt.Fprintf(&b, "  %-17s %5d %7d  %14v  %16v\n", k, count[k], paired[k], ms(stalls[k]), ms(recov[k]))
			}
		}
		if pairs > 0 {
			fmt.Fprintf(&b, "  %-17s %5d %7s  %14v  %16v\n", Paired, pairs/2, "", ms(stalls[Paired]), ms(recov[Paired]))
		}
	}
	fmt.Fprintf(&b, "checked in %v: %d violations", ms(checked), len(r.report.Violations))
	if len(r.report.Undecided) > 0 {
		fmt.Fprintf(&b, "; undecided registers (porcupine's time limit): %v", r.report.Undecided)
	}
	if len(r.problems) > 0 {
		fmt.Fprintf(&b, "; %d problems", len(r.problems))
	}
	return b.String()
}
