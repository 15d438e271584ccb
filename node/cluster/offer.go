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
// live nodes' addresses besides its own. It is off until a channel can be
// bound on another node than the one holding its session: today a node
// binds only channels of its own sessions (node/server binding.go) and
// refuses any other with STATUS_USER_SESSION_DELETED, which the Linux
// client takes for the whole session expiring: offered three nodes, it
// reconnected every channel as a new session and the mount failed or hung.
// Binding across nodes (the session and its keys taken from the cluster's
// published sessions) is the next step; with it this turns true and the
// offer lists every live, non-draining node again, self first.
const offerPeers = false

// interfaces lists the addresses clients are offered: this node's own
// while it is live and not draining (and, with offerPeers, those of every
// other live, admitted, non-draining node, by name after self). Addresses
// that are not IP literals (host names) are left out: the answer carries
// IPs.
//
// This node's own addresses are own (the public addresses it serves that
// are its own, and its --advertise endpoints), not its live record's as
// last seen.
func (o *offerState) interfaces(self string, own []string) []server.Interface {
	names := make([]string, 0, len(o.live))
	for name := range o.live {
		if rec := o.nodes[name]; rec != nil && !rec.Draining && (offerPeers || name == self) {
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
		addrs := o.live[name].Addresses
		if name == self {
			addrs = own
		}
		for _, addr := range addrs {
			ip := addrIP(addr)
			if ip == nil || ip.IsUnspecified() || seen[ip.String()] {
				continue
			}
			seen[ip.String()] = true
			out = append(out, server.Interface{Index: uint32(len(out) + 1), IP: ip, LinkSpeed: 10_000_000_000, RSS: true})
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
