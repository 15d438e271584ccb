package mesh_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/node/mesh"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// cluster starts nodes on an in-memory network, each serving the gRPC
// health service (SERVING unless slow), and returns the mesh of the
// first.
func cluster(t *testing.T, names ...string) (*mesh.Memory, *mesh.Mesh) {
	t.Helper()
	mem := mesh.NewMemory()
	for _, name := range names {
		srv := grpc.NewServer()
		healthpb.RegisterHealthServer(srv, health.NewServer())
		go srv.Serve(mem.Listen(name))
		t.Cleanup(srv.Stop)
	}
	m := mesh.New(names[0], mem.Nodes, mem.Dial, nil)
	t.Cleanup(m.Close)
	return mem, m
}

func check(ctx context.Context, cc grpc.ClientConnInterface) (healthpb.HealthCheckResponse_ServingStatus, error) {
	resp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	return resp.GetStatus(), err
}

func TestBroadcastAsksEveryOtherNode(t *testing.T) {
	_, m := cluster(t, "a", "b", "c", "d")
	var asked []string
	for a := range mesh.Broadcast(context.Background(), m, nil, time.Second, check) {
		if a.Err != nil || a.Resp != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("%s: %v, %v", a.Node, a.Resp, a.Err)
		}
		asked = append(asked, a.Node)
	}
	slices.Sort(asked)
	if !slices.Equal(asked, []string{"b", "c", "d"}) {
		t.Fatalf("asked %v, want the other nodes b, c, d", asked)
	}
	// To some nodes only; one not live answers ErrGone.
	var got []mesh.Answer[healthpb.HealthCheckResponse_ServingStatus]
	for a := range mesh.Broadcast(context.Background(), m, []string{"c", "x"}, time.Second, check) {
		got = append(got, a)
	}
	slices.SortFunc(got, func(x, y mesh.Answer[healthpb.HealthCheckResponse_ServingStatus]) int {
		return strings.Compare(x.Node, y.Node)
	})
	if len(got) != 2 || got[0].Node != "c" || got[0].Err != nil || !errors.Is(got[1].Err, mesh.ErrGone) {
		t.Fatalf("asking c and x: %+v, want c's answer and x gone", got)
	}
}

// TestBroadcastStopsEarly: a caller that stops at the first answer has
// the calls still waiting cancelled.
func TestBroadcastStopsEarly(t *testing.T) {
	_, m := cluster(t, "a", "b", "c")
	cancelled := make(chan error, 2)
	first := true
	for range mesh.Broadcast(context.Background(), m, nil, 0, func(ctx context.Context, cc grpc.ClientConnInterface) (bool, error) {
		if first {
			first = false // the first call answers at once, the other waits
			return true, nil
		}
		<-ctx.Done()
		cancelled <- ctx.Err()
		return false, ctx.Err()
	}) {
		break
	}
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Fatalf("the call not answered ended with %v, want it cancelled", err)
	}
}

// TestNodeGoneEndsCalls: NodeGone closes the node's connection, ending
// the calls on it, and the next call dials again.
func TestNodeGoneEndsCalls(t *testing.T) {
	_, m := cluster(t, "a", "b")
	cc, err := m.Node("b")
	if err != nil {
		t.Fatal(err)
	}
	watch, err := healthpb.NewHealthClient(cc).Watch(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := watch.Recv(); err != nil {
		t.Fatal(err)
	}
	m.NodeGone("b")
	if _, err := watch.Recv(); err == nil {
		t.Fatal("a stream to a node gone goes on")
	}
	cc2, err := m.Node("b")
	if err != nil || cc2 == cc {
		t.Fatalf("after NodeGone: %v, %v; want a new connection", cc2, err)
	}
	if _, err := check(context.Background(), cc2); err != nil {
		t.Fatal(err)
	}
}
