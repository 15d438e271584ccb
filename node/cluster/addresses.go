package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
)

// PublicAddresses is how the node serves the public addresses it holds
// (AddressRecord): listening on them, and on a real network adding the
// address to an interface and announcing it. The agent calls it from its
// own goroutine, but for Fenced, which the goroutine that ends a Fencing
// calls.
type PublicAddresses interface {
	// Serve starts serving addr ("host:port") under epoch; it returns at
	// once and keeps trying in the background until the node listens (a
	// process that lost the address may still hold it for a moment).
	// Serving an address served already changes nothing.
	Serve(addr string, epoch uint64)
	// Stop stops serving addr and returns once nothing of this node
	// listens on it and its connections have ended, so that the next
	// holder can take it.
	Stop(addr string)
	// Fenced stops serving every address served under epoch or an
	// earlier one, at once: the node lost its right to them.
	Fenced(epoch uint64)
}

// addrState is what the agent knows of the public addresses' holders
// and what it asked the node to serve. Owned by the agent's goroutine.
type addrState struct {
	holders map[string]addrHolder // by AddressKey
	served  map[string]bool       // addresses passed to Serve, by address
	// published is the joined address list of the last live record
	// written, what refreshLive compares with.
	published string
}

// addrHolder is one AddressRecord and its key's mod revision.
type addrHolder struct {
	addr  string
	node  string // lower case
	epoch uint64
	rev   int64
}

func (s *addrState) init() {
	s.holders = map[string]addrHolder{}
	s.served = map[string]bool{}
}

// reset replaces the holders with kvs.
func (s *addrState) reset(kvs []*mvccpb.KeyValue) {
	clear(s.holders)
	for _, kv := range kvs {
		s.put(string(kv.Key), kv.Value, kv.ModRevision)
	}
}

// put records an address record (a nil value: its deletion) of mod
// revision rev; an event older than what is known (the agent records its
// own takes before their watch events arrive) is ignored.
func (s *addrState) put(key string, value []byte, rev int64) {
	if old, ok := s.holders[key]; ok && rev < old.rev {
		return
	}
	rec := &statev1.AddressRecord{}
	if value == nil || proto.Unmarshal(value, rec) != nil || rec.Address == "" {
		delete(s.holders, key)
		return
	}
	s.holders[key] = addrHolder{addr: rec.Address, node: lower(rec.Node), epoch: rec.Epoch, rev: rev}
}

// homeAddr is a public address and the node admitted with it.
type homeAddr struct{ addr, home string }

// publicAddresses lists every admitted node's addresses with their home
// node, by address; an address two nodes were admitted with belongs to
// the first by name.
func (o *offerState) publicAddresses() []homeAddr {
	names := make([]string, 0, len(o.nodes))
	for n := range o.nodes {
		names = append(names, n)
	}
	slices.Sort(names)
	seen := map[string]bool{}
	var out []homeAddr
	for _, n := range names {
		for _, a := range o.nodes[n].GetAddresses() {
			if k := strings.ToLower(a); !seen[k] {
				seen[k] = true
				out = append(out, homeAddr{addr: a, home: n})
			}
		}
	}
	slices.SortFunc(out, func(x, y homeAddr) int { return strings.Compare(x.addr, y.addr) })
	return out
}

// eligible are the nodes public addresses may go to: live, admitted and
// not draining — or, when every live node drains, every live node.
func (o *offerState) eligible() map[string]bool {
	all, serving := map[string]bool{}, map[string]bool{}
	for n := range o.live {
		rec := o.nodes[n]
		if rec == nil {
			continue
		}
		all[n] = true
		if !rec.Draining {
			serving[n] = true
		}
	}
	if len(serving) == 0 {
		return all
	}
	return serving
}

// holderLive reports whether h is held by a live incarnation.
func (o *offerState) holderLive(h addrHolder) bool {
	l := o.live[h.node]
	return l != nil && l.Epoch == h.epoch
}

// assignAddresses computes which node each public address belongs to,
// the same on every node that has the same view: its home node while
// that node is eligible; otherwise the eligible node holding the fewest
// addresses so far (home addresses first, then the others by address),
// ties going to the address's current holder, then by rendezvous hashing
// of address and node name. holders maps an address to its live holder.
// Addresses are left out when no node is eligible.
func assignAddresses(addrs []homeAddr, eligible map[string]bool, holders map[string]string) map[string]string {
	out := make(map[string]string, len(addrs))
	load := make(map[string]int, len(eligible))
	var orphans []homeAddr
	for _, h := range addrs {
		if eligible[h.home] {
			out[h.addr] = h.home
			load[h.home]++
		} else {
			orphans = append(orphans, h)
		}
	}
	nodes := make([]string, 0, len(eligible))
	for n := range eligible {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	for _, h := range orphans {
		best := ""
		for _, n := range nodes {
			if best == "" || betterHolder(h.addr, n, best, load, holders[h.addr]) {
				best = n
			}
		}
		if best != "" {
			out[h.addr] = best
			load[best]++
		}
	}
	return out
}

// betterHolder reports whether n should hold addr rather than b.
func betterHolder(addr, n, b string, load map[string]int, holder string) bool {
	switch {
	case load[n] != load[b]:
		return load[n] < load[b]
	case n == holder || b == holder:
		return n == holder
	}
	return addrScore(addr, n) > addrScore(addr, b)
}

// addrScore is node's rendezvous score for addr.
func addrScore(addr, node string) uint64 {
	h := fnv.New64a()
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(len(addr)))
	h.Write(b[:])
	h.Write([]byte(strings.ToLower(addr)))
	h.Write([]byte(node))
	return h.Sum64()
}

// reconcileAddresses brings the public addresses this node holds to the
// assignment: it gives up those assigned to another node (it stops
// serving first, then deletes the record, so the next holder listens
// only after), takes those assigned to it that are free (the record
// first, then it serves), and publishes what it serves in its live
// record. Nothing is written while the Fencing is not valid.
func (a *Agent) reconcileAddresses(ctx context.Context) error {
	f := a.Fence()
	if !f.Valid() {
		return nil
	}
	if a.node.Addresses == nil {
		return a.publishServed(ctx)
	}
	me := lower(a.cfg.Name)
	holders := map[string]string{}
	for _, h := range a.addrs.holders {
		if a.offer.holderLive(h) {
			holders[h.addr] = h.node
		}
	}
	want := assignAddresses(a.offer.publicAddresses(), a.offer.eligible(), holders)
	var errs []error
	for key, h := range a.addrs.holders {
		if h.node == me && h.epoch == f.Epoch() && want[h.addr] != me {
			errs = append(errs, a.releaseAddress(ctx, key, h))
		}
	}
	for addr, node := range want {
		if node != me {
			continue
		}
		h, ok := a.addrs.holders[statev1.AddressKey(addr)]
		switch {
		case ok && h.node == me && h.epoch == f.Epoch():
			a.serveAddress(addr, f.Epoch())
		case !ok || !a.offer.holderLive(h):
			errs = append(errs, a.takeAddress(ctx, addr, f))
		}
	}
	for addr := range a.addrs.served {
		h, ok := a.addrs.holders[statev1.AddressKey(addr)]
		if !ok || h.node != me || h.epoch != f.Epoch() {
			a.node.Addresses.Stop(addr) // the record went: not ours any more
			delete(a.addrs.served, addr)
		}
	}
	errs = append(errs, a.publishServed(ctx))
	return errors.Join(errs...)
}

func (a *Agent) serveAddress(addr string, epoch uint64) {
	if !a.addrs.served[addr] {
		a.addrs.served[addr] = true
		a.node.Addresses.Serve(addr, epoch)
	}
}

// takeAddress records this node as addr's holder, if the address is
// free, and serves it.
func (a *Agent) takeAddress(ctx context.Context, addr string, f *Fencing) error {
	key := statev1.AddressKey(addr)
	v, err := proto.Marshal(&statev1.AddressRecord{Address: addr, Node: lower(a.cfg.Name), Epoch: f.Epoch(), Home: a.homeOf(addr)})
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout(a.cfg.LeaseTTL))
	defer cancel()
	tr, err := a.cli.Txn(cctx).If(
		clientv3.Compare(clientv3.CreateRevision(key), "=", 0),
		clientv3.Compare(clientv3.Value(statev1.NodeEpochKey(a.cfg.Name)), "=", uitoa(f.Epoch())),
	).Then(clientv3.OpPut(key, string(v), clientv3.WithLease(a.inc().lease))).Commit()
	switch {
	case err != nil:
		return fmt.Errorf("taking public address %s: %w", addr, err)
	case !tr.Succeeded:
		return nil // not free yet (its holder's lease has not gone) or superseded: the watches tell
	}
	a.addrs.holders[key] = addrHolder{addr: addr, node: lower(a.cfg.Name), epoch: f.Epoch(), rev: tr.Header.Revision}
	a.log.Info("took a public address", "address", addr, "home", a.homeOf(addr), "epoch", f.Epoch())
	a.serveAddress(addr, f.Epoch())
	return nil
}

// releaseAddress stops serving the address h, then deletes its record.
func (a *Agent) releaseAddress(ctx context.Context, key string, h addrHolder) error {
	a.node.Addresses.Stop(h.addr)
	delete(a.addrs.served, h.addr)
	cctx, cancel := context.WithTimeout(ctx, callTimeout(a.cfg.LeaseTTL))
	defer cancel()
	tr, err := a.cli.Txn(cctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", h.rev)).
		Then(clientv3.OpDelete(key)).Commit()
	if err != nil {
		return fmt.Errorf("giving up public address %s: %w", h.addr, err)
	}
	if tr.Succeeded {
		delete(a.addrs.holders, key)
		a.log.Info("gave up a public address", "address", h.addr, "home", a.homeOf(h.addr))
	}
	return nil
}

// homeOf is the node admitted with addr.
func (a *Agent) homeOf(addr string) string {
	for _, h := range a.offer.publicAddresses() {
		if strings.EqualFold(h.addr, addr) {
			return h.home
		}
	}
	return ""
}

// servedAddresses are the addresses the live record lists: the public
// addresses served, then the --advertise endpoints; none while draining
// (rec is the node's admission record). A node that serves no public
// addresses itself (Node.Addresses nil) lists those it was admitted with.
func (a *Agent) servedAddresses(rec *statev1.NodeRecord) []string {
	if rec.GetDraining() {
		return nil
	}
	if a.node.Addresses == nil && len(a.cfg.Advertise) == 0 {
		return rec.GetAddresses()
	}
	var out []string
	for addr := range a.addrs.served {
		out = append(out, addr)
	}
	slices.Sort(out)
	for _, adv := range a.cfg.Advertise {
		if !slices.Contains(out, adv) {
			out = append(out, adv)
		}
	}
	return out
}

// offeredAddresses are the addresses the node offers multichannel
// clients (FSCTL_QUERY_NETWORK_INTERFACE_INFO): those it serves but
// another node's, which it holds only while that node is down or
// draining — a channel offered there could find the address gone back.
func (a *Agent) offeredAddresses() []string {
	own := a.servedAddresses(a.rec)
	if a.node.Addresses == nil {
		return own
	}
	me := lower(a.cfg.Name)
	return slices.DeleteFunc(own, func(addr string) bool {
		if slices.Contains(a.cfg.Advertise, addr) {
			return false
		}
		home := a.homeOf(addr)
		return home != "" && home != me
	})
}

// publishServed rewrites the live record when what it lists changed.
func (a *Agent) publishServed(ctx context.Context) error {
	inc := a.inc()
	live := a.liveRecord(a.rec, inc.fencing.Epoch(), inc.lease, a.pub.count)
	now := liveSig(live)
	if now == a.addrs.published || !inc.fencing.Valid() {
		return nil
	}
	v, err := proto.Marshal(live)
	if err != nil {
		return err
	}
	if err := a.guarded(ctx, clientv3.OpPut(statev1.NodeLiveKey(a.cfg.Name), string(v), clientv3.WithLease(inc.lease))); err != nil {
		return fmt.Errorf("live record: %w", err)
	}
	a.addrs.published = now
	a.applyOffer()
	return nil
}

// liveSig is what of a live record publishServed keeps up to date.
func liveSig(live *statev1.NodeLiveRecord) string {
	return fmt.Sprint(live.Addresses, live.Draining)
}
