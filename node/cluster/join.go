package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// errLeaseLost ends a watch when the lease's keep-alive stops.
var errLeaseLost = errors.New("cluster lease lost")

// maxJoinAttempts bounds the epoch transaction's retries under contention.
const maxJoinAttempts = 10

// join runs steps 1 to 3 of the node agent's contract (keys.go): check
// the admission, grant a lease and keep it alive, and take the next epoch
// together with the live record.
func (a *Agent) join(ctx context.Context) error {
	rec, nodeRev, err := a.admission(ctx)
	if err != nil {
		return err
	}
	lease, err := a.cli.Grant(ctx, int64((a.cfg.LeaseTTL+time.Second-1)/time.Second))
	if err != nil {
		return fmt.Errorf("etcd lease: %w", err)
	}
	for attempt := 0; ; attempt++ {
		epoch, ok, err := a.epochTxn(ctx, lease.ID, rec, nodeRev)
		if err != nil || ok {
			if err != nil {
				a.cli.Revoke(context.WithoutCancel(ctx), lease.ID)
				return err
			}
			a.rec, a.lease, a.epoch = rec, lease.ID, epoch
			break
		}
		if attempt == maxJoinAttempts {
			return errors.New("joining: the epoch transaction kept failing")
		}
		// The node record or the epoch changed under us: read again.
		if rec, nodeRev, err = a.admission(ctx); err != nil {
			return err
		}
	}
	kctx, cancel := context.WithCancel(context.Background())
	ka, err := a.cli.KeepAlive(kctx, a.lease)
	if err != nil {
		cancel()
		return fmt.Errorf("etcd lease keep-alive: %w", err)
	}
	if a.kaCancel != nil {
		a.kaCancel()
	}
	a.ka, a.kaCancel = ka, cancel
	a.pub.reset()
	return nil
}

// admission reads the node's record and checks the join token (step 1).
func (a *Agent) admission(ctx context.Context) (*statev1.NodeRecord, int64, error) {
	name := a.cfg.Name
	resp, err := a.cli.Get(ctx, statev1.NodeKey(name))
	if err != nil {
		return nil, 0, fmt.Errorf("etcd %v: %w", a.cfg.Endpoints, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, 0, fmt.Errorf("node %s is %w: run smbctl node add %s", name, ErrNotAdmitted, name)
	}
	rec := &statev1.NodeRecord{}
	if err := proto.Unmarshal(resp.Kvs[0].Value, rec); err != nil {
		return nil, 0, fmt.Errorf("node record %s: %w", statev1.NodeKey(name), err)
	}
	if !statev1.CheckJoinToken(a.cfg.JoinToken, rec.JoinTokenSha256) {
		return nil, 0, fmt.Errorf("node %s is %w: its join token does not match (use the token `smbctl node add %s` printed)", name, ErrNotAdmitted, name)
	}
	return rec, resp.Kvs[0].ModRevision, nil
}

// epochTxn is step 3: epoch+1 and the live record in one transaction,
// guarded by the epoch's and the node record's mod revisions. ok is false
// when a guard failed.
func (a *Agent) epochTxn(ctx context.Context, lease clientv3.LeaseID, rec *statev1.NodeRecord, nodeRev int64) (uint64, bool, error) {
	name := a.cfg.Name
	resp, err := a.cli.Get(ctx, statev1.NodeEpochKey(name))
	if err != nil {
		return 0, false, err
	}
	var epoch uint64
	var epochRev int64
	if len(resp.Kvs) > 0 {
		epochRev = resp.Kvs[0].ModRevision
		epoch, _ = strconv.ParseUint(string(resp.Kvs[0].Value), 10, 64)
	}
	epoch++
	live, err := proto.Marshal(a.liveRecord(rec, epoch, lease, 0))
	if err != nil {
		return 0, false, err
	}
	tr, err := a.cli.Txn(ctx).If(
		clientv3.Compare(clientv3.ModRevision(statev1.NodeEpochKey(name)), "=", epochRev),
		clientv3.Compare(clientv3.ModRevision(statev1.NodeKey(name)), "=", nodeRev),
	).Then(
		clientv3.OpPut(statev1.NodeEpochKey(name), strconv.FormatUint(epoch, 10)),
		clientv3.OpPut(statev1.NodeLiveKey(name), string(live), clientv3.WithLease(lease)),
	).Commit()
	if err != nil {
		return 0, false, fmt.Errorf("joining: %w", err)
	}
	return epoch, tr.Succeeded, nil
}

// liveRecord is the node's NodeLiveRecord.
func (a *Agent) liveRecord(rec *statev1.NodeRecord, epoch uint64, lease clientv3.LeaseID, sessions uint32) *statev1.NodeLiveRecord {
	addrs := a.cfg.Advertise
	if len(addrs) == 0 {
		addrs = rec.GetAddresses()
	}
	start := a.start
	if start.IsZero() {
		start = time.Now()
	}
	return &statev1.NodeLiveRecord{
		Name: a.cfg.Name, Epoch: epoch, Addresses: addrs, Version: a.cfg.Version,
		StartTime: timestamppb.New(start), SessionCount: sessions, LeaseId: int64(lease),
		PeerAddress: a.cfg.PeerAddress,
	}
}

// rejoin joins again after the lease was lost, until it succeeds, the
// node turns out to be removed, or ctx ends. The node admits work again
// once it has joined and reloaded the configuration.
func (a *Agent) rejoin(ctx context.Context) error {
	err := retry(ctx, func() error {
		jctx, cancel := context.WithTimeout(ctx, 2*dialTimeout)
		defer cancel()
		if err := a.join(jctx); err != nil {
			if errors.Is(err, ErrNotAdmitted) {
				return fmt.Errorf("%w: %v", ErrRemoved, err)
			}
			a.log.Warn("joining again", "err", err)
			return err
		}
		return a.loadAll(jctx)
	})
	if err != nil || ctx.Err() != nil {
		return err
	}
	a.log.Info("joined the cluster again", "epoch", a.epoch)
	a.setFenced(false)
	return nil
}
