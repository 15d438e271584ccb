package nodemain

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/coordinator/store"
	"github.com/smbcluster/smbcluster/node/clusapi"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
)

// TestClusterModel: clusapi's model read from etcd — node states from the
// node and live records, address resources and who holds them, the
// network name's record — and the record SetNetNameOnline writes.
func TestClusterModel(t *testing.T) {
	dir, err := os.MkdirTemp("", "clusapi-etcd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	endpoints, stop, err := store.StartEmbedded(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	put := func(key string, m proto.Message) {
		b, _ := proto.Marshal(m)
		if _, err := cli.Put(t.Context(), key, string(b)); err != nil {
			t.Fatal(err)
		}
	}
	put(statev1.NodeKey("n1"), &statev1.NodeRecord{Name: "n1", Addresses: []string{"192.0.2.1:445"}})
	put(statev1.NodeKey("n2"), &statev1.NodeRecord{Name: "n2", Addresses: []string{"192.0.2.2:445", "192.0.2.2:4450"}})
	put(statev1.NodeKey("n3"), &statev1.NodeRecord{Name: "n3", Addresses: []string{"192.0.2.3:445"}, Draining: true})
	put(statev1.NodeLiveKey("n1"), &statev1.NodeLiveRecord{Name: "n1"})
	put(statev1.NodeLiveKey("n3"), &statev1.NodeLiveRecord{Name: "n3", Draining: true})
	put(statev1.AddressKey("192.0.2.1:445"), &statev1.AddressRecord{Address: "192.0.2.1:445", Node: "n1"})
	put(statev1.AddressKey("192.0.2.2:445"), &statev1.AddressRecord{Address: "192.0.2.2:445", Node: "n1"})

	m := &clusterModel{cli: cli, name: "FILES", node: "n1"}
	s, err := m.Read(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	wantNodes := []clusapi.Node{{Name: "n1", State: clusapi.NodeUp}, {Name: "n2", State: clusapi.NodeDown}, {Name: "n3", State: clusapi.NodePaused}}
	wantAddrs := []clusapi.Address{{IP: "192.0.2.1", Home: "n1", Holder: "n1"}, {IP: "192.0.2.2", Home: "n2", Holder: "n1"}, {IP: "192.0.2.3", Home: "n3"}}
	if s.Name != "FILES" || !s.NetNameOnline || !slices.Equal(s.Nodes, wantNodes) || !slices.Equal(s.Addresses, wantAddrs) {
		t.Fatalf("read %+v", s)
	}
	if err := m.SetNetNameOnline(t.Context(), false, "admin"); err != nil {
		t.Fatal(err)
	}
	if s, err := m.Read(t.Context()); err != nil || s.NetNameOnline {
		t.Fatalf("after offline: %+v %v", s, err)
	}
	r, err := cli.Get(t.Context(), statev1.NetNameKey())
	rec := &statev1.NetNameRecord{}
	if err != nil || len(r.Kvs) != 1 || proto.Unmarshal(r.Kvs[0].Value, rec) != nil || !rec.Offline || rec.ChangedBy != "admin" || rec.Node != "n1" {
		t.Fatalf("record %+v %v", rec, err)
	}
	if err := m.SetNetNameOnline(t.Context(), true, "admin"); err != nil {
		t.Fatal(err)
	}
	if s, err := m.Read(t.Context()); err != nil || !s.NetNameOnline {
		t.Fatalf("after online: %+v %v", s, err)
	}
}
