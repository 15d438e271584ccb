package command

import (
	"testing"

	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// TestWitness: registrations as the nodes keep them in etcd, listed and
// sent moves (the move records are checked in coordinator/service).
func TestWitness(t *testing.T) {
	c := newCoord(t)
	c.want(ExitOK, "witness", "ls")
	c.want(ExitOK, "node", "add", "n1", "--address", "192.0.2.1")
	c.want(ExitOK, "node", "add", "n2", "--address", "192.0.2.2")
	c.put(statev1.NodeLiveKey("n1"), &statev1.NodeLiveRecord{Name: "n1", Epoch: 1})
	c.put(statev1.NodeLiveKey("n2"), &statev1.NodeLiveRecord{Name: "n2", Epoch: 1})
	c.put(statev1.WitnessRegistrationKey("0123456789abcdef0123456789abcdef"), &statev1.WitnessRegistrationRecord{
		Id: "0123456789abcdef0123456789abcdef", Version: 0x00020000, NetName: "FILES", ShareName: "data",
		IpAddress: "192.0.2.1", ClientName: "WIN11", Node: "n2", Since: timestamppb.New(testNow)})
	c.put(statev1.WitnessWaitKey("0123456789abcdef0123456789abcdef", "n2"), &statev1.WitnessWaitRecord{Node: "n2"})
	c.put(statev1.WitnessRegistrationKey("fedcba9876543210fedcba9876543210"), &statev1.WitnessRegistrationRecord{
		Id: "fedcba9876543210fedcba9876543210", Version: 0x00010001, NetName: "FILES",
		IpAddress: "192.0.2.2", ClientName: "LAPTOP", Node: "n1", Since: timestamppb.New(testNow), ClientAddress: "198.51.100.7:50111"})
	c.put(statev1.SessionKey(0x42), &statev1.SessionRecord{SessionId: 0x42, Node: "n2", User: "alice", ClientAddress: "198.51.100.7:50000"})
	c.want(ExitOK, "witness", "ls")
	c.want(ExitOK, "witness", "ls", "-o", "json")
	c.want(ExitOK, "client", "move", "win11", "--to", "n2")
	c.want(ExitOK, "client", "move", "LAPTOP", "--to", "n1", "-o", "json")
	c.want(ExitNotFound, "client", "move", "nobody", "--to", "n1")
	c.want(ExitNotFound, "client", "move", "WIN11", "--to", "n9")
	c.want(ExitUsage, "client", "move", "WIN11")
	c.want(ExitOK, "share", "move", "DATA", "--to", "n2")
	c.want(ExitOK, "session", "move", "0x42", "--to", "n1")
	c.want(ExitNotFound, "session", "move", "0x43", "--to", "n1")
	c.want(ExitUsage, "session", "move", "0x42")
	c.want(ExitNotFound, "share", "move", "other", "--to", "n2")
	c.want(ExitOK, "node", "drain", "n1")
	c.want(ExitConflict, "client", "move", "WIN11", "--to", "n1")
	golden(t, "admin/witness.golden", c.out.String())
}
