package peer

import (
	"context"
	"fmt"
	"testing"

	"github.com/smbcluster/smbcluster/node/mesh"
	"github.com/smbcluster/smbcluster/node/state"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
	"google.golang.org/grpc"
)

// memNodes starts n routers, n1 … nn, on an in-memory network, n1 owning
// every shard.
func memNodes(t *testing.T, n int) []*Router {
	t.Helper()
	mem := mesh.NewMemory()
	peers := map[string]string{}
	var routers []*Router
	for i := range n {
		name := fmt.Sprintf("n%d", i+1)
		l := mem.Listen(name)
		peers[name] = l.Addr().String()
		r := newRouter(t, &staticRoutes{self: name, owner: "n1", peers: peers}, mem.Dial)
		srv := grpc.NewServer()
		peerv1.RegisterPeerServiceServer(srv, r.Service())
		go srv.Serve(l)
		t.Cleanup(func() { srv.Stop(); r.Close() })
		routers = append(routers, r)
	}
	return routers
}

// sent is the RPCs the routers sent, all together (Stats.Sent).
func sent(routers []*Router) uint64 {
	var n uint64
	for _, r := range routers {
		n += r.Stats().Sent()
	}
	return n
}

// fileCosts are the RPCs of one operation of each class on a cluster of n
// nodes, asked from a node that owns no shard (issue 24 part 6,
// bench/README.md).
type fileCosts struct {
	ownOpenClose, remoteOpenClose, hasOpenBelow, takeDurable, closeApp, ackElsewhere uint64
}

func measureFiles(t *testing.T, n int) fileCosts {
	rs := memNodes(t, n)
	owner, asker := rs[0], rs[n-1]
	asker.maxDelegs = 0 // the undelegated path: an open's Admit and a close's Remove
	ctx := context.Background()
	cost := func(op func()) uint64 {
		before := sent(rs)
		op()
		return sent(rs) - before
	}
	var c fileCosts
	openClose := func(r *Router, id uint64) func() {
		return func() {
			o := open(state.FileKey{Volume: 7, FileID: id}, rw, shareAll, newBreaks())
			if _, err := r.Admit(ctx, o, state.Request{}, nil); err != nil {
				t.Fatal(err)
			}
			r.Remove(o)
		}
	}
	c.ownOpenClose = cost(openClose(owner, 1))
	c.remoteOpenClose = cost(openClose(asker, 2))
	c.hasOpenBelow = cost(func() {
		if asker.HasOpenBelow("dir") {
			t.Fatal("an open below dir, with none")
		}
	})
	c.takeDurable = cost(func() {
		if _, _, err := asker.TakeDurable(ctx, state.DurableQuery{FileID: 99}); err == nil {
			t.Fatal("a durable open taken, with none")
		}
	})
	c.closeApp = cost(func() { asker.CloseAppInstance(ctx, [16]byte{1}, "share", "alice") })
	c.ackElsewhere = cost(func() { asker.AckLease(state.LeaseID{Key: [16]byte{5}}, 0) })
	return c
}

// TestFileFanouts measures the RPCs of the file operations that ask
// every node, and of an open and close, at 3, 8 and 16 nodes.
func TestFileFanouts(t *testing.T) {
	for _, n := range []int{3, 8, 16} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			c := measureFiles(t, n)
			t.Logf("N=%d: %+v", n, c)
			if c.ownOpenClose != 0 || c.remoteOpenClose != 2 {
				t.Errorf("N=%d: open+close cost %d RPCs on the owner and %d elsewhere, want 0 and 2", n, c.ownOpenClose, c.remoteOpenClose)
			}
		})
	}
}
