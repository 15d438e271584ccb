package nodemain

import (
	"context"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/smbcluster/smbcluster/node/clusapi"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// clusapiTimeout bounds each etcd call a clusapi call makes.
const clusapiTimeout = 5 * time.Second

// clusterModel is the cluster clusapi ([MS-CMRP]) shows, read from etcd
// at each call: the node records and their live records (up, down,
// paused: drained), the public addresses and who holds them, and the
// network name's record (NetNameKey).
type clusterModel struct {
	cli  *clientv3.Client
	name string // the cluster's network name (--server-name)
	node string // this node
}

// Read implements clusapi.Cluster.
func (m *clusterModel) Read(ctx context.Context) (*clusapi.State, error) {
	ctx, cancel := context.WithTimeout(ctx, clusapiTimeout)
	defer cancel()
	resp, err := m.cli.Txn(ctx).Then(
		clientv3.OpGet(statev1.NodesPrefix, clientv3.WithPrefix()),
		clientv3.OpGet(statev1.LivePrefix, clientv3.WithPrefix()),
		clientv3.OpGet(statev1.AddressesPrefix, clientv3.WithPrefix()),
		clientv3.OpGet(statev1.NetNameKey()),
	).Commit()
	if err != nil {
		return nil, err
	}
	kvs := func(i int) []*mvccpb.KeyValue { return resp.Responses[i].GetResponseRange().GetKvs() }
	live := map[string]*statev1.NodeLiveRecord{}
	for _, kv := range kvs(1) {
		rec := &statev1.NodeLiveRecord{}
		if proto.Unmarshal(kv.Value, rec) == nil {
			live[statev1.LastKeyPart(string(kv.Key))] = rec
		}
	}
	holders := map[string]string{} // by AddressKey
	for _, kv := range kvs(2) {
		rec := &statev1.AddressRecord{}
		if proto.Unmarshal(kv.Value, rec) == nil {
			holders[string(kv.Key)] = rec.Node
		}
	}
	s := &clusapi.State{Name: m.name, NetNameOnline: true}
	seen := map[string]bool{}
	for _, kv := range kvs(0) {
		rec := &statev1.NodeRecord{}
		if proto.Unmarshal(kv.Value, rec) != nil {
			continue
		}
		name := statev1.LastKeyPart(string(kv.Key))
		s.Nodes = append(s.Nodes, clusapi.Node{Name: name, State: nodeState(rec, live[name])})
		for _, a := range rec.Addresses {
			host, _, err := net.SplitHostPort(a)
			if err != nil || net.ParseIP(host) == nil || seen[host] {
				continue
			}
			seen[host] = true
			s.Addresses = append(s.Addresses, clusapi.Address{IP: host, Home: name, Holder: holders[statev1.AddressKey(a)]})
		}
	}
	slices.SortFunc(s.Addresses, func(a, b clusapi.Address) int { return strings.Compare(a.IP, b.IP) })
	if nn := kvs(3); len(nn) > 0 {
		rec := &statev1.NetNameRecord{}
		if proto.Unmarshal(nn[0].Value, rec) == nil {
			s.NetNameOnline = !rec.Offline
		}
	}
	return s, nil
}

// nodeState is a node's clusapi state: down without a live record,
// paused while it drains, else up.
func nodeState(rec *statev1.NodeRecord, live *statev1.NodeLiveRecord) uint32 {
	switch {
	case live == nil:
		return clusapi.NodeDown
	case rec.Draining || live.Draining:
		return clusapi.NodePaused
	}
	return clusapi.NodeUp
}

// SetNetNameOnline implements clusapi.Cluster: the network name's record
// says who took it offline or online, from which node, when.
func (m *clusterModel) SetNetNameOnline(ctx context.Context, online bool, user string) error {
	b, err := proto.Marshal(&statev1.NetNameRecord{Offline: !online, ChangedBy: user, Node: m.node, ChangeTime: timestamppb.Now()})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, clusapiTimeout)
	defer cancel()
	_, err = m.cli.Put(ctx, statev1.NetNameKey(), string(b))
	return err
}
