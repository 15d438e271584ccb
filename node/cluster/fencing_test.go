package cluster

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
)

// joinAgent joins node e.name with e.token through endpoints and leaves
// when the test ends.
func (e *env) joinAgent(eps []string, srv *server.Server, control *server.Control) *Agent {
	e.t.Helper()
	a, err := New(Config{
		Endpoints: eps, Name: e.name, JoinToken: e.token, Sealer: e.sealer,
		LeaseTTL: 2 * time.Second, SyncInterval: 50 * time.Millisecond,
	}, Node{Server: srv, Control: control, Shares: e.shares, Users: e.users})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := a.Join(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { a.Leave(context.Background()) })
	return a
}

// TestEpochGuard: once the node's epoch in etcd is another's, a write of
// the node is not applied, and the incarnation ends as superseded.
func TestEpochGuard(t *testing.T) {
	e := newEnv(t, "guard")
	e.token = e.admit(e.name, e.addr)
	a := e.joinAgent(endpoints(t), e.srv, e.control)
	ctx := context.Background()
	if err := a.guarded(ctx, clientv3.OpPut("/test/guard/ok", "1")); err != nil || !e.exists("/test/guard/ok") {
		t.Fatalf("a write under the node's own epoch: %v", err)
	}
	if _, err := e.cli.Put(ctx, statev1.NodeEpochKey(e.name), "2"); err != nil {
		t.Fatal(err)
	}
	err := a.guarded(ctx, clientv3.OpPut("/test/guard/stale", "1"), clientv3.OpDelete("/test/guard/ok"))
	if !errors.Is(err, ErrSuperseded) {
		t.Errorf("a write under a superseded epoch: %v, want ErrSuperseded", err)
	}
	if e.exists("/test/guard/stale") || !e.exists("/test/guard/ok") {
		t.Error("a write under a superseded epoch was applied")
	}
	f := a.Fence()
	if f.Valid() || !errors.Is(f.Err(), ErrSuperseded) || e.control.Admission() != server.AdmitNothing {
		t.Errorf("after the guard failed: valid %v, %v, admission %d", f.Valid(), f.Err(), e.control.Admission())
	}
}

// TestSupersededIncarnationStops: a second agent joining under the same
// name takes the next epoch; the first stops serving at once (its
// connections end, Run returns ErrSuperseded) and never rewrites the
// second's live record.
func TestSupersededIncarnationStops(t *testing.T) {
	e := newEnv(t, "twice")
	e.addShare("twiceshare")
	e.addUser("erin", "Erin-1")
	old, done := e.start()
	c := servertest.Connect(t, e.addr, "erin", "Erin-1", "twiceshare", smb2.Dialect311)
	if _, err := c.Create("f"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the old incarnation's open published", func() bool { return len(e.keys(statev1.NodeOpensPrefix(e.name))) == 1 })

	e2 := newEnv(t, "twice")
	e2.shares, e2.users = e.shares, e.users
	e2.token = e.token
	newer := e2.joinAgent(endpoints(t), e2.srv, e2.control)
	if old.Epoch() != 1 || newer.Epoch() != 2 {
		t.Fatalf("epochs %d and %d", old.Epoch(), newer.Epoch())
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrSuperseded) {
			t.Errorf("Run of the superseded agent: %v", err)
		}
	case <-time.After(waitDeadline):
		t.Fatal("the superseded agent still runs")
	}
	if err := c.WaitClosed(); err != nil {
		t.Errorf("the superseded node's connection: %v", err)
	}
	if old.Fence().Valid() || e.control.Admission() != server.AdmitNothing || e.srv.AcceptsConnections() {
		t.Error("the superseded node still admits work")
	}
	if !newer.Fence().Valid() {
		t.Error("the newer incarnation is fenced")
	}
	live := &statev1.NodeLiveRecord{}
	r, err := e.cli.Get(context.Background(), statev1.NodeLiveKey(e.name))
	if err != nil || len(r.Kvs) != 1 || proto.Unmarshal(r.Kvs[0].Value, live) != nil || live.Epoch != 2 {
		t.Errorf("live record after the old incarnation stopped: %v %v", live, err)
	}
	if n := len(e.keys(statev1.NodeOpensPrefix(e.name))); n != 0 {
		t.Errorf("%d opens of the old incarnation left", n)
	}
}

// keys lists the keys under prefix.
func (e *env) keys(prefix string) []string {
	e.t.Helper()
	r, err := e.cli.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, kv := range r.Kvs {
		out = append(out, string(kv.Key))
	}
	return out
}

// TestFenceWhenEtcdDoesNotAnswer: with etcd unreachable behind a proxy
// that stops forwarding (connections stay open, nothing answers, as with
// a stopped etcd), the node ends its connections and refuses new ones
// within its lease TTL (plus a second of slack); once etcd answers again it joins with the next
// epoch and serves.
func TestFenceWhenEtcdDoesNotAnswer(t *testing.T) {
	e := newEnv(t, "frozen")
	e.addShare("frozenshare")
	e.addUser("fred", "Fred-1")
	e.token = e.admit(e.name, e.addr)
	p := newFreezer(t, endpoints(t)[0])
	a := e.joinAgent([]string{"http://" + p.addr()}, e.srv, e.control)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	c := servertest.Connect(t, e.addr, "fred", "Fred-1", "frozenshare", smb2.Dialect311)
	if _, err := c.Create("f"); err != nil {
		t.Fatal(err)
	}
	ttl := 2 * time.Second
	c.Timeout = ttl + waitDeadline
	first := a.Fence()
	stopped := time.Now()
	p.freeze()
	if err := c.WaitClosed(); err != nil {
		t.Fatalf("the connection of a node whose etcd does not answer: %v", err)
	}
	fenced := time.Since(stopped)
	t.Logf("connection ended %v after etcd stopped answering (lease TTL %v)", fenced.Round(time.Millisecond), ttl)
	// The node stops at the latest TTL - leaseMargin after the freeze; the
	// slack covers scheduling on a loaded machine.
	if slack := time.Second; fenced > ttl+slack {
		t.Errorf("fenced %v after etcd stopped answering, more than the lease TTL %v + %v", fenced, ttl, slack)
	}
	if first.Valid() || !errors.Is(first.Err(), errLeaseLost) || e.control.Admission() != server.AdmitNothing {
		t.Errorf("fenced node: valid %v, %v, admission %d", first.Valid(), first.Err(), e.control.Admission())
	}
	if refused(t, e.addr) == nil {
		t.Error("a fenced node accepted a new session")
	}

	p.thaw()
	waitFor(t, "the node to join again", func() bool { return a.Fence().Valid() && e.control.Admission() == server.AdmitAll })
	if a.Epoch() != 2 {
		t.Errorf("epoch %d after joining again, want 2", a.Epoch())
	}
	c = servertest.Connect(t, e.addr, "fred", "Fred-1", "frozenshare", smb2.Dialect311)
	if _, err := c.Create("g"); err != nil {
		t.Errorf("CREATE after joining again: %v", err)
	}
}

// refused tries a new session on addr; nil means it was accepted.
func refused(t *testing.T, addr string) error {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	nc.Close()
	c := servertest.Dial(t, addr)
	defer c.Close()
	if err := c.Negotiate(smb2.Dialect311); err != nil {
		return err
	}
	return c.SessionSetup("fred", "Fred-1")
}

// freezer is a TCP proxy to etcd that can stop forwarding: its
// connections stay open and nothing is answered, as when etcd is stopped.
type freezer struct {
	l      net.Listener
	target string
	mu     sync.Mutex
	thawed chan struct{} // closed while forwarding
}

func newFreezer(t *testing.T, target string) *freezer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezer{l: l, target: target, thawed: make(chan struct{})}
	close(p.thawed)
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			u, err := dialEndpoint(p.target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, u)
			mu.Unlock()
			go p.pipe(u, c)
			go p.pipe(c, u)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		p.thaw()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return p
}

func (p *freezer) addr() string { return p.l.Addr().String() }

// dialEndpoint connects to an etcd client URL: http://HOST:PORT, or
// unix:///PATH as the embedded etcd serves.
func dialEndpoint(endpoint string) (net.Conn, error) {
	if path, ok := strings.CutPrefix(endpoint, "unix://"); ok {
		return net.Dial("unix", path)
	}
	return net.Dial("tcp", strings.TrimPrefix(endpoint, "http://"))
}

func (p *freezer) gate() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.thawed
}

func (p *freezer) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.thawed:
		p.thawed = make(chan struct{})
	default:
	}
}

func (p *freezer) thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.thawed:
	default:
		close(p.thawed)
	}
}

// pipe copies src to dst, holding what it read while frozen.
func (p *freezer) pipe(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			<-p.gate()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				src.Close()
			}
			return
		}
	}
}
