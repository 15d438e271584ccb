package service

import (
	"slices"
	"testing"

	"github.com/smbcluster/smbcluster/coordinator/store"
	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"google.golang.org/grpc/codes"
)

func (e *env) moves(id string) []*statev1.WitnessMoveRecord {
	e.t.Helper()
	items, err := store.List(e.t.Context(), e.st, statev1.WitnessMovesOf(id), func() *statev1.WitnessMoveRecord { return &statev1.WitnessMoveRecord{} })
	if err != nil {
		e.t.Fatal(err)
	}
	var out []*statev1.WitnessMoveRecord
	for _, it := range items {
		out = append(out, it.Record)
	}
	return out
}

// TestWitnessMoves: client and share moves are records under the
// registration, naming the target's addresses; a drain moves the clients
// registered for the drained node's addresses to the least-loaded live
// node.
func TestWitnessMoves(t *testing.T) {
	e := newEnv(t)
	w := adminv1.NewWitnessServiceClient(e.conn)
	for _, n := range []struct{ name, addr string }{{"n1", "192.0.2.1"}, {"n2", "192.0.2.2"}, {"n3", "192.0.2.3"}} {
		if _, err := e.nodes.AddNode(e.ctx, &adminv1.AddNodeRequest{Name: n.name, Addresses: []string{n.addr}}); err != nil {
			t.Fatal(err)
		}
		e.put(statev1.NodeLiveKey(n.name), &statev1.NodeLiveRecord{Name: n.name, Epoch: 1})
	}
	const a, b = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	e.put(statev1.WitnessRegistrationKey(a), &statev1.WitnessRegistrationRecord{Id: a, ClientName: "WIN", IpAddress: "192.0.2.1", ShareName: "data", Node: "n2"})
	e.put(statev1.WitnessRegistrationKey(b), &statev1.WitnessRegistrationRecord{Id: b, ClientName: "MAC", IpAddress: "192.0.2.2", Node: "n1",
		ClientAddress: "198.51.100.9:50123"})
	e.put(statev1.SessionKey(0x77), &statev1.SessionRecord{SessionId: 0x77, Node: "n2", ClientAddress: "198.51.100.9:49000"})
	e.put(statev1.SessionKey(0x78), &statev1.SessionRecord{SessionId: 0x78, Node: "n2", ClientAddress: "198.51.100.10:49000"})

	resp, err := w.MoveClient(e.ctx, &adminv1.MoveClientRequest{Client: "win", ToNode: "n3"})
	if err != nil || len(resp.Registrations) != 1 || resp.Registrations[0].AddressNode != "n1" {
		t.Fatalf("MoveClient = %v, %v", resp, err)
	}
	if m := e.moves(a); len(m) != 1 || m[0].Kind != statev1.WitnessMoveRecord_KIND_CLIENT_MOVE || m[0].TargetNode != "n3" || !slices.Equal(m[0].Addresses, []string{"192.0.2.3"}) {
		t.Fatalf("move records %v", m)
	}
	if _, err := w.MoveShare(e.ctx, &adminv1.MoveShareRequest{Share: "DATA", ToNode: "n2"}); err != nil {
		t.Fatal(err)
	}
	if m := e.moves(a); len(m) != 2 {
		t.Fatalf("after a share move: %v", m)
	}
	// A session's move reaches the registrations from its client's IP.
	if resp, err := w.MoveSession(e.ctx, &adminv1.MoveSessionRequest{SessionId: 0x77, ToNode: "n1"}); err != nil || len(resp.Registrations) != 1 || resp.Registrations[0].Id != b {
		t.Fatalf("MoveSession = %v, %v", resp, err)
	}
	if m := e.moves(b); len(m) != 1 || m[0].TargetNode != "n1" {
		t.Fatalf("session move records %v", m)
	}
	_, err = w.MoveSession(e.ctx, &adminv1.MoveSessionRequest{SessionId: 0x78, ToNode: "n1"})
	wantCode(t, err, codes.NotFound, "move of a session without a registration")
	_, err = w.MoveSession(e.ctx, &adminv1.MoveSessionRequest{SessionId: 0x79, ToNode: "n1"})
	wantCode(t, err, codes.NotFound, "move of an unknown session")
	_, err = w.MoveClient(e.ctx, &adminv1.MoveClientRequest{Client: "win", ToNode: "n9"})
	wantCode(t, err, codes.NotFound, "move to an unknown node")
	_, err = w.MoveShare(e.ctx, &adminv1.MoveShareRequest{Share: "none", ToNode: "n2"})
	wantCode(t, err, codes.NotFound, "move of a share nobody registered for")

	// Draining n2 moves MAC (registered for n2's address) to n3, which has
	// fewer registrations for its addresses than n1.
	if _, err := e.nodes.DrainNode(e.ctx, &adminv1.DrainNodeRequest{Name: "n2"}); err != nil {
		t.Fatal(err)
	}
	if m := e.moves(b); len(m) != 2 || (m[0].TargetNode != "n3" && m[1].TargetNode != "n3") {
		t.Fatalf("drain moves %v", m)
	}
	list, err := w.ListWitnessRegistrations(e.ctx, &adminv1.ListWitnessRegistrationsRequest{})
	if err != nil || len(list.Registrations) != 2 || list.Registrations[0].ClientName != "MAC" {
		t.Fatalf("list = %v, %v", list, err)
	}
}
