package cluster

import (
	"log/slog"
	"testing"

	"github.com/smbcluster/smbcluster/node/server"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"
)

// FuzzRecords feeds arbitrary etcd keys and values to what decodes them:
// node and live records (the offered interfaces), share, user and
// settings records, and close requests. Nothing may panic, and the
// offered addresses are IPs of live, non-draining nodes only.
func FuzzRecords(f *testing.F) {
	live, _ := proto.Marshal(&statev1.NodeLiveRecord{Name: "n1", Addresses: []string{"127.0.0.1:445", "host:445", "::1", "[fe80::1]:445"}})
	node, _ := proto.Marshal(&statev1.NodeRecord{Name: "n1"})
	f.Add(statev1.NodeKey("n1"), node, statev1.NodeLiveKey("n1"), live, statev1.CloseSessionKey(7))
	f.Add("", []byte{0xff}, "/", []byte{}, statev1.CloseOpensPrefix+"n1/zz")
	f.Add(statev1.ShareKey("s"), []byte("\x0a\x01s"), statev1.UserKey("u"), []byte("\x12\x00"), statev1.CloseOpensPrefix)
	sealer, _ := statev1.NewSealer(testSecret)
	f.Fuzz(func(t *testing.T, k1 string, v1 []byte, k2 string, v2 []byte, closeKey string) {
		srv := server.New(server.Config{})
		a := &Agent{cfg: Config{Name: "n1", Sealer: sealer}, log: slog.New(slog.DiscardHandler), kick: make(chan struct{}, 1),
			node: Node{Server: srv, Control: &server.Control{}, Shares: &memShares{m: map[string]*server.Share{}}, Users: &memUsers{m: map[string][16]byte{}}}}
		a.conf.init()
		a.offer.init()
		a.pub.init()
		a.addrs.init()
		a.offer.reset([]*mvccpb.KeyValue{{Key: []byte(k1), Value: v1}}, []*mvccpb.KeyValue{{Key: []byte(k2), Value: v2}})
		for _, ifc := range a.offer.interfaces("n1", a.offer.live["n1"].GetAddresses()) {
			if ifc.IP == nil || ifc.IP.IsUnspecified() {
				t.Fatalf("offered %v", ifc.IP)
			}
		}
		a.onShare(k1, v1)
		a.onUser(k2, v2)
		a.onSettings(k1, v2)
		a.reconcileShares()
		a.onClose(closeKey)
		a.onNodesChanged()
	})
}
