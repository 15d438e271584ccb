package integration

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	gosmb2 "github.com/cloudsoda/go-smb2"
	"github.com/smbcluster/smbcluster/integration/framework"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// fenceSlack is what the fencing bound allows beyond the lease TTL: the
// node itself stops at the latest TTL - max(TTL/10, 100ms) after etcd
// stopped (its deadline counts from the send time of the last answered
// keep-alive, sent before the stop); the slack covers the scheduling of
// the node's timer and of this test's probes on a loaded machine.
const fenceSlack = time.Second

// openSession opens a session of user on addr with the raw test client,
// connects to share and creates a file; it fails the test if any step is
// refused.
func openSession(t *testing.T, addr, user, password, share, file string) *servertest.Conn {
	t.Helper()
	s := servertest.Connect(t, addr, user, password, share, smb2.Dialect311)
	if _, err := s.Create(file); err != nil {
		t.Fatalf("CREATE %s on %s: %v", file, addr, err)
	}
	return s
}

// probe opens a session of user on n with go-smb2, mounts share and
// creates file: nil when the node admitted all of it.
func probe(n *framework.ClusterNode, user, password, share, file string) error {
	ctx, cancel := context.WithTimeout(context.Background(), clusterDeadline)
	defer cancel()
	d := &gosmb2.Dialer{Initiator: &gosmb2.NTLMInitiator{User: user, Password: password}}
	s, err := d.Dial(ctx, n.Addr)
	if err != nil {
		return err
	}
	defer s.Logoff()
	fs, err := s.WithContext(ctx).Mount(`\\` + n.Host + `\` + share)
	if err != nil {
		return err
	}
	defer fs.Umount()
	f, err := fs.Create(file)
	if err != nil {
		return err
	}
	return f.Close()
}

// TestFencingEtcdStopped: with etcd stopped (SIGSTOP of its process: its
// connections stay open and nothing answers), a node stops admitting
// sessions and opens and closes its existing connections within its
// lease TTL (plus fenceSlack), refuses everything for the rest of the
// outage, and after SIGCONT joins again with the next epoch and serves.
// Two rounds.
func TestFencingEtcdStopped(t *testing.T) {
	const ttl = 3 * time.Second
	c := framework.NewCluster(t, framework.ClusterOptions{Nodes: 1, LeaseTTL: ttl, EtcdProcess: true, Metrics: true})
	n := c.Nodes[0]
	c.MustSMBCtl(t, "share", "add", "data", t.TempDir())
	c.MustSMBCtl(t, "user", "add", "hana", "--password", "Hana-Pass-1")
	bound := ttl + fenceSlack
	defer func() {
		// Each outage is one fencing for the lost lease on /metrics, and
		// etcd calls failed meanwhile.
		s := mustScrape(t, n.MetricsAddr)
		if got := s.value("smbcluster_fencing_events_total", "reason", "lease_lost"); got != 2 {
			t.Errorf("fencing events for a lost lease: %v, want 2 (one per outage); all: %v", got, s.value("smbcluster_fencing_events_total"))
		}
		if s.value("smbcluster_etcd_request_errors_total") == 0 {
			t.Error("no failed etcd call counted while etcd was stopped")
		}
	}()
	epoch := c.NodeListed(t, "node1").Epoch
	for round := 1; round <= 2; round++ {
		framework.WaitFor(t, clusterDeadline, "node1 to serve share data", func() bool {
			return probe(n, "hana", "Hana-Pass-1", "data", "ready") == nil
		})
		s := openSession(t, n.Addr, "hana", "Hana-Pass-1", "data", "f"+strconv.Itoa(round))
		s.Timeout = bound + clusterDeadline
		closed := make(chan error, 1)
		stopped := time.Now()
		c.Etcd.Stop(t)
		go func() { closed <- s.WaitClosed() }()

		// Probe new sessions until the existing connection is closed, then
		// for one more TTL of the outage: once one is refused, none may be
		// admitted again.
		var endedAfter, refusedAfter time.Duration
		admittedAfterRefusal := 0
		tick := time.NewTicker(100 * time.Millisecond)
		for probes := 0; endedAfter == 0 || time.Since(stopped) < endedAfter+ttl; probes++ {
			select {
			case err := <-closed:
				if err != nil {
					t.Fatalf("round %d: the existing connection: %v", round, err)
				}
				endedAfter = time.Since(stopped)
			case <-tick.C:
			}
			if endedAfter == 0 && time.Since(stopped) > bound+clusterDeadline {
				t.Fatalf("round %d: the existing connection is still served %v after etcd stopped", round, time.Since(stopped))
			}
			if probe(n, "hana", "Hana-Pass-1", "data", "probe") == nil {
				if refusedAfter != 0 {
					admittedAfterRefusal++
				}
				continue
			}
			if refusedAfter == 0 {
				refusedAfter = time.Since(stopped)
			}
		}
		tick.Stop()
		outage := time.Since(stopped)
		t.Logf("round %d: lease TTL %v: existing connection closed %v and new sessions refused %v after SIGSTOP; none admitted in the %v of outage after",
			round, ttl, endedAfter.Round(time.Millisecond), refusedAfter.Round(time.Millisecond), (outage - refusedAfter).Round(time.Millisecond))
		if endedAfter > bound || refusedAfter > bound {
			t.Errorf("round %d: fenced %v (connection closed) / %v (sessions refused) after etcd stopped, more than TTL %v + %v",
				round, endedAfter, refusedAfter, ttl, fenceSlack)
		}
		if admittedAfterRefusal > 0 {
			t.Errorf("round %d: %d new sessions admitted after the node first refused one, with etcd stopped", round, admittedAfterRefusal)
		}

		c.Etcd.Continue(t)
		resumed := time.Now()
		framework.WaitFor(t, clusterDeadline, "node1 to serve again after SIGCONT", func() bool {
			return probe(n, "hana", "Hana-Pass-1", "data", "after"+strconv.Itoa(round)) == nil
		})
		t.Logf("round %d: serving again %v after SIGCONT", round, time.Since(resumed).Round(time.Millisecond))
		listed := c.NodeListed(t, "node1")
		if listed.State != "up" || listed.Epoch <= epoch {
			t.Errorf("round %d: node1 listed %+v after rejoining, want up with an epoch above %d", round, listed, epoch)
		}
		epoch = listed.Epoch
	}
}

// TestSupersededIncarnation: a second smbnode started with the same name
// and join token takes the next epoch; the first process stops serving
// at once (its connections end) and exits non-zero saying it was
// superseded, while the second serves and `smbctl node ls` shows the
// node up under the new epoch.
func TestSupersededIncarnation(t *testing.T) {
	c := framework.NewCluster(t, framework.ClusterOptions{Nodes: 1})
	first := c.Nodes[0]
	c.MustSMBCtl(t, "share", "add", "data", t.TempDir())
	c.MustSMBCtl(t, "user", "add", "ivan", "--password", "Ivan-Pass-1")
	framework.WaitFor(t, clusterDeadline, "node1 to serve share data", func() bool {
		return probe(first, "ivan", "Ivan-Pass-1", "data", "ready") == nil
	})
	s := openSession(t, first.Addr, "ivan", "Ivan-Pass-1", "data", "f")
	before := c.NodeListed(t, "node1")
	if before.State != "up" {
		t.Fatalf("node1 listed %+v", before)
	}

	addr := net.JoinHostPort("127.0.0.2", strconv.Itoa(c.Port))
	second := c.LaunchNode(t, "node1", addr, "--join-token-file", first.TokenFile)
	select {
	case <-first.Exited():
	case <-time.After(clusterDeadline):
		t.Fatalf("the superseded smbnode still runs %v after another joined under its name", clusterDeadline)
	}
	var exit *exec.ExitError
	if err := first.ExitErr(); err == nil || !errors.As(err, &exit) {
		t.Errorf("the superseded smbnode exited with %v, want a failure", err)
	}
	if log := first.Log(); !strings.Contains(log, "superseded") {
		t.Errorf("the superseded smbnode's log does not say why it stopped:\n%s", log)
	}
	if err := s.WaitClosed(); err != nil {
		t.Errorf("the superseded smbnode's connection: %v", err)
	}
	if err := probe(second, "ivan", "Ivan-Pass-1", "data", "g"); err != nil {
		t.Errorf("a session with an open file on the newer smbnode: %v", err)
	}
	after := c.NodeListed(t, "node1")
	if after.State != "up" || after.Epoch != before.Epoch+1 {
		t.Errorf("node1 listed %+v after the older process stopped, want up with epoch %d", after, before.Epoch+1)
	}
}
