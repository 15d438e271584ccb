package cluster

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/smbcluster/smbcluster/node/server"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
)

// offerState is what the agent knows of every node: admission records and
// live records, by lower-case name. Owned by the agent's goroutine.
type offerState struct {
	nodes map[string]*statev1.NodeRecord
	live  map[string]*statev1.NodeLiveRecord
}

func (o *offerState) init() {
	o.nodes = map[string]*statev1.NodeRecord{}
	o.live = map[string]*statev1.NodeLiveRecord{}
}

// reset replaces both tables.
func (o *offerState) reset(nodes, live []*mvccpb.KeyValue) {
	clear(o.nodes)
	clear(o.live)
	for _, kv := range nodes {
		o.onNode(string(kv.Key), kv.Value)
	}
	for _, kv := range live {
		o.onLive(string(kv.Key), kv.Value)
	}
}

func (o *offerState) onNode(key string, value []byte) {
	name := statev1.LastKeyPart(key)
	rec := &statev1.NodeRecord{}
	if value == nil || proto.Unmarshal(value, rec) != nil {
		delete(o.nodes, name)
		return
	}
	o.nodes[name] = rec
}

func (o *offerState) onLive(key string, value []byte) {
	name := statev1.LastKeyPart(key)
	rec := &statev1.NodeLiveRecord{}
	if value == nil || proto.Unmarshal(value, rec) != nil {
		delete(o.live, name)
		return
	}
	o.live[name] = rec
}

// offerPeers says whether a node offers multichannel clients the other
// live nodes' addresses besides its own. A channel bound through any node
// joins its session on the node that holds it (node/handoff), so every
// node offers every live, non-draining node, self first. Off, a node
// offers only itself (as before binding across nodes worked: the Linux
// client took a refused bind for its whole session expiring).
const offerPeers = true

// DefaultLinkSpeed is the LinkSpeed offered for a node whose live record
// names none (bits per second).
const DefaultLinkSpeed = 10_000_000_000

// interfaces lists the addresses clients are offered: this node's own
// while it is live and not draining (and, with offerPeers, those of every
// other live, admitted, non-draining node).
//
// This node's own addresses are own (the public addresses it serves that
// are its own, and its --advertise endpoints), not its live record's as
// last seen.
func (o *offerState) interfaces(self string, own []string) []server.Interface {
	return o.offer(self, own, offerPeers)
}

// offer lists the addresses of this node (self, own) while it is live and
// not draining and, with peers, of every other live, admitted,
// non-draining node (those its live record lists: the public addresses
// it serves), self first and then by name, so that a multichannel client
// opens channels to several nodes. Each node is one interface: its
// addresses share an IfIndex, distinct per node — the node's rank among
// the admitted nodes by name, the same on every node and unchanged while
// a node drains or dies — since clients group channels by IfIndex and the
// nodes are separate machines. Each is offered RSS-capable, at the link
// speed its live record names (DefaultLinkSpeed if none). Addresses that
// are not IP literals (host names) are left out: the answer carries IPs;
// an address two nodes publish is offered once, for the first.
func (o *offerState) offer(self string, own []string, peers bool) []server.Interface {
	admitted := make([]string, 0, len(o.nodes))
	for name := range o.nodes {
		admitted = append(admitted, name)
	}
	slices.Sort(admitted)
	var names []string
	for name := range o.live {
		if rec := o.nodes[name]; rec != nil && !rec.Draining && (peers || name == self) {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, func(x, y string) int {
		switch {
		case x == y:
			return 0
		case x == self:
			return -1
		case y == self:
			return 1
		}
		return strings.Compare(x, y)
	})
	var out []server.Interface
	seen := map[string]bool{}
	for _, name := range names {
		index, _ := slices.BinarySearch(admitted, name)
		live := o.live[name]
		speed := live.LinkSpeed
		if speed == 0 {
			speed = DefaultLinkSpeed
		}
		addrs := live.Addresses
		if name == self {
			addrs = own
		}
		for _, addr := range addrs {
			ip := addrIP(addr)
			if ip == nil || ip.IsUnspecified() || seen[ip.String()] {
				continue
			}
			seen[ip.String()] = true
			out = append(out, server.Interface{Index: uint32(index + 1), IP: ip, LinkSpeed: speed, RSS: true})
		}
	}
	return out
}

// addrIP returns the IP of "ip" or "ip:port", nil for a host name.
func addrIP(addr string) net.IP {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		addr = host
	}
	return net.ParseIP(addr)
}

// applyOffer sets what the server offers multichannel clients.
func (a *Agent) applyOffer() {
	if a.node.Control != nil {
		a.node.Control.SetInterfaces(a.offer.interfaces(strings.ToLower(a.cfg.Name), a.offeredAddresses()))
	}
}

// Drain is the first step of a node's shutdown, before the server's: the
// node leaves the interface list. Its server offers multichannel clients
// no address any more, so that no new channel binds here, and its live
// record is published without addresses, so that no node offers them
// (with offerPeers). The lease, and with it the node's live record and
// published sessions, channels and opens, stays until Leave. Call Drain
// after Run has returned (it uses Run's state).
func (a *Agent) Drain(ctx context.Context) error {
	if a.node.Control != nil {
		a.node.Control.SetInterfaces([]server.Interface{})
	}
	inc := a.inc()
	if inc.lease == 0 || !inc.fencing.Valid() {
		return nil // not joined (the lease was lost)
	}
	live := a.liveRecord(a.rec, inc.fencing.Epoch(), inc.lease, a.pub.count)
	live.Addresses = nil
	v, err := proto.Marshal(live)
	if err != nil {
		return err
	}
	if err := a.guarded(ctx, clientv3.OpPut(statev1.NodeLiveKey(a.cfg.Name), string(v), clientv3.WithLease(inc.lease))); err != nil {
		return fmt.Errorf("withdrawing the node's addresses: %w", err)
	}
	a.log.Info("left the interface list")
	return nil
}
