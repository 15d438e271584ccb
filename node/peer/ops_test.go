package peer

import (
	"context"
	"testing"

	"github.com/smbcluster/smbcluster/node/state"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// TestEveryOpServed: every operation of CallRequest's oneof has a name
// of its own and a handler at the owner (Call or Wait): a new operation
// without one fails here, not on a cluster.
func TestEveryOpServed(t *testing.T) {
	a, _ := twoNodes(t)
	sv := a.Service()
	k := state.FileKey{Volume: 1, FileID: 2}
	rt, _ := a.routes.Owner(ShardOf(k))
	seen := map[Op]string{}
	fields := (&peerv1.CallRequest{}).ProtoReflect().Descriptor().Oneofs().ByName("op").Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		req := &peerv1.CallRequest{Route: &peerv1.Route{Shard: rt.Shard, Revision: rt.Revision}, Key: keyPB(k)}
		m := req.ProtoReflect()
		m.Set(fd, protoreflect.ValueOfMessage(m.NewField(fd).Message()))
		op := opOf(req)
		if op >= numOps || op == OpAdmit {
			t.Errorf("%s: no Op", fd.Name())
			continue
		}
		if other, ok := seen[op]; ok {
			t.Errorf("%s and %s: both %v", fd.Name(), other, op)
		}
		seen[op] = string(fd.Name())
		if op == OpBreakHandle || op == OpLockWait {
			continue // Wait
		}
		if _, err := sv.Call(context.Background(), req); status.Code(err) == codes.InvalidArgument || status.Code(err) == codes.FailedPrecondition {
			t.Errorf("%s: %v", fd.Name(), err)
		}
	}
	if len(seen) != int(numOps)-1 {
		t.Errorf("%d operations in CallRequest, %d Ops but Admit", len(seen), numOps-1)
	}
}
