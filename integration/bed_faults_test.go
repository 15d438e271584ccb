package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	gosmb2 "github.com/cloudsoda/go-smb2"
	"github.com/smbcluster/smbcluster/integration/framework"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// Faults only separate hosts have (issue 22, item 6): partitions made
// with nftables inside a host's network namespace (framework.Host.CutOff)
// and etcd members killed, on the shared local-directory bed. Every test
// leaves the bed as it found it: every fault is undone (t.Cleanup too)
// and the test waits until the cluster serves normally again.

// peerBound is what the cluster promises a client whose request needs a
// node its node cannot reach (docs/ARCHITECTURE.md, Fencing: a partition
// between nodes): an open is answered within the peer call timeout
// (node/peer callTimeout, 10 s) — STATUS_IO_TIMEOUT when the owner did
// not answer — and a close within twice that (closeBound: a close of an
// open whose admission delegation is being returned waits for the return
// at most callTimeout, then for its own call). peerSlack is what the
// test allows on top for a loaded machine (2 cores shared with other
// jobs).
const (
	peerBound  = 10 * time.Second
	closeBound = 2 * peerBound
	peerSlack  = 3 * time.Second
)

// faultSession is a go-smb2 client of share data through one address:
// what a real client does, with every error returned, none fatal.
type faultSession struct {
	s  *gosmb2.Session
	fs *gosmb2.Share
}

func dialFault(addr string) (*faultSession, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d := &gosmb2.Dialer{Initiator: &gosmb2.NTLMInitiator{User: bedUser, Password: bedPass}}
	s, err := d.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	host, _, _ := net.SplitHostPort(addr)
	fs, err := s.Mount(`\\` + host + `\` + bedShare)
	if err != nil {
		s.Logoff()
		return nil, err
	}
	return &faultSession{s: s, fs: fs}, nil
}

func (c *faultSession) close() {
	c.fs.Umount()
	c.s.Logoff()
}

// with returns the share bounded by d: a request the server never
// answers ends the test's wait, not the test.
func (c *faultSession) with(d time.Duration) (*gosmb2.Share, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	return c.fs.WithContext(ctx), cancel
}

// mustDialFault is dialFault, waiting until the address serves.
func mustDialFault(t *testing.T, addr string) *faultSession {
	t.Helper()
	var c *faultSession
	framework.WaitFor(t, clusterDeadline, "gina's session through "+addr, func() bool {
		var err error
		c, err = dialFault(addr)
		return err == nil
	})
	return c
}

// epochs returns every node's epoch as smbctl node ls lists it.
func epochs(t *testing.T, b *framework.Bed) map[string]uint64 {
	m := map[string]uint64{}
	for _, n := range b.Nodes {
		m[n.Name] = b.NodeListed(t, n.Name).Epoch
	}
	return m
}

// bedServing waits until every node is up, serves share data and its own
// public address (after a fault healed).
func bedServing(t *testing.T, b *framework.Bed) {
	t.Helper()
	for i, n := range b.Nodes {
		framework.WaitFor(t, clusterDeadline, n.Name+" up and serving its address", func() bool {
			l := b.NodeListed(t, n.Name)
			return l.State == "up" && slices.Contains(l.Serving, b.PublicAddr(i))
		})
		bedConnect(t, n).Close()
	}
}

// timed is one request's outcome.
type timed struct {
	what       string
	start, end time.Time
	err        error
}

func (r timed) took() time.Duration { return r.end.Sub(r.start) }

func longest(rs []timed) timed {
	var l timed
	for _, r := range rs {
		if r.took() > l.took() {
			l = r
		}
	}
	return l
}

// TestBedFaultPeersCutOff: node1's host is cut off from the other node
// hosts (every packet dropped both ways), not from etcd: its lease holds,
// it owns its shards, and every other node still routes there. Clients
// through node1 and through node2 open files (about two thirds of them
// owned by a node across the cut) and close files opened before the cut:
// every request must be answered within peerBound (+ slack) — success
// where the file's owner is reachable, an NTSTATUS error where not — and
// no node fences. After healing, opens of the same files succeed through
// both nodes.
func TestBedFaultPeersCutOff(t *testing.T) {
	b := bedFor(t, "local", false)
	bedServing(t, b)
	before := epochs(t, b)
	const files = 18
	names := make([]string, files)
	stamp := time.Now().UnixNano()
	for i := range names {
		names[i] = fmt.Sprintf("fault-peers-%d-%d.bin", stamp, i)
	}
	clients := []*faultSession{mustDialFault(t, b.PublicAddr(0)), mustDialFault(t, b.PublicAddr(1))}
	defer func() {
		for _, c := range clients {
			c.close()
		}
	}()
	// Opened before the cut, closed during it.
	var held [][]*gosmb2.File
	for _, c := range clients {
		var fs []*gosmb2.File
		share, cancel := c.with(2*peerBound + 2*clusterDeadline) // the closes' bound too
		defer cancel()
		for i := range 6 {
			f, err := share.OpenFile(fmt.Sprintf("fault-peers-held-%d-%d.bin", stamp, i), os.O_RDWR|os.O_CREATE, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			fs = append(fs, f)
		}
		held = append(held, fs)
	}

	b.Hosts[0].CutOff(t, b.OtherNodeHosts(0)...)
	cut := time.Now()
	var mu sync.Mutex
	var results []timed
	var wg sync.WaitGroup
	record := func(r timed) {
		mu.Lock()
		results = append(results, r)
		mu.Unlock()
	}
	for ci, c := range clients {
		for _, name := range names {
			wg.Add(1)
			go func() {
				defer wg.Done()
				fs, cancel := c.with(peerBound + clusterDeadline)
				defer cancel()
				r := timed{what: fmt.Sprintf("open of %s through node%d", name, ci+1), start: time.Now()}
				f, err := fs.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
				r.end, r.err = time.Now(), err
				record(r)
				if err == nil {
					f.Close()
				}
			}()
		}
		for _, f := range held[ci] {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := timed{what: fmt.Sprintf("close of %s through node%d", f.Name(), ci+1), start: time.Now()}
				r.err = f.Close()
				r.end = time.Now()
				record(r)
			}()
		}
	}
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	select {
	case <-all:
	case <-time.After(closeBound + clusterDeadline):
		if os.Getenv("SMBC_FAULT_DUMP") != "" {
			// Where the nodes wait: their goroutines (SIGQUIT).
			for _, n := range b.Nodes[:2] {
				n.Signal(syscall.SIGQUIT)
				<-n.Exited()
				os.WriteFile("/tmp/fault-"+n.Name+".log", []byte(n.Log()), 0o644)
			}
		}
		t.Errorf("requests unanswered %v after the cut", time.Since(cut).Round(time.Millisecond))
		<-all
	}
	answered := time.Since(cut)
	failed, timeouts := 0, 0
	var opens, closes []timed
	for _, r := range results {
		bound := peerBound
		if strings.HasPrefix(r.what, "close") {
			bound = closeBound
			closes = append(closes, r)
		} else {
			opens = append(opens, r)
		}
		if r.err != nil {
			failed++
			var re *gosmb2.ResponseError
			if errors.As(r.err, &re) && smb2.Status(re.Code) == smb2.StatusIOTimeout {
				timeouts++
			}
			if errors.Is(r.err, context.DeadlineExceeded) {
				t.Errorf("%s: not answered in %v", r.what, r.took().Round(time.Millisecond))
			}
		}
		if r.took() > bound+peerSlack {
			t.Errorf("%s: answered after %v, more than %v (+%v): %v", r.what, r.took().Round(time.Millisecond), bound, peerSlack, r.err)
		}
	}
	lo, lc := longest(opens), longest(closes)
	t.Logf("node1 cut off from its peers: %d requests (opens and closes through node1 and node2), %d answered with an error (%d STATUS_IO_TIMEOUT), all within %v; longest open %v (%s: %v), longest close %v (%s: %v)",
		len(results), failed, timeouts, answered.Round(time.Millisecond), lo.took().Round(time.Millisecond), lo.what, lo.err,
		lc.took().Round(time.Millisecond), lc.what, lc.err)
	if failed == 0 {
		t.Errorf("every request succeeded across the cut: were the files' owners reachable after all?")
	}
	if after := epochs(t, b); !maps(before, after) {
		t.Errorf("epochs changed while node1 was cut off from its peers only: %v, then %v", before, after)
	}

	b.Hosts[0].Heal(t)
	healed := time.Now()
	for ci, c := range clients {
		for _, name := range names {
			framework.WaitFor(t, clusterDeadline, "an open of "+name+" through node"+fmt.Sprint(ci+1)+" after healing", func() bool {
				fs, cancel := c.with(peerBound + peerSlack)
				defer cancel()
				f, err := fs.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
				if err != nil {
					return false
				}
				return f.Close() == nil
			})
		}
	}
	t.Logf("after healing, every open succeeded through node1 and node2 within %v", time.Since(healed).Round(time.Millisecond))
	bedServing(t, b)
}

// maps reports whether two epoch maps are equal.
func maps(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestBedFaultEtcdCutOff: node1's host is cut off from the three etcd
// hosts, not from its peers. It must fence within its lease TTL: a
// client's requests through node1 (a session made before the cut,
// reading in a loop) are answered until the fence and none sent after
// cut + TTL is; the other nodes take node1's public address; after
// healing node1 joins again (the next epoch), takes its address back and
// serves.
func TestBedFaultEtcdCutOff(t *testing.T) {
	b := bedFor(t, "local", false)
	bedServing(t, b)
	ttl := b.LeaseTTL
	epoch := b.NodeListed(t, "node1").Epoch
	c := mustDialFault(t, b.PublicAddr(0))
	defer c.close()
	name := fmt.Sprintf("fault-etcd-%d.bin", time.Now().UnixNano())
	if err := c.fs.WriteFile(name, []byte("fenced?"), 0o644); err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var results []timed
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			fs, cancel := c.with(ttl + peerBound + clusterDeadline)
			r := timed{what: "read of " + name + " through node1", start: time.Now()}
			_, r.err = fs.ReadFile(name)
			r.end = time.Now()
			cancel()
			results = append(results, r)
			if r.err != nil {
				return // the connection is gone: the node fenced
			}
		}
	}()

	b.Hosts[0].CutOff(t, b.EtcdHosts...)
	cut := time.Now()
	pub := b.PublicAddr(0)
	var movedTo string
	framework.WaitFor(t, ttl+failoverSlack+clusterDeadline, pub+" served by another node", func() bool {
		for _, n := range b.Nodes[1:] {
			if slices.Contains(b.NodeListed(t, n.Name).Serving, pub) {
				movedTo = n.Name
				return true
			}
		}
		return false
	})
	moved := time.Since(cut)
	<-done // the loop ended at its first error (it must: the connection is closed)
	close(stop)
	var lastOK, firstErr timed
	for _, r := range results {
		if r.err == nil {
			lastOK = r
		} else if firstErr.err == nil {
			firstErr = r
		}
		if r.err == nil && r.start.After(cut.Add(ttl)) {
			t.Errorf("a request sent %v after the cut (lease TTL %v) was answered", r.start.Sub(cut).Round(time.Millisecond), ttl)
		}
	}
	t.Logf("node1 cut off from etcd (lease TTL %v): %d reads; last answered at %v after the cut, first refused at %v (%v); %s served by %s %v after the cut",
		ttl, len(results), lastOK.end.Sub(cut).Round(time.Millisecond), firstErr.end.Sub(cut).Round(time.Millisecond), firstErr.err,
		pub, movedTo, moved.Round(time.Millisecond))
	if firstErr.err == nil || firstErr.end.Sub(cut) > ttl+fenceSlack {
		t.Errorf("node1 fenced %v after the cut: more than its lease TTL %v + %v", firstErr.end.Sub(cut), ttl, fenceSlack)
	}
	// The address answers from the survivor: a client reconnecting
	// reads the file there.
	c2 := mustDialFault(t, pub)
	if got, err := c2.fs.ReadFile(name); err != nil || string(got) != "fenced?" {
		t.Errorf("reading %s through %s on %s: %q, %v", name, pub, movedTo, got, err)
	}
	c2.close()

	b.Hosts[0].Heal(t)
	healed := time.Now()
	bedServing(t, b)
	if e := b.NodeListed(t, "node1").Epoch; e <= epoch {
		t.Errorf("node1's epoch after it rejoined: %d, want more than %d", e, epoch)
	}
	t.Logf("healed: node1 up under the next epoch and serving %s again within %v", pub, time.Since(healed).Round(time.Millisecond))
}

// faultLoad is a client per node, each opening, writing, reading back
// and closing files in a loop through the node's public address, until
// stopped: the requests, their errors and the longest.
type faultLoad struct {
	stop chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []string
	ops  int
	long timed
}

func startLoad(t *testing.T, b *framework.Bed) *faultLoad {
	t.Helper()
	l := &faultLoad{stop: make(chan struct{})}
	stamp := time.Now().UnixNano()
	for i := range b.Nodes {
		c := mustDialFault(t, b.PublicAddr(i))
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer func() {
				if c != nil {
					c.close()
				}
			}()
			for n := 0; ; n++ {
				select {
				case <-l.stop:
					return
				default:
				}
				name := fmt.Sprintf("fault-load-%d-%d-%d.bin", stamp, i, n%8)
				data := bytes.Repeat([]byte{byte(n)}, 4096+n%512)
				r := timed{what: fmt.Sprintf("round %d on %s through node%d", n, name, i+1), start: time.Now()}
				if c == nil {
					// After an error the client logs on again, as a
					// real one does (each failed attempt is an error).
					c, r.err = dialFault(b.PublicAddr(i))
				}
				if r.err == nil {
					fs, cancel := c.with(clusterDeadline)
					r.err = loadRound(fs, name, data)
					cancel()
					if r.err != nil {
						c.close()
						c = nil
					}
				}
				r.end = time.Now()
				if r.err != nil {
					select { // not a busy loop against a node that refuses
					case <-l.stop:
					case <-time.After(100 * time.Millisecond):
					}
				}
				l.mu.Lock()
				l.ops++
				if r.took() > l.long.took() {
					l.long = r
				}
				if r.err != nil {
					l.errs = append(l.errs, r.what+": "+r.err.Error())
				}
				l.mu.Unlock()
			}
		}()
	}
	return l
}

// loadRound opens name (creating or truncating it), writes data, reads it
// back and closes it.
func loadRound(fs *gosmb2.Share, name string, data []byte) error {
	f, err := fs.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		f.Close()
		return err
	}
	got := make([]byte, len(data))
	if _, err := f.ReadAt(got, 0); err != nil {
		f.Close()
		return err
	}
	if !bytes.Equal(got, data) {
		f.Close()
		return fmt.Errorf("read back %d bytes unlike the %d written", len(got), len(data))
	}
	return f.Close()
}

// count returns how many rounds have run.
func (l *faultLoad) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ops
}

// finish stops the load and fails the test on any client error.
func (l *faultLoad) finish(t *testing.T, what string) timed {
	t.Helper()
	close(l.stop)
	l.wg.Wait()
	t.Logf("%s: %d rounds (open, write, read, close) through the three nodes, %d errors; longest round %v (%s)",
		what, l.ops, len(l.errs), l.long.took().Round(time.Millisecond), l.long.what)
	sort.Strings(l.errs)
	for i, e := range l.errs {
		if i == 5 {
			t.Errorf("... and %d more", len(l.errs)-5)
			break
		}
		t.Error(e)
	}
	return l.long
}

// waitRounds waits until the load has run n more rounds.
func (l *faultLoad) waitRounds(t *testing.T, n int, what string) {
	t.Helper()
	target := l.count() + n
	framework.WaitFor(t, clusterDeadline, what, func() bool { return l.count() >= target })
}

// noFence fails the test unless every node is up under the epoch it had.
func noFence(t *testing.T, b *framework.Bed, before map[string]uint64) {
	t.Helper()
	for _, n := range b.Nodes {
		l := b.NodeListed(t, n.Name)
		if l.State != "up" || l.Epoch != before[n.Name] {
			t.Errorf("%s is %s under epoch %d, was up under %d: it fenced", n.Name, l.State, l.Epoch, before[n.Name])
		}
	}
}

// etcdLeader waits for an etcd leader and returns its index.
func etcdLeader(t *testing.T, b *framework.Bed) int {
	t.Helper()
	leader := -1
	framework.WaitFor(t, clusterDeadline, "an etcd leader", func() bool {
		leader = b.EtcdLeader(t)
		return leader >= 0
	})
	return leader
}

// TestBedFaultEtcdLeaderKilled: the etcd leader (of three members) is
// killed while a client per node opens, writes, reads and closes files in
// a loop; the two others elect a new leader, the member is started again
// and rejoins. No node fences (every epoch unchanged) and no client
// request fails. (TestBedEtcdMemberRestart is the same fault without
// clients.)
func TestBedFaultEtcdLeaderKilled(t *testing.T) {
	b := bedFor(t, "local", false)
	bedServing(t, b)
	before := epochs(t, b)
	load := startLoad(t, b)
	load.waitRounds(t, 30, "the load running")
	leader := etcdLeader(t, b)
	m := b.EtcdMembers[leader]
	m.Kill()
	killed := time.Now()
	framework.WaitFor(t, clusterDeadline, "a new etcd leader", func() bool {
		l := b.EtcdLeader(t)
		return l >= 0 && l != leader
	})
	elected := time.Since(killed)
	// Past the nodes' lease TTL with the member down: a lease that was
	// not kept alive through the new leader would have expired.
	framework.WaitFor(t, b.LeaseTTL+clusterDeadline, "the load running past a lease TTL", func() bool {
		return time.Since(killed) > 2*b.LeaseTTL && load.count() > 0
	})
	load.waitRounds(t, 30, "the load running after the election")
	m.Restart(t)
	framework.WaitFor(t, clusterDeadline, "the restarted member back", func() bool {
		return b.EtcdMemberHealthy(t, leader)
	})
	load.waitRounds(t, 30, "the load running after the member rejoined")
	load.finish(t, fmt.Sprintf("etcd leader %s killed (new leader in %v), restarted after %v",
		b.EtcdHosts[leader].Name, elected.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond)))
	noFence(t, b, before)
}

// TestBedFaultEtcdMemberPartitioned: one etcd member, a follower, is cut
// off from the other two members and from every node host (the test
// process, which watches, still reaches it), under the same load as
// above: the nodes' etcd calls that reach it hang, the others go on
// through the two members that have a quorum. No node fences, no client
// request fails. After healing the member catches up. (The leader
// partitioned is the leader lost: TestBedFaultEtcdLeaderKilled.)
func TestBedFaultEtcdMemberPartitioned(t *testing.T) {
	b := bedFor(t, "local", false)
	bedServing(t, b)
	before := epochs(t, b)
	load := startLoad(t, b)
	load.waitRounds(t, 30, "the load running")
	leader := etcdLeader(t, b)
	member := (leader + 1) % len(b.EtcdHosts)
	h := b.EtcdHosts[member]
	var others []*framework.Host
	for i, e := range b.EtcdHosts {
		if i != member {
			others = append(others, e)
		}
	}
	h.CutOff(t, append(others, b.Hosts...)...)
	cut := time.Now()
	framework.WaitFor(t, b.LeaseTTL+clusterDeadline, "the load running past two lease TTLs", func() bool {
		return time.Since(cut) > 2*b.LeaseTTL
	})
	load.waitRounds(t, 30, "the load running with the member partitioned")
	noFence(t, b, before)
	h.Heal(t)
	framework.WaitFor(t, clusterDeadline, "the partitioned member back", func() bool {
		return b.EtcdMemberHealthy(t, member)
	})
	load.waitRounds(t, 30, "the load running after healing")
	load.finish(t, fmt.Sprintf("etcd member %s (a follower) partitioned for %v", h.Name, time.Since(cut).Round(time.Millisecond)))
	noFence(t, b, before)
}
