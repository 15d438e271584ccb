package service

import (
	"testing"
	"time"

	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

// join does what a node agent does when it joins (keys.go): a lease, the
// epoch counter and the live record. It returns the lease.
func (e *env) join(name string, epoch uint64) clientv3.LeaseID {
	e.t.Helper()
	ctx := e.t.Context()
	lease, err := etcd.Grant(ctx, 30)
	if err != nil {
		e.t.Fatal(err)
	}
	live, _ := proto.Marshal(&statev1.NodeLiveRecord{Name: name, Epoch: epoch, Addresses: []string{"127.0.0.9:4450"}, Version: "v-test"})
	_, err = etcd.Txn(ctx).Then(
		clientv3.OpPut(statev1.NodeEpochKey(name), "1"),
		clientv3.OpPut(statev1.NodeLiveKey(name), string(live), clientv3.WithLease(lease.ID)),
	).Commit()
	if err != nil {
		e.t.Fatal(err)
	}
	return lease.ID
}

// publishChannel writes node's channel record for session id.
func (e *env) publishChannel(node string, id uint64, addrs ...string) {
	e.t.Helper()
	b, _ := proto.Marshal(&statev1.ChannelRecord{SessionId: id, Node: node, ClientAddresses: addrs})
	if _, err := etcd.Put(e.t.Context(), statev1.ChannelKey(node, id), string(b)); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) getNode(name string) *adminv1.Node {
	e.t.Helper()
	resp, err := e.nodes.GetNode(e.ctx, &adminv1.GetNodeRequest{Name: name})
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.Node
}

func TestNodeAdmitJoinDown(t *testing.T) {
	e := newEnv(t)
	added, err := e.nodes.AddNode(e.ctx, &adminv1.AddNodeRequest{Name: "n1", Addresses: []string{"127.0.0.1", "127.0.0.1:445", "[::1]:4450"}})
	if err != nil {
		t.Fatal(err)
	}
	n := added.Node
	if n.State != adminv1.NodeState_NODE_STATE_ADMITTED || len(n.Addresses) != 2 || n.Addresses[0] != "127.0.0.1:445" || n.Addresses[1] != "[::1]:4450" {
		t.Errorf("added %v", n)
	}
	rec := &statev1.NodeRecord{}
	if _, err := e.st.Get(e.ctx, statev1.NodeKey("n1"), rec); err != nil {
		t.Fatal(err)
	}
	if !statev1.CheckJoinToken(added.JoinToken, rec.JoinTokenSha256) || proto.Equal(rec, &statev1.NodeRecord{}) {
		t.Error("stored hash does not check the returned join token")
	}
	_, err = e.nodes.AddNode(e.ctx, &adminv1.AddNodeRequest{Name: "n1"})
	wantCode(t, err, codes.AlreadyExists, "admit n1 again")

	lease := e.join("n1", 1)
	if n := e.getNode("n1"); n.State != adminv1.NodeState_NODE_STATE_UP || n.Epoch != 1 || n.Version != "v-test" || len(n.Serving) != 1 || n.Serving[0] != "127.0.0.9:4450" {
		t.Errorf("joined node %v", n)
	}
	_, err = e.nodes.RemoveNode(e.ctx, &adminv1.RemoveNodeRequest{Name: "n1"})
	wantCode(t, err, codes.FailedPrecondition, "remove an up node")

	if _, err := etcd.Revoke(e.ctx, lease); err != nil { // as when the lease expires
		t.Fatal(err)
	}
	if n := e.getNode("n1"); n.State != adminv1.NodeState_NODE_STATE_DOWN || n.Epoch != 1 {
		t.Errorf("node after its lease went: %v", n)
	}
	if _, err := e.nodes.AddNode(e.ctx, &adminv1.AddNodeRequest{Name: "n0"}); err != nil {
		t.Fatal(err)
	}
	list, err := e.nodes.ListNodes(e.ctx, &adminv1.ListNodesRequest{})
	if err != nil || len(list.Nodes) != 2 || list.Nodes[0].Name != "n0" || list.Nodes[1].State != adminv1.NodeState_NODE_STATE_DOWN {
		t.Errorf("ListNodes = %v, %v", list, err)
	}
	if _, err := e.nodes.RemoveNode(e.ctx, &adminv1.RemoveNodeRequest{Name: "n1"}); err != nil {
		t.Fatal(err)
	}
	_, err = e.nodes.GetNode(e.ctx, &adminv1.GetNodeRequest{Name: "n1"})
	wantCode(t, err, codes.NotFound, "get removed node")
	_, err = e.nodes.RemoveNode(e.ctx, &adminv1.RemoveNodeRequest{Name: "n1"})
	wantCode(t, err, codes.NotFound, "remove removed node")
}

func TestNodeInvalidInput(t *testing.T) {
	e := newEnv(t)
	bad := []*adminv1.AddNodeRequest{
		{Name: ""}, {Name: "N1"}, {Name: "n_1"}, {Name: "-n"}, {Name: "n-"},
		{Name: "n1", Addresses: []string{"0.0.0.0"}},
		{Name: "n1", Addresses: []string{"10.0.0.1:0"}},
		{Name: "n1", Addresses: []string{"10.0.0.1:70000"}},
		{Name: "n1", Addresses: []string{"bad host:445"}},
		{Name: "n1", Addresses: []string{"224.0.0.1"}},
		{Name: "n1", Addresses: []string{""}},
	}
	for _, r := range bad {
		_, err := e.nodes.AddNode(e.ctx, r)
		wantCode(t, err, codes.InvalidArgument, "add "+r.String())
	}
	if n := e.count(statev1.NodesPrefix); n != 0 {
		t.Errorf("%d nodes written from invalid input", n)
	}
	_, err := e.nodes.DrainNode(e.ctx, &adminv1.DrainNodeRequest{Name: "n1", Timeout: durationpb.New(-time.Second)})
	wantCode(t, err, codes.InvalidArgument, "negative drain timeout")
	_, err = e.nodes.DrainNode(e.ctx, &adminv1.DrainNodeRequest{Name: "n1"})
	wantCode(t, err, codes.NotFound, "drain a node never admitted")
}

func TestDrainNodeWaitsForSessions(t *testing.T) {
	e := newEnv(t)
	if _, err := e.nodes.AddNode(e.ctx, &adminv1.AddNodeRequest{Name: "n1"}); err != nil {
		t.Fatal(err)
	}
	e.join("n1", 1)
	e.publishChannel("n1", 7, "192.0.2.1:50000")
	e.publishChannel("n10", 8, "192.0.2.1:50001") // another node: not counted
	if n := e.getNode("n1"); n.SessionCount != 1 {
		t.Fatalf("session count %d, want 1", n.SessionCount)
	}

	// Without a timeout: marked draining, not drained.
	resp, err := e.nodes.DrainNode(e.ctx, &adminv1.DrainNodeRequest{Name: "n1"})
	if err != nil || !resp.Node.Draining || resp.Drained {
		t.Fatalf("DrainNode = %v, %v", resp, err)
	}
	// A deadline that passes with the session still there.
	resp, err = e.nodes.DrainNode(e.ctx, &adminv1.DrainNodeRequest{Name: "n1", Timeout: durationpb.New(50 * time.Millisecond)})
	if err != nil || resp.Drained || resp.Node.SessionCount != 1 || resp.Node.DrainDeadline == nil {
		t.Fatalf("DrainNode past its deadline = %v, %v", resp, err)
	}

	// The session leaves while DrainNode waits: it returns drained. The
	// channel goes once the drain is recorded (the node agent's signal).
	done := make(chan *adminv1.DrainNodeResponse, 1)
	go func() {
		resp, err := e.nodes.DrainNode(e.ctx, &adminv1.DrainNodeRequest{Name: "n1", Timeout: durationpb.New(time.Hour)})
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	if _, err := etcd.Delete(e.ctx, statev1.ChannelKey("n1", 7)); err != nil {
		t.Fatal(err)
	}
	if resp := <-done; resp == nil || !resp.Drained || resp.Node.SessionCount != 0 {
		t.Errorf("DrainNode after the session left = %v", resp)
	}

	res, err := e.nodes.ResumeNode(e.ctx, &adminv1.ResumeNodeRequest{Name: "n1"})
	if err != nil || res.Node.Draining || res.Node.DrainDeadline != nil {
		t.Errorf("ResumeNode = %v, %v", res, err)
	}
}
