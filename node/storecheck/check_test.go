package storecheck

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/coordinator/store"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
)

var etcdEnv struct {
	once      sync.Once
	endpoints []string
	err       error
}

func endpoints(t *testing.T) []string {
	t.Helper()
	etcdEnv.once.Do(func() {
		dir, err := os.MkdirTemp("", "storecheck-etcd")
		if err != nil {
			etcdEnv.err = err
			return
		}
		etcdEnv.endpoints, _, etcdEnv.err = store.StartEmbedded(dir)
	})
	if etcdEnv.err != nil {
		t.Fatal(etcdEnv.err)
	}
	return etcdEnv.endpoints
}

// node is one node's Checker of one share, on a lease of its own.
type node struct {
	name string
	mu   sync.Mutex
	view View
	seen []string // states in order
	stop func()
}

func (n *node) get() View {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.view
}

func startNode(t *testing.T, cli *clientv3.Client, share, name, root string, volume uint64) *node {
	t.Helper()
	return startNodeEvery(t, cli, share, name, root, volume, time.Hour)
}

func startNodeEvery(t *testing.T, cli *clientv3.Client, share, name, root string, volume uint64, interval time.Duration) *node {
	t.Helper()
	lease, err := cli.Grant(context.Background(), 30)
	if err != nil {
		t.Fatal(err)
	}
	c := New(Config{Client: cli, Node: name, Interval: interval, Log: testLog(t),
		Lease: func() (clientv3.LeaseID, bool) { return lease.ID, true }})
	n := &node{name: name}
	n.stop = c.Watch(share, root, volume, func(v View) {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.view = v
		if len(n.seen) == 0 || n.seen[len(n.seen)-1] != v.State {
			n.seen = append(n.seen, v.State)
		}
	})
	t.Cleanup(func() {
		n.stop()
		cli.Revoke(context.Background(), lease.ID)
	})
	return n
}

func waitState(t *testing.T, n *node, state string) View {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if v := n.get(); v.State == state {
			return v
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, not waiting for time
	}
	t.Fatalf("%s: state %+v (seen %v), want %s", n.name, n.get(), n.seen, state)
	return View{}
}

func client(t *testing.T) *clientv3.Client {
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints(t), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// TestCoherentNodes: three nodes over one directory check each other
// and serve; their probes stay out of each other's way; a node stopped
// leaves no probe file and no record.
func TestCoherentNodes(t *testing.T) {
	cli := client(t)
	root := t.TempDir()
	share := "coherent"
	n1 := startNode(t, cli, share, "n1", root, 7)
	waitState(t, n1, Serving) // alone: nothing to check against
	n2 := startNode(t, cli, share, "n2", root, 7)
	n3 := startNode(t, cli, share, "n3", root, 7)
	for _, n := range []*node{n1, n2, n3} {
		v := waitState(t, n, Serving)
		if !v.ZeroCopy {
			t.Errorf("%s: zero-copy off over a local directory", n.name)
		}
	}
	if got := n1.seen; len(got) != 2 || got[0] != Checking || got[1] != Serving {
		t.Errorf("n1 went through %v: a serving node must not stop serving while a newcomer is checked", got)
	}
	for _, n := range []*node{n2, n3} {
		if n.seen[0] != Checking {
			t.Errorf("%s served before checking: %v", n.name, n.seen)
		}
	}
	// Every pair was decided both ways, from two rounds each.
	for _, checker := range []string{"n1", "n2", "n3"} {
		for _, prober := range []string{"n1", "n2", "n3"} {
			if checker == prober {
				continue
			}
			v := &statev1.StorageVerdictRecord{}
			waitRecord(t, cli, statev1.StorageVerdictKey(share, checker, prober), v, func() bool { return v.Ok && v.RoundsOk >= RoundsToDecide })
		}
	}
	n3.stop()
	resp, err := cli.Get(context.Background(), statev1.StoragePrefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if strings.Contains(string(kv.Key), "/n3") {
			t.Errorf("n3 stopped but %s is left", kv.Key)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(root, statev1.StorageProbeDir))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "n3.") {
			t.Errorf("n3 stopped but its probe file %s is left", e.Name())
		}
	}
}

func waitRecord(t *testing.T, cli *clientv3.Client, key string, m proto.Message, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := cli.Get(context.Background(), key)
		if err == nil && len(resp.Kvs) == 1 && proto.Unmarshal(resp.Kvs[0].Value, m) == nil && ok() {
			return
		}
		time.Sleep(10 * time.Millisecond) // polling a condition
	}
	t.Fatalf("%s: %v", key, m)
}

// TestSeparateStorageRefused: a node whose mount of the share is another
// filesystem than the others' (its own local directory, as separate
// hosts without shared storage would have) refuses the share alone,
// naming the cause; the two that share storage go on serving. Two nodes
// that disagree both refuse.
func TestSeparateStorageRefused(t *testing.T) {
	cli := client(t)
	shared, own := t.TempDir(), t.TempDir()
	n1 := startNode(t, cli, "separate", "n1", shared, 9)
	n2 := startNode(t, cli, "separate", "n2", shared, 9)
	waitState(t, n1, Serving)
	waitState(t, n2, Serving)
	n3 := startNode(t, cli, "separate", "n3", own, 9)
	v := waitState(t, n3, Refused)
	if !strings.Contains(v.Reason, "not seen") {
		t.Errorf("n3 refused for %q, want the files not seen", v.Reason)
	}
	for _, n := range []*node{n1, n2} {
		if got := n.get(); got.State != Serving {
			t.Errorf("%s: %+v, want serving beside the one bad node", n.name, got)
		}
	}

	n4 := startNode(t, cli, "separate2", "n4", shared, 3)
	waitState(t, n4, Serving)
	n5 := startNode(t, cli, "separate2", "n5", own, 3)
	waitState(t, n5, Refused)
	waitState(t, n4, Refused)
}

// TestDecide covers Decide's rules.
func TestDecide(t *testing.T) {
	now := time.Now()
	ok2 := &statev1.StorageVerdictRecord{Ok: true, RoundsOk: RoundsToDecide}
	ok1 := &statev1.StorageVerdictRecord{Ok: true, RoundsOk: RoundsToDecide - 1}
	bad := &statev1.StorageVerdictRecord{Ok: false, Reason: "stale data"}
	stale := &statev1.StorageVerdictRecord{Ok: true, RoundsOk: 3, CacheStale: true}
	for _, tc := range []struct {
		name     string
		pairs    map[string]Pair
		serving  bool
		probeErr error
		want     string
		zeroCopy bool
	}{
		{"alone", nil, false, nil, Serving, true},
		{"newcomer waits", map[string]Pair{"a": {Mine: ok1, Theirs: ok2, Since: now}}, false, nil, Checking, true},
		{"serving node ignores a pending pair", map[string]Pair{"a": {Mine: ok1, Since: now}}, true, nil, Serving, true},
		{"pending past its bound", map[string]Pair{"a": {Since: now.Add(-time.Minute)}}, false, nil, Serving, true},
		{"coherent pair", map[string]Pair{"a": {Mine: ok2, Theirs: ok2, Since: now}}, false, nil, Serving, true},
		{"my view stale", map[string]Pair{"a": {Mine: bad, Theirs: ok2, Since: now}}, true, nil, Refused, true},
		{"their view stale", map[string]Pair{"a": {Mine: ok2, Theirs: bad, Since: now}}, true, nil, Refused, true},
		{"one bad of three: the good serve", map[string]Pair{"a": {Mine: ok2, Theirs: ok2}, "b": {Mine: bad, Theirs: ok2}}, true, nil, Serving, true},
		{"the bad one refuses", map[string]Pair{"a": {Mine: bad, Theirs: ok2}, "b": {Mine: bad, Theirs: ok2}}, true, nil, Refused, true},
		{"all disagree", map[string]Pair{"a": {Mine: bad}, "b": {Theirs: bad}, "c": {Mine: bad}}, true, nil, Refused, true},
		{"page cache stale", map[string]Pair{"a": {Mine: stale, Theirs: ok2}}, false, nil, Serving, false},
		{"cannot probe", nil, true, errors.New("EROFS"), Refused, true},
	} {
		v := Decide(tc.pairs, tc.serving, tc.probeErr, now)
		if v.State != tc.want || v.ZeroCopy != tc.zeroCopy {
			t.Errorf("%s: %+v, want %s (zero-copy %v)", tc.name, v, tc.want, tc.zeroCopy)
		}
		if v.State == Refused && v.Reason == "" {
			t.Errorf("%s: refused without a reason", tc.name)
		}
	}
}

// TestNewShareNotServedBeforeChecked: a share added to a running cluster
// reaches every node at once; a node must not take itself for the only
// one and serve before the others' probes show. Two live nodes over
// separate storage never serve it.
func TestNewShareNotServedBeforeChecked(t *testing.T) {
	cli := client(t)
	for _, n := range []string{"l1", "l2"} {
		lease, err := cli.Grant(context.Background(), 30)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Put(context.Background(), statev1.NodeLiveKey(n), "", clientv3.WithLease(lease.ID)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cli.Revoke(context.Background(), lease.ID) })
	}
	n1 := startNode(t, cli, "added", "l1", t.TempDir(), 5)
	n2 := startNode(t, cli, "added", "l2", t.TempDir(), 5)
	waitState(t, n1, Refused)
	waitState(t, n2, Refused)
	for _, n := range []*node{n1, n2} {
		n.mu.Lock()
		if slices.Contains(n.seen, Serving) {
			t.Errorf("%s served a share whose storage it had not checked: %v", n.name, n.seen)
		}
		n.mu.Unlock()
	}
}

// TestMountType finds the type of the mount holding a path: the root's,
// /proc's.
func TestMountType(t *testing.T) {
	if got := mountType("/proc/self"); got != "proc" {
		t.Errorf("mountType(/proc/self) = %q, want proc", got)
	}
	if got := mountType(t.TempDir()); got == "" {
		t.Errorf("no mount type for a temporary directory")
	}
	if got := unescapeMount(`/mnt/a\040b`); got != "/mnt/a b" {
		t.Errorf("unescapeMount = %q", got)
	}
	if h := hints["fuse.glusterfs"]; !strings.Contains(h, "direct-io-mode=enable") {
		t.Errorf("GlusterFS hint %q", h)
	}
}

// TestProbeDirRemoved: the probe directory removed under running nodes
// (by hand on the storage) is made again at the next round; the share
// stays served.
func TestProbeDirRemoved(t *testing.T) {
	cli := client(t)
	root := t.TempDir()
	n1 := startNodeEvery(t, cli, "removed", "r1", root, 4, 100*time.Millisecond)
	n2 := startNodeEvery(t, cli, "removed", "r2", root, 4, 100*time.Millisecond)
	waitState(t, n1, Serving)
	waitState(t, n2, Serving)
	key := statev1.StorageProbeKey("removed", "r1")
	rec := &statev1.StorageProbeRecord{}
	waitRecord(t, cli, key, rec, func() bool { return true })
	before := probeFile(rec.Name)
	if err := os.RemoveAll(filepath.Join(root, statev1.StorageProbeDir)); err != nil {
		t.Fatal(err)
	}
	waitRecord(t, cli, key, rec, func() bool { return probeFile(rec.Name) != before && rec.Round >= 3 })
	for _, n := range []*node{n1, n2} {
		if v := waitState(t, n, Serving); v.State != Serving {
			t.Errorf("%s: %+v", n.name, v)
		}
	}
}

// testLog logs to the test's output with -v.
func testLog(t *testing.T) *slog.Logger {
	if !testing.Verbose() {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, nil))
}
