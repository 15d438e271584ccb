package etcdstore

import (
	"context"
	"net"
	"strings"
	"time"

	"github.com/smbcluster/smbcluster/node/witness"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
)

// view is what Run knows of the cluster, owned by its goroutine.
type view struct {
	nodes  map[string]*statev1.NodeRecord
	live   map[string]*statev1.NodeLiveRecord
	served map[string]bool // public addresses held, by AddressKey
}

// Run feeds the hub until ctx ends: it loads the node, live and witness
// records, then follows their changes, and deletes registrations nobody
// waited on for the idle time. It starts over after a watch fails.
func (s *Store) Run(ctx context.Context) error {
	for {
		err := s.follow(ctx)
		if ctx.Err() != nil {
			return nil
		}
		s.log.Debug("witness watch restarts", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

func (s *Store) follow(ctx context.Context) error {
	v := &view{nodes: map[string]*statev1.NodeRecord{}, live: map[string]*statev1.NodeLiveRecord{}, served: map[string]bool{}}
	gctx, cancel := callCtx(ctx)
	resp, err := s.cli.Txn(gctx).Then(
		clientv3.OpGet(statev1.NodesPrefix, clientv3.WithPrefix()),
		clientv3.OpGet(statev1.LivePrefix, clientv3.WithPrefix()),
		clientv3.OpGet(statev1.WitnessRegistrationsPrefix, clientv3.WithPrefix()),
		clientv3.OpGet(statev1.WitnessWaitsPrefix, clientv3.WithPrefix()),
		clientv3.OpGet(statev1.WitnessMovesPrefix, clientv3.WithPrefix()),
		clientv3.OpGet(statev1.AddressesPrefix, clientv3.WithPrefix(), clientv3.WithKeysOnly()),
		clientv3.OpGet(statev1.NetNameKey()),
	).Commit()
	cancel()
	if err != nil {
		return err
	}
	rev := resp.Header.Revision
	if s.syncing != nil {
		s.syncing(syncRead)
	}
	// Registrations first: the hub drops moves for unknown ones.
	known := map[string]bool{}
	for _, kv := range resp.Responses[2].GetResponseRange().Kvs {
		if id := s.onRegistration(kv); id != "" {
			known[id] = true
		}
	}
	for _, r := range s.hub.List() {
		if !known[r.ID] && !s.putAfter(r.ID, rev) {
			s.hub.Delete(r.ID)
			s.mu.Lock()
			delete(s.revs, r.ID)
			s.mu.Unlock()
		}
	}
	if s.syncing != nil {
		s.syncing(syncDropped)
	}
	s.mu.Lock()
	clear(s.waits)
	s.mu.Unlock()
	for _, kv := range resp.Responses[3].GetResponseRange().Kvs {
		s.onWait(string(kv.Key), true)
	}
	for _, kv := range resp.Responses[4].GetResponseRange().Kvs {
		s.onMove(string(kv.Key), kv.Value)
	}
	for _, kv := range resp.Responses[0].GetResponseRange().Kvs {
		v.onNode(string(kv.Key), kv.Value)
	}
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		v.onLive(string(kv.Key), kv.Value)
	}
	s.hub.SetResources(v.resources())
	for _, kv := range resp.Responses[5].GetResponseRange().Kvs {
		v.served[string(kv.Key)] = true
	}
	s.hub.SetServed(v.servedIPs())
	var nn []byte
	if kvs := resp.Responses[6].GetResponseRange().Kvs; len(kvs) > 0 {
		nn = kvs[0].Value
	}
	s.onNetName(nn)

	wctx, stop := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer stop()
	opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithRev(rev + 1)}
	nodes := s.cli.Watch(wctx, statev1.NodesPrefix, opts...)
	live := s.cli.Watch(wctx, statev1.LivePrefix, opts...)
	wit := s.cli.Watch(wctx, statev1.WitnessPrefix, opts...)
	addrs := s.cli.Watch(wctx, statev1.AddressesPrefix, append(opts, clientv3.WithKeysOnly())...)
	netName := s.cli.Watch(wctx, statev1.NetNameKey(), clientv3.WithRev(rev+1))
	sweep := time.NewTicker(max(s.idle/4, 100*time.Millisecond))
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-sweep.C:
			s.sweep(ctx)
		case w, ok := <-nodes:
			if !ok || w.Err() != nil {
				return watchErr(w, ok)
			}
			for _, e := range w.Events {
				v.onNode(string(e.Kv.Key), valueOf(e))
			}
			s.hub.SetResources(v.resources())
		case w, ok := <-live:
			if !ok || w.Err() != nil {
				return watchErr(w, ok)
			}
			for _, e := range w.Events {
				v.onLive(string(e.Kv.Key), valueOf(e))
			}
			s.hub.SetResources(v.resources())
		case w, ok := <-addrs:
			if !ok || w.Err() != nil {
				return watchErr(w, ok)
			}
			for _, e := range w.Events {
				v.served[string(e.Kv.Key)] = e.Type != mvccpb.DELETE
			}
			s.hub.SetServed(v.servedIPs())
		case w, ok := <-netName:
			if !ok || w.Err() != nil {
				return watchErr(w, ok)
			}
			for _, e := range w.Events {
				s.onNetName(valueOf(e))
			}
		case w, ok := <-wit:
			if !ok || w.Err() != nil {
				return watchErr(w, ok)
			}
			for _, e := range w.Events {
				s.onWitness(e)
			}
		}
	}
}

// onNetName tells the hub the state of the cluster's network name from
// its record (nil: none, online).
func (s *Store) onNetName(value []byte) {
	rec := &statev1.NetNameRecord{}
	if value != nil {
		if err := proto.Unmarshal(value, rec); err != nil {
			s.log.Warn("ignoring a network name record that does not decode", "err", err)
			return
		}
	}
	s.hub.SetNetNameOnline(!rec.GetOffline())
}

type watchError struct{ err error }

func (e watchError) Error() string {
	if e.err == nil {
		return "watch closed"
	}
	return e.err.Error()
}

func watchErr(w clientv3.WatchResponse, ok bool) error {
	if !ok {
		return watchError{}
	}
	return watchError{w.Err()}
}

func valueOf(e *clientv3.Event) []byte {
	if e.Type == mvccpb.DELETE {
		return nil
	}
	return e.Kv.Value
}

func (s *Store) onWitness(e *clientv3.Event) {
	key := string(e.Kv.Key)
	switch {
	case strings.HasPrefix(key, statev1.WitnessRegistrationsPrefix):
		if e.Type == mvccpb.DELETE {
			id := statev1.LastKeyPart(key)
			s.hub.Delete(id)
			s.mu.Lock()
			delete(s.revs, id)
			delete(s.idleFrom, id)
			s.mu.Unlock()
			return
		}
		s.onRegistration(e.Kv)
	case strings.HasPrefix(key, statev1.WitnessWaitsPrefix):
		s.onWait(key, e.Type != mvccpb.DELETE)
	case strings.HasPrefix(key, statev1.WitnessMovesPrefix):
		s.onMove(key, valueOf(e))
	}
}

// The stages of a sync, for Store.syncing.
const (
	syncRead = iota
	syncDropped
)

// putAfter reports whether registration id was put after revision rev
// (Register, on this node): a sync that read etcd at rev did not see it,
// and the watch from rev+1 brings it.
func (s *Store) putAfter(id string, rev int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.revs[id] > rev
}

func (s *Store) onRegistration(kv *mvccpb.KeyValue) string {
	rec := &statev1.WitnessRegistrationRecord{}
	if proto.Unmarshal(kv.Value, rec) != nil || rec.GetId() == "" {
		return ""
	}
	s.hub.Put(registrationOf(rec))
	s.mu.Lock()
	s.revs[rec.GetId()] = kv.ModRevision
	if _, ok := s.idleFrom[rec.GetId()]; !ok {
		s.idleFrom[rec.GetId()] = time.Now()
	}
	s.mu.Unlock()
	return rec.GetId()
}

// onWait counts the wait keys of a registration (…/waits/<id>/<node>).
func (s *Store) onWait(key string, put bool) {
	rest := strings.TrimPrefix(key, statev1.WitnessWaitsPrefix)
	id, _, ok := strings.Cut(rest, "/")
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if put {
		s.waits[id]++
		return
	}
	if s.waits[id]--; s.waits[id] <= 0 {
		delete(s.waits, id)
		s.idleFrom[id] = time.Now()
	}
}

// onMove queues (or withdraws) a move (…/moves/<id>/<move>).
func (s *Store) onMove(key string, value []byte) {
	rest := strings.TrimPrefix(key, statev1.WitnessMovesPrefix)
	id, _, ok := strings.Cut(rest, "/")
	if !ok {
		return
	}
	if value == nil {
		s.hub.Withdraw(id, key)
		return
	}
	rec := &statev1.WitnessMoveRecord{}
	if proto.Unmarshal(value, rec) != nil {
		return
	}
	s.hub.Queue(id, key, Notification(rec))
}

// sweep deletes registrations no client waited on for the idle time,
// each guarded by the mod revision seen.
func (s *Store) sweep(ctx context.Context) {
	now := time.Now()
	var stale = map[string]int64{}
	s.mu.Lock()
	for id, rev := range s.revs {
		if s.waits[id] == 0 && s.waiting[id] == 0 && now.Sub(s.idleFrom[id]) > s.idle {
			stale[id] = rev
		}
	}
	s.mu.Unlock()
	for id, rev := range stale {
		key := statev1.WitnessRegistrationKey(id)
		cctx, cancel := callCtx(ctx)
		_, err := s.cli.Txn(cctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).Then(
			clientv3.OpDelete(key), clientv3.OpDelete(statev1.WitnessMovesOf(id), clientv3.WithPrefix())).Commit()
		cancel()
		if err == nil {
			s.log.Info("witness registration dropped: its client went away", "id", id)
		}
	}
}

func (v *view) onNode(key string, value []byte) {
	name := statev1.LastKeyPart(key)
	rec := &statev1.NodeRecord{}
	if value == nil || proto.Unmarshal(value, rec) != nil {
		delete(v.nodes, name)
		return
	}
	v.nodes[name] = rec
}

func (v *view) onLive(key string, value []byte) {
	name := statev1.LastKeyPart(key)
	rec := &statev1.NodeLiveRecord{}
	if value == nil || proto.Unmarshal(value, rec) != nil {
		delete(v.live, name)
		return
	}
	v.live[name] = rec
}

// servedIPs are the IPs of the public addresses held now.
func (v *view) servedIPs() []net.IP {
	var out []net.IP
	for k, on := range v.served {
		if ip := hostOf(strings.TrimPrefix(k, statev1.AddressesPrefix)); on && ip != nil {
			out = append(out, ip)
		}
	}
	return out
}

// resources are the admitted nodes' own addresses, available while the
// node is live and not draining.
func (v *view) resources() []witness.Resource {
	var out []witness.Resource
	for name, n := range v.nodes {
		l, live := v.live[name]
		avail := live && !l.GetDraining() && !n.GetDraining()
		for _, a := range n.GetAddresses() {
			if ip := hostOf(a); ip != nil {
				out = append(out, witness.Resource{Node: name, IP: ip, Available: avail})
			}
		}
	}
	return out
}
