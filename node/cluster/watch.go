package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// watched are the key ranges the agent loads and watches, in loadAll's
// order; prefix says whether the key is a prefix.
var watched = []struct {
	key    string
	prefix bool
}{
	{statev1.SharesPrefix, true},
	{statev1.UsersPrefix, true},
	{statev1.SettingsKey(), false},
	{statev1.NodesPrefix, true},
	{statev1.LivePrefix, true},
	{statev1.ClosePrefix, true},
	{statev1.KerberosKey(), false},
	{statev1.AddressesPrefix, true},
	{statev1.NetNameKey(), false},
}

// loadAll reads every watched range at one revision and applies it as
// the whole truth: what is absent is removed.
func (a *Agent) loadAll(ctx context.Context) error {
	ops := make([]clientv3.Op, len(watched))
	for i, w := range watched {
		var opts []clientv3.OpOption
		if w.prefix {
			opts = append(opts, clientv3.WithPrefix())
		}
		ops[i] = clientv3.OpGet(w.key, opts...)
	}
	resp, err := a.cli.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return fmt.Errorf("loading the cluster configuration: %w", err)
	}
	kvs := make([][]*mvccpb.KeyValue, len(watched))
	for i, r := range resp.Responses {
		kvs[i] = r.GetResponseRange().GetKvs()
	}
	a.conf.rev = resp.Header.Revision
	a.resetShares(kvs[0])
	a.resetUsers(kvs[1])
	a.resetSettings(kvs[2])
	a.offer.reset(kvs[3], kvs[4])
	if err := a.onNodesChanged(); err != nil {
		return err
	}
	for _, kv := range kvs[5] {
		a.onClose(string(kv.Key))
	}
	a.resetKerberos(kvs[6])
	a.addrs.reset(kvs[7])
	a.resetNetName(kvs[8])
	a.reconcileShares()
	return nil
}

// watch follows the watched ranges from the loaded revision and sweeps the
// node's sessions and opens into etcd, until ctx ends, the incarnation's
// Fencing ends (its reason is returned), the node is removed or a watch
// fails (then the caller reloads).
func (a *Agent) watch(ctx context.Context) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	chans := make([]clientv3.WatchChan, len(watched))
	for i, w := range watched {
		opts := []clientv3.OpOption{clientv3.WithRev(a.conf.rev + 1)}
		if w.prefix {
			opts = append(opts, clientv3.WithPrefix())
		}
		chans[i] = a.cli.Watch(wctx, w.key, opts...)
	}
	a.updateAdmission()
	a.addressesChanged(ctx)
	fence := a.Fence().Done()
	tick := time.NewTicker(a.cfg.SyncInterval)
	defer tick.Stop()
	for {
		var err error
		select {
		case <-fence:
			return a.Fence().Err()
		default:
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-fence:
			return a.Fence().Err()
		case r, ok := <-chans[0]:
			err = a.onWatch(r, ok, a.onShare)
			a.reconcileShares()
		case r, ok := <-chans[1]:
			err = a.onWatch(r, ok, a.onUser)
		case r, ok := <-chans[2]:
			err = a.onWatch(r, ok, a.onSettings)
			a.reconcileShares()
		case r, ok := <-chans[3]:
			err = a.onWatch(r, ok, a.offer.onNode)
			err = errors.Join(err, a.onNodesChanged())
			a.addressesChanged(ctx)
		case r, ok := <-chans[4]:
			err = a.onWatch(r, ok, a.offer.onLive)
			a.applyOffer()
			a.addressesChanged(ctx)
		case r, ok := <-chans[5]:
			err = a.onWatch(r, ok, func(key string, v []byte) {
				if v != nil {
					a.onClose(key)
				}
			})
		case r, ok := <-chans[6]:
			err = a.onWatch(r, ok, a.onKerberos)
		case r, ok := <-chans[7]:
			err = a.onWatchRev(r, ok, a.addrs.put)
			a.addressesChanged(ctx)
		case r, ok := <-chans[8]:
			err = a.onWatch(r, ok, a.onNetName)
		case <-tick.C:
			a.addressesChanged(ctx)
			err = a.publish(ctx)
		case <-a.kick:
			err = a.publish(ctx)
		}
		if err != nil {
			return err
		}
	}
}

// onWatch applies one watch response: put(key, value) for a put,
// put(key, nil) for a delete.
func (a *Agent) onWatch(r clientv3.WatchResponse, ok bool, put func(key string, value []byte)) error {
	return a.onWatchRev(r, ok, func(key string, value []byte, _ int64) { put(key, value) })
}

// onWatchRev is onWatch for a put that also takes the event's mod
// revision (a delete's is the revision of the delete).
func (a *Agent) onWatchRev(r clientv3.WatchResponse, ok bool, put func(key string, value []byte, rev int64)) error {
	if !ok {
		return errors.New("watch closed")
	}
	if err := r.Err(); err != nil {
		return err
	}
	for _, ev := range r.Events {
		if ev.Type == clientv3.EventTypeDelete {
			put(string(ev.Kv.Key), nil, ev.Kv.ModRevision)
		} else {
			put(string(ev.Kv.Key), ev.Kv.Value, ev.Kv.ModRevision)
		}
	}
	if r.Header.Revision > a.conf.rev {
		a.conf.rev = r.Header.Revision
	}
	return nil
}

// addressesChanged reconciles the public addresses after a change of
// what they depend on; a failure is logged and retried at the next
// change or tick.
func (a *Agent) addressesChanged(ctx context.Context) {
	if err := a.reconcileAddresses(ctx); err != nil && a.Fence().Valid() && ctx.Err() == nil {
		a.log.Warn("public addresses", "err", err)
	}
}

// onNodesChanged follows this node's own record: removal and draining.
func (a *Agent) onNodesChanged() error {
	own := a.offer.nodes[strings.ToLower(a.cfg.Name)]
	if own == nil {
		return fmt.Errorf("%w: node %s was removed (smbctl node rm)", ErrRemoved, a.cfg.Name)
	}
	if a.rec != nil && own.Draining != a.rec.Draining {
		if own.Draining {
			a.log.Info("draining: refusing new sessions and no longer offered to clients")
		} else {
			a.log.Info("resumed: accepting new sessions")
		}
	}
	a.rec = own
	a.setDraining(own.Draining)
	a.applyOffer()
	return nil
}
