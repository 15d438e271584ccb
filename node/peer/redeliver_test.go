package peer

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/smbcluster/smbcluster/node/state"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
)

// cut makes a node's peer service refuse Deliver while on, as a node cut
// off from the others would not receive it, and counts the refusals.
type cut struct {
	on      atomic.Bool
	refused atomic.Int64
}

func (c *cut) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if c.on.Load() && strings.HasSuffix(info.FullMethod, "/Deliver") {
		c.refused.Add(1)
		return nil, status.Error(codes.Unavailable, "cut off")
	}
	return h(ctx, req)
}

// twoNodesCut is twoNodes with b's Deliver behind c.
func twoNodesCut(t *testing.T, c *cut) (a, b *Router) {
	t.Helper()
	peers := map[string]string{}
	var routers []*Router
	for _, name := range []string{"a", "b"} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		peers[name] = l.Addr().String()
		rt := &staticRoutes{self: name, owner: "a", peers: peers}
		r := newRouter(t, rt, func(addr string) (*grpc.ClientConn, error) {
			return grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		})
		var opts []grpc.ServerOption
		if name == "b" {
			opts = append(opts, grpc.UnaryInterceptor(c.intercept))
		}
		srv := grpc.NewServer(opts...)
		peerv1.RegisterPeerServiceServer(srv, r.Service())
		go srv.Serve(l)
		t.Cleanup(func() { srv.Stop(); r.Close() })
		routers = append(routers, r)
	}
	return routers[0], routers[1]
}

// TestBreakSentAgainToANodeCutOff: a break the holder's node did not
// receive (cut off from the owner, still a member) is not taken as
// acknowledged: it is sent again until it arrives, the conflicting open
// waits for the acknowledgment, and the holder keeps what it
// acknowledged. Before, the first failed delivery ended the break and the
// open went on while the client still cached writes under its lease.
func TestBreakSentAgainToANodeCutOff(t *testing.T) {
	var c cut
	a, b := twoNodesCut(t, &c)
	key := state.FileKey{Volume: 9, FileID: 1}
	ctx := context.Background()
	br := newBreaks()
	ob := open(key, rw, shareAll, br)
	if _, err := b.Admit(ctx, ob, state.Request{Oplock: state.OplockBatch}, nil); err != nil {
		t.Fatal(err)
	}
	c.on.Store(true)
	done := make(chan error, 1)
	go func() {
		_, err := a.Admit(ctx, open(key, rw, shareAll, newBreaks()), state.Request{}, nil)
		done <- err
	}()
	// Refused twice: sent again after the first failure.
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for c.refused.Load() < 2 {
		select {
		case err := <-done:
			t.Fatalf("the conflicting open went on (%v) while the break had not reached the holder", err)
		case <-tick.C:
		}
	}
	select {
	case err := <-done:
		t.Fatalf("the conflicting open went on (%v) while the break had not reached the holder", err)
	default:
	}
	c.on.Store(false)
	if to := <-br.oplock; to != state.OplockLevelII {
		t.Fatalf("break to %#x, want level II", to)
	}
	if !b.Ack(ob, state.OplockLevelII) {
		t.Fatal("the acknowledgment was refused")
	}
	if err := <-done; err != nil {
		t.Fatalf("the conflicting open after the acknowledgment: %v", err)
	}
	if got := b.Oplock(ob); got != state.OplockLevelII {
		t.Fatalf("oplock after the break: %#x, want level II (acknowledged, not expired)", got)
	}
}
