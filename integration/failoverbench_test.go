package integration

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gosmb2 "github.com/cloudsoda/go-smb2"
	"github.com/smbcluster/smbcluster/integration/framework"
)

// EnvBenchFailover runs TestFailoverBench with that many runs (make
// bench-failover sets it to 10); EnvBenchFailoverBed runs them on the
// multi-host bed with that backend instead of on one host (make
// bench-failover BED=glusterfs).
const (
	EnvBenchFailover    = "SMBCLUSTER_BENCH_FAILOVER"
	EnvBenchFailoverBed = "SMBCLUSTER_BENCH_FAILOVER_BED"
)

// failoverRun is one measured failover.
type failoverRun struct {
	node     string
	took     time.Duration // kill -9 → the first successful read through the node's address
	acked    int64         // bytes the writer had acknowledged when the node died
	lost     int64         // of those, bytes not read back intact after the failover
	attempts int           // client attempts until the first success
}

// failoverTarget is the cluster a failover is measured on: its nodes,
// the share and user the client uses, and how a node is killed and
// started again (on one host, or as a bed does it on separate hosts).
type failoverTarget struct {
	c                     *framework.Cluster
	user, password, share string
	kill                  func(t *testing.T, k int)
	// restart starts node k again and waits until it serves its
	// address.
	restart func(t *testing.T, k int)
}

// TestFailoverBench measures failover time as a client sees it: a
// writer streams 64 KiB WRITEs to a file through a node's public address;
// the node is killed (SIGKILL); a client then logs on again through the
// same address, opens the file and reads it back, retrying every 20 ms.
// The time from the kill to the first such read that returns every byte
// the writer had acknowledged is the failover time; bytes missing are
// lost. The node is started again and gets its address back before the
// next run; runs rotate over the three nodes. Nodes use a lease TTL of
// 3 s. Skipped unless SMBCLUSTER_BENCH_FAILOVER is set; on the bed
// (each node a host of its own with its own mount of the backend, the
// address moved by the address hook) with
// SMBCLUSTER_BENCH_FAILOVER_BED=glusterfs, cephfs or local.
func TestFailoverBench(t *testing.T) {
	runs, _ := strconv.Atoi(os.Getenv(EnvBenchFailover))
	if runs <= 0 {
		t.Skipf("set %s=RUNS to measure failover (make bench-failover)", EnvBenchFailover)
	}
	tg := failoverOnOneHost(t)
	if backend := os.Getenv(EnvBenchFailoverBed); backend != "" {
		tg = failoverOnBed(t, backend)
	}
	var results []failoverRun
	for i := range runs {
		k := i % len(tg.c.Nodes)
		r := failoverOnce(t, tg, k, fmt.Sprintf("run-%d-%d.bin", i, time.Now().UnixNano()))
		t.Logf("run %d: killed %s, served again through its address after %v (%d attempts), %d bytes acknowledged before, %d lost",
			i+1, r.node, r.took.Round(time.Millisecond), r.attempts, r.acked, r.lost)
		results = append(results, r)
	}
	t.Log(failoverSummary(results, tg.c.LeaseTTL))
}

// failoverOnOneHost is a three-node cluster on this host.
func failoverOnOneHost(t *testing.T) failoverTarget {
	c := framework.NewCluster(t, framework.ClusterOptions{Nodes: 3, LeaseTTL: 3 * time.Second})
	c.MustSMBCtl(t, "share", "add", "data", t.TempDir())
	c.MustSMBCtl(t, "user", "add", "lee", "--password", "Lee-Pass-1")
	return failoverTarget{c: c, user: "lee", password: "Lee-Pass-1", share: "data",
		kill: func(t *testing.T, k int) { c.Nodes[k].Kill(t) },
		restart: func(t *testing.T, k int) {
			n := c.Nodes[k]
			epoch := c.NodeListed(t, n.Name).Epoch
			c.Nodes[k] = c.LaunchNode(t, n.Name, n.Addr, "--join-token-file", n.TokenFile)
			c.Nodes[k].TokenFile = n.TokenFile
			framework.WaitFor(t, clusterDeadline, n.Name+" back with its address", func() bool {
				l := c.NodeListed(t, n.Name)
				return l.State == "up" && l.Epoch > epoch && slices.Contains(l.Serving, n.Addr)
			})
		}}
}

// failoverOnBed is the bed of backend (its own, with the bed's share and
// user).
func failoverOnBed(t *testing.T, backend string) failoverTarget {
	b := startBed(t, backend, false)
	framework.WaitFor(t, 2*clusterDeadline, "every node serving "+bedShare, func() bool {
		return allViews(t, b, "serving")
	})
	return failoverTarget{c: b.Cluster, user: bedUser, password: bedPass, share: bedShare,
		kill:    func(t *testing.T, k int) { b.KillNode(t, k) },
		restart: func(t *testing.T, k int) { b.RestartNode(t, k) }}
}

// failoverOnce kills node k while a writer streams through its address,
// measures until a client reads the file back through that address, and
// starts the node again.
func failoverOnce(t *testing.T, tg failoverTarget, k int, file string) failoverRun {
	n := tg.c.Nodes[k]
	addr := n.Addr
	r := failoverRun{node: n.Name}
	acked := make(chan int64, 1)
	started := make(chan struct{})
	go func() { acked <- streamWrites(tg, addr, file, started) }()
	<-started
	killed := time.Now()
	tg.kill(t, k)
	r.acked = <-acked
	want := pattern(r.acked)
	framework.WaitFor(t, 60*time.Second, "a read through "+addr+" after "+n.Name+" was killed", func() bool {
		r.attempts++
		got, err := readThrough(addr, tg.user, tg.password, tg.share, file)
		if err != nil {
			return false
		}
		r.took = time.Since(killed)
		r.lost = int64(len(want)) - commonPrefix(got, want)
		return true
	})
	tg.restart(t, k)
	return r
}

// streamWrites writes pattern bytes to file through addr in 64 KiB
// WRITEs until one fails (the node died) and returns how many bytes were
// acknowledged; started is closed after the first 1 MiB.
func streamWrites(tg failoverTarget, addr, file string, started chan<- struct{}) int64 {
	var once sync.Once
	start := func() { once.Do(func() { close(started) }) }
	defer start()
	ctx := context.Background()
	d := &gosmb2.Dialer{Initiator: &gosmb2.NTLMInitiator{User: tg.user, Password: tg.password}}
	s, err := d.Dial(ctx, addr)
	if err != nil {
		return 0
	}
	defer s.Logoff()
	host, _, _ := net.SplitHostPort(addr)
	fs, err := s.Mount(`\\` + host + `\` + tg.share)
	if err != nil {
		return 0
	}
	f, err := fs.Create(file)
	if err != nil {
		return 0
	}
	const chunk = 64 << 10
	data := pattern(streamMax)
	var off int64
	for off < streamMax {
		if _, err := f.WriteAt(data[off:off+chunk], off); err != nil {
			return off
		}
		off += chunk
		if off == 1<<20 {
			start()
		}
	}
	return off
}

// streamMax bounds what a writer writes.
const streamMax = 256 << 20

// patternData is the stream writers write, made once.
var patternData = sync.OnceValue(func() []byte {
	b := make([]byte, streamMax)
	rand.NewChaCha8([32]byte{'f', 'a', 'i', 'l'}).Read(b)
	return b
})

// pattern is the first n bytes of what the writer writes.
func pattern(n int64) []byte { return patternData()[:n] }

func commonPrefix(a, b []byte) int64 {
	n := min(len(a), len(b))
	for i := 0; i < n; i += 4096 {
		j := min(i+4096, n)
		if !bytes.Equal(a[i:j], b[i:j]) {
			for k := i; k < j; k++ {
				if a[k] != b[k] {
					return int64(k)
				}
			}
		}
	}
	return int64(n)
}

// failoverSummary is the runs' median and worst failover time and bytes
// lost.
func failoverSummary(runs []failoverRun, ttl time.Duration) string {
	took := make([]time.Duration, len(runs))
	var lost, acked int64
	for i, r := range runs {
		took[i] = r.took
		lost += r.lost
		acked += r.acked
	}
	slices.Sort(took)
	median := took[len(took)/2]
	if len(took)%2 == 0 {
		median = (took[len(took)/2-1] + took[len(took)/2]) / 2
	}
	var b strings.Builder
	fmt.Fprintf(&b, "failover (kill -9 → first successful read through the dead node's address), %d runs, lease TTL %v: median %v, worst %v, best %v; bytes lost %d of %d acknowledged",
		len(runs), ttl, median.Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), took[0].Round(time.Millisecond), lost, acked)
	return b.String()
}
