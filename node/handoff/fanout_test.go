package handoff_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/smbcluster/smbcluster/node/handoff"
	"github.com/smbcluster/smbcluster/node/mesh"
	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
	"google.golang.org/grpc"
)

// counted is a cluster of n nodes that count every RPC they make to one
// another (unary calls and streams opened, each as it starts, answered or
// not), all nodes together:
// what one SMB operation costs in node-to-node calls, with no clock
// (issue 24 part 6, bench/README.md).
type counted struct {
	nodes []*servertest.Server
	peers []*handoff.Peers
	names []string
	rpcs  atomic.Uint64
}

func newCounted(t *testing.T, n int) *counted {
	t.Helper()
	c := &counted{}
	dir := t.TempDir()
	mem := mesh.NewMemory()
	addrs := map[string]string{}
	var ls []net.Listener
	for i := range n {
		l := mem.Listen(fmt.Sprintf("node%d", i+1))
		ls = append(ls, l)
		addrs[fmt.Sprintf("node%d", i+1)] = l.Addr().String()
	}
	mem.DialOptions = []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			c.rpcs.Add(1)
			return invoker(ctx, method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			c.rpcs.Add(1)
			return streamer(ctx, desc, cc, method, opts...)
		}),
	}
	for i := range n {
		self := fmt.Sprintf("node%d", i+1)
		m := mesh.New(self, func() map[string]string { return addrs }, mem.Dial, nil)
		t.Cleanup(m.Close)
		peers := handoff.New(m, nil)
		g := grpc.NewServer()
		peerv1.RegisterSessionServiceServer(g, peers.Service())
		go g.Serve(ls[i])
		t.Cleanup(g.Stop)
		s := servertest.Start(t, servertest.Options{DiskRoot: dir, Configure: func(cfg *server.Config) {
			cfg.SessionPeers = peers
			cfg.SessionTag = handoff.Tag(self)
		}})
		peers.Attach(s.Server)
		c.nodes, c.peers, c.names = append(c.nodes, s), append(c.peers, peers), append(c.names, self)
	}
	return c
}

// cost runs op and returns the RPCs the cluster's nodes received meanwhile.
func (c *counted) cost(op func()) uint64 {
	before := c.rpcs.Load()
	op()
	return c.rpcs.Load() - before
}

// leaseOpen is a CREATE of name asking for lease state st under key.
func leaseOpen(name string, key byte, st uint32) *smb2.CreateRequest {
	req := servertest.CreateRequest(name)
	req.RequestedOplockLevel = smb2.OplockLevelLease
	lr := smb2.LeaseRequest{Key: [16]byte{key}, State: st, Version: 2, Epoch: 1}
	req.Contexts = []smb2.CreateContext{{Name: "RqLs", Data: lr.Append(nil)}}
	return req
}

// sessionCosts measures, on a cluster of n nodes, the RPCs of a channel
// bind through another node than the session's, of a SESSION_SETUP naming
// a previous session of another node, and of two lease breaks of a client
// whose connections are all on the breaking node.
func sessionCosts(t *testing.T, n int) (bind, previous, firstBreak, nextBreak uint64) {
	c := newCounted(t, n)
	home, last := c.nodes[0], c.nodes[n-1]
	guid := [16]byte{0xb1, byte(n)}
	first := connectAs(t, home.Addr, guid, servertest.Alice, servertest.AlicePassword)

	second := servertest.Dial(t, last.Addr)
	second.ClientGUID = guid
	if err := second.Negotiate(smb2.Dialect311); err != nil {
		t.Fatal(err)
	}
	bind = c.cost(func() {
		if err := second.Bind(first.Session, servertest.Alice, servertest.AlicePassword); err != nil {
			t.Fatalf("bind through node%d: %v", n, err)
		}
	})

	again := servertest.Dial(t, last.Addr)
	again.ClientGUID = [16]byte{0xb2, byte(n)}
	if err := again.Negotiate(smb2.Dialect311); err != nil {
		t.Fatal(err)
	}
	old := connectAs(t, c.nodes[1%n].Addr, again.ClientGUID, servertest.Alice, servertest.AlicePassword)
	again.PreviousSessionID = old.Session.ID
	previous = c.cost(func() {
		if err := again.SessionSetup(servertest.Alice, servertest.AlicePassword); err != nil {
			t.Fatal(err)
		}
	})

	// A client holding a read lease on the home node; another client's
	// open for overwrite there breaks it, twice.
	holder := connectAs(t, home.Addr, [16]byte{0xb3, byte(n)}, servertest.Alice, servertest.AlicePassword)
	other := connectAs(t, home.Addr, [16]byte{0xb4, byte(n)}, servertest.Alice, servertest.AlicePassword)
	breakOnce := func(name string) uint64 {
		return c.cost(func() { leaseBroken(t, holder, other, holder, name) })
	}
	firstBreak = breakOnce("brk1.dat")
	nextBreak = breakOnce("brk2.dat")
	return bind, previous, firstBreak, nextBreak
}

// TestSessionFanouts: a channel bind, a reconnect naming a previous
// session and a lease break each cost the same few RPCs at 3, 8 and 16
// nodes: the session's node is known from its id, and that no other node
// holds an older connection of the client is remembered.
func TestSessionFanouts(t *testing.T) {
	for _, n := range []int{3, 8, 16} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			bind, prev, brk1, brk2 := sessionCosts(t, n)
			t.Logf("N=%d: bind %d, previous session %d, first lease break %d, next lease break %d RPCs", n, bind, prev, brk1, brk2)
			if bind > 2 { // Find at the session's node, then its Relay
				t.Errorf("N=%d: a bind cost %d RPCs, want at most 2", n, bind)
			}
			if prev > 1 {
				t.Errorf("N=%d: a previous session's end cost %d RPCs, want at most 1", n, prev)
			}
			if brk2 != 0 {
				t.Errorf("N=%d: a second lease break of the client cost %d RPCs, want 0", n, brk2)
			}
		})
	}
}

// TestBindFollowsMovedSession: a session that moved with its connection
// to another node is found through the node that made it, which sends
// the asker on: a bind through a third node asks two nodes, not all.
func TestBindFollowsMovedSession(t *testing.T) {
	const n = 8
	c := newCounted(t, n)
	home, maker, arrival := c.nodes[0], c.nodes[n-1], c.nodes[1]
	first := servertest.Connect(t, home.Addr, servertest.Alice, servertest.AlicePassword, servertest.DiskShareName, smb2.Dialect311)
	mover := servertest.Connect(t, maker.Addr, servertest.Bob, servertest.BobPassword, servertest.DiskShareName, smb2.Dialect311)
	moved := mover.Session
	if err := mover.Bind(first.Session, servertest.Alice, servertest.AlicePassword); err != nil {
		t.Fatal(err)
	}
	if !home.HoldsSession(moved.ID) || maker.HoldsSession(moved.ID) {
		t.Fatalf("the connection's own session did not move to the home node")
	}
	third := servertest.Dial(t, arrival.Addr)
	third.ClientGUID = mover.ClientGUID
	if err := third.Negotiate(smb2.Dialect311); err != nil {
		t.Fatal(err)
	}
	got := c.cost(func() {
		if err := third.Bind(moved, servertest.Bob, servertest.BobPassword); err != nil {
			t.Fatalf("bind of the moved session through a third node: %v", err)
		}
	})
	if got != 3 { // Find at its maker, Find at the home node, Relay
		t.Errorf("a bind of a moved session cost %d RPCs, want 3", got)
	}
	third.Use(moved, mover.TreeID)
	if err := third.Echo(); err != nil {
		t.Fatal(err)
	}
}

// TestEndPreviousAsksTheTaggedNode: a previous session is looked for at
// the node its id's tag names only; an id with no tag, or the tag of no
// live node, is looked for everywhere, as before tags; an id of this
// node's own that it did not hand on is looked for nowhere.
func TestEndPreviousAsksTheTaggedNode(t *testing.T) {
	const n = 8
	c := newCounted(t, n)
	self := c.peers[0]
	noNode := uint16(1)
	for slices.ContainsFunc(c.names, func(name string) bool { return handoff.Tag(name) == noNode }) {
		noNode++
	}
	for _, tc := range []struct {
		name string
		tag  uint16
		want uint64
	}{
		{"another node's", handoff.Tag(c.names[3]), 1},
		{"untagged", 0, n - 1},
		{"no live node's", noNode, n - 1},
		{"its own", handoff.Tag(c.names[0]), 0},
	} {
		id := uint64(tc.tag)<<48 | 0x1234
		got := c.cost(func() { self.EndPrevious(context.Background(), id, servertest.Alice, 1) })
		if got != tc.want {
			t.Errorf("%s session id: %d RPCs, want %d", tc.name, got, tc.want)
		}
	}
}

// TestLeaseBreakOnOldestConnection: a lease break goes out on the
// client's oldest connection in the cluster, on another node while that
// one lives; once it is gone the next break goes out here, and the one
// after that asks no node (no connection made since is older).
func TestLeaseBreakOnOldestConnection(t *testing.T) {
	const n = 3
	c := newCounted(t, n)
	guid := [16]byte{0xc1}
	older := connectAs(t, c.nodes[1].Addr, guid, servertest.Alice, servertest.AlicePassword)
	holder := connectAs(t, c.nodes[0].Addr, guid, servertest.Alice, servertest.AlicePassword)
	other := connectAs(t, c.nodes[0].Addr, [16]byte{0xc2}, servertest.Alice, servertest.AlicePassword)
	breakOn := func(name string, on *servertest.Conn) uint64 {
		t.Helper()
		return c.cost(func() { leaseBroken(t, holder, other, on, name) })
	}
	if got := breakOn("old1.dat", older); got != n { // OldestConnection at each other node, SendLeaseBreak
		t.Errorf("a break on the older connection elsewhere cost %d RPCs, want %d", got, n)
	}
	if got := breakOn("old2.dat", older); got != n {
		t.Errorf("the second break on the older connection elsewhere cost %d RPCs, want %d", got, n)
	}
	older.Close()
	waitFor(t, "the older connection's end", func() bool {
		_, held := c.nodes[1].OldestClientConn(guid)
		return !held
	})
	if got := breakOn("new1.dat", holder); got != n-1 {
		t.Errorf("a break once the older connection is gone cost %d RPCs, want %d", got, n-1)
	}
	connectAs(t, c.nodes[2].Addr, guid, servertest.Alice, servertest.AlicePassword) // younger: changes nothing
	if got := breakOn("new2.dat", holder); got != 0 {
		t.Errorf("the next break cost %d RPCs, want 0", got)
	}
}

// leaseBroken has holder open name with a read lease and other open it
// for overwrite, which breaks the lease to none; the break must arrive on
// on (holder's connection, or an older one of its client's). holder then
// closes the file.
func leaseBroken(t *testing.T, holder, other, on *servertest.Conn, name string) {
	t.Helper()
	h, err := holder.CreateWith(leaseOpen(name, 1, smb2.LeaseRead))
	if err != nil {
		t.Fatal(err)
	}
	req := servertest.CreateRequest(name)
	req.CreateDisposition = smb2.FileOverwriteIf
	if _, err := other.CreateWith(req); err != nil {
		t.Fatal(err)
	}
	hs, pdus, err := on.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var brk smb2.LeaseBreakNotification
	if hs[0].Command != smb2.CmdOplockBreak || brk.Decode(pdus[0]) != nil || brk.LeaseKey != [16]byte{1} || brk.NewLeaseState != 0 {
		t.Fatalf("got %v, want the lease break to none", hs[0].Command)
	}
	if err := holder.CloseFile(h.FileID); err != nil {
		t.Fatal(err)
	}
}
