package cluster

import (
	"context"
	"net"
	"testing"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
)

// testOffer is a cluster of six admitted nodes as the agent sees it:
// n1–n4 live (n3 draining), n5 down, n6 live with no usable address, and
// a live record of a node that is not admitted (stray).
func testOffer() *offerState {
	var o offerState
	o.init()
	for _, n := range []string{"n1", "n2", "n3", "n4", "n5", "n6"} {
		o.nodes[n] = &statev1.NodeRecord{Name: n, Draining: n == "n3"}
	}
	o.live["n1"] = &statev1.NodeLiveRecord{Name: "n1", Addresses: []string{"127.0.0.1:445", "[fd00::1]:445"}, LinkSpeed: 25_000_000_000}
	o.live["n2"] = &statev1.NodeLiveRecord{Name: "n2", Addresses: []string{"127.0.0.2:445", "127.0.0.1:445"}}
	o.live["n3"] = &statev1.NodeLiveRecord{Name: "n3", Addresses: []string{"127.0.0.3:445"}}
	o.live["n4"] = &statev1.NodeLiveRecord{Name: "n4", Addresses: []string{"127.0.0.4", "fs4.example:445", "0.0.0.0:445"}, LinkSpeed: 1_000_000_000}
	o.live["n6"] = &statev1.NodeLiveRecord{Name: "n6", Addresses: []string{"fs6.example:445"}}
	o.live["stray"] = &statev1.NodeLiveRecord{Name: "stray", Addresses: []string{"127.0.0.9:445"}}
	return &o
}

// TestOfferPeers: with the other nodes offered (offerPeers on), every
// node lists the addresses of every live, admitted, undrained node, its
// own first; each node is one interface (one IfIndex for its addresses,
// distinct per node and the same whichever node answers), RSS-capable,
// at its own link speed. A drained, dead or unadmitted node, host names
// and unspecified addresses are left out, and an address two nodes
// publish is offered once.
func TestOfferPeers(t *testing.T) {
	o := testOffer()
	n1 := server.Interface{Index: 1, IP: net.ParseIP("127.0.0.1"), LinkSpeed: 25_000_000_000, RSS: true}
	n1v6 := server.Interface{Index: 1, IP: net.ParseIP("fd00::1"), LinkSpeed: 25_000_000_000, RSS: true}
	n2 := server.Interface{Index: 2, IP: net.ParseIP("127.0.0.2"), LinkSpeed: DefaultLinkSpeed, RSS: true}
	n4 := server.Interface{Index: 4, IP: net.ParseIP("127.0.0.4"), LinkSpeed: 1_000_000_000, RSS: true}
	for _, tc := range []struct {
		self string
		want []server.Interface
	}{
		{"n1", []server.Interface{n1, n1v6, n2, n4}},
		{"n2", []server.Interface{n2, {Index: 2, IP: n1.IP, LinkSpeed: DefaultLinkSpeed, RSS: true}, n1v6, n4}},
		{"n4", []server.Interface{n4, n1, n1v6, n2}},
		{"n3", []server.Interface{n1, n1v6, n2, n4}}, // draining: not itself
	} {
		checkOffer(t, tc.self, o.offer(tc.self, o.live[tc.self].GetAddresses(), true), tc.want)
	}
	// Without peers a node offers only itself.
	checkOffer(t, "n4", o.offer("n4", o.live["n4"].GetAddresses(), false), []server.Interface{n4})
	checkOffer(t, "n3", o.offer("n3", o.live["n3"].GetAddresses(), false), nil)
	if offerPeers {
		checkOffer(t, "n4", o.interfaces("n4", o.live["n4"].GetAddresses()), []server.Interface{n4, n1, n1v6, n2})
	}
}

func checkOffer(t *testing.T, self string, got, want []server.Interface) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s offers %v, want %v", self, got, want)
		return
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Index != w.Index || !g.IP.Equal(w.IP) || g.LinkSpeed != w.LinkSpeed || g.RSS != w.RSS {
			t.Errorf("%s offers %v as #%d, want %v", self, g, i+1, w)
		}
	}
}

// TestOfferLinkSpeed: the node publishes Config.LinkSpeed in its live
// record and offers its address at that speed, with the IfIndex of its
// rank among the admitted nodes.
func TestOfferLinkSpeed(t *testing.T) {
	e := newEnv(t, "speed")
	e.addShare("speedshare")
	e.addUser("bob", "Bob-1")
	e.admit("alpha", "127.0.0.2:445") // ranks before "speed"
	e.linkSpeed = 40_000_000_000
	e.start()
	resp, err := e.cli.Get(context.Background(), statev1.NodeLiveKey("speed"))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("live record: %v, %v", resp, err)
	}
	var live statev1.NodeLiveRecord
	if err := proto.Unmarshal(resp.Kvs[0].Value, &live); err != nil || live.LinkSpeed != e.linkSpeed {
		t.Fatalf("live record link speed %d (%v), want %d", live.LinkSpeed, err, e.linkSpeed)
	}
	// The index is 1 + the node's rank among the admitted nodes (the
	// package's tests share one etcd).
	nodes, err := e.cli.Get(context.Background(), statev1.NodesPrefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	index := uint32(0)
	for _, kv := range nodes.Kvs {
		if statev1.LastKeyPart(string(kv.Key)) <= "speed" {
			index++
		}
	}
	if index < 2 {
		t.Fatalf("rank %d of speed among %d admitted nodes, want alpha before it", index, len(nodes.Kvs))
	}
	c := servertest.Connect(t, e.addr, "bob", "Bob-1", "speedshare", smb2.Dialect311)
	var ifs []fscc.NetworkInterfaceInfo
	waitFor(t, "the node's address offered", func() bool {
		out, err := c.Ioctl(smb2.FsctlQueryNetworkInterfaceInfo, smb2.AnyFileID, nil, 64<<10)
		if err != nil {
			t.Fatal(err)
		}
		ifs, _ = fscc.DecodeNetworkInterfaces(out)
		return len(ifs) == 1
	})
	if i := ifs[0]; i.LinkSpeed != e.linkSpeed || i.IfIndex != index || i.Capability != fscc.RSSCapable || !i.IP.Equal(net.ParseIP("127.0.0.1")) {
		t.Errorf("offered %+v, want 127.0.0.1 as interface %d at %d b/s, RSS", i, index, e.linkSpeed)
	}
}
