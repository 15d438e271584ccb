package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"google.golang.org/protobuf/proto"
)

// TestDrainLeavesInterfaceList: Drain, the first step of a shutdown,
// takes the node out of the interface list (its server offers nothing,
// its live record lists no address) while the lease, the live record and
// the sessions stay until Leave.
func TestDrainLeavesInterfaceList(t *testing.T) {
	e := newEnv(t, "drainstep")
	e.addShare("dshare")
	e.addUser("dora", "Dora-1")
	e.token = e.admit(e.name, e.addr)
	a, err := New(Config{
		Endpoints: endpoints(t), Name: e.name, JoinToken: e.token, Sealer: e.sealer,
		LeaseTTL: 2 * time.Second, SyncInterval: 50 * time.Millisecond,
	}, Node{Server: e.srv, Control: e.control, Shares: e.shares, Users: e.users})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Join(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- a.Run(ctx) }()
	c := servertest.Connect(t, e.addr, "dora", "Dora-1", "dshare", smb2.Dialect311)
	waitFor(t, "the node offering itself", func() bool { return len(offered(t, c)) == 1 })

	cancel() // SIGTERM
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	if err := a.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ips := offered(t, c); len(ips) != 0 {
		t.Errorf("a drained node offers %v", ips)
	}
	r, err := e.cli.Get(context.Background(), statev1.NodeLiveKey(e.name))
	if err != nil || len(r.Kvs) != 1 {
		t.Fatalf("live record after Drain: %v %v", r, err)
	}
	live := &statev1.NodeLiveRecord{}
	if err := proto.Unmarshal(r.Kvs[0].Value, live); err != nil || len(live.Addresses) != 0 || live.LeaseId == 0 {
		t.Errorf("live record after Drain: %v (%v), want no addresses, on the lease", live, err)
	}
	if _, err := c.Create("after-drain"); err != nil {
		t.Errorf("the session after Drain: %v", err)
	}
	a.Leave(context.Background())
	if e.exists(statev1.NodeLiveKey(e.name)) {
		t.Error("live record outlives Leave")
	}
}
