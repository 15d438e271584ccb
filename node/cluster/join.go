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

// maxJoinAttempts bounds the epoch transaction's retries under contention.
const maxJoinAttempts = 10

// join runs steps 1 to 3 of the node agent's contract (keys.go): check
// the admission, grant a lease and keep it alive, and take the next epoch
// together with the live record. Each etcd call is bounded by
// callTimeout. On success the new incarnation is current: its lease is
// kept alive and its Fencing valid until the lease deadline, counted
// from when the grant was sent.
func (a *Agent) join(ctx context.Context) error {
	rec, nodeRev, err := a.admission(ctx)
	if err != nil {
		return err
	}
	sent := time.Now()
	lease, err := a.grant(ctx)
	if err != nil {
		return fmt.Errorf("etcd lease: %w", err)
	}
	deadline := sent.Add(min(time.Duration(lease.TTL)*time.Second, a.cfg.LeaseTTL) - leaseMargin(a.cfg.LeaseTTL))
	clear(a.addrs.served) // the last incarnation's, stopped when it was fenced
	for attempt := 0; ; attempt++ {
		epoch, rev, err := a.epochTxn(ctx, lease.ID, rec, nodeRev)
		if err != nil {
			a.revoke(context.WithoutCancel(ctx), lease.ID)
			return err
		}
		if rev != 0 {
			a.rec = rec
			a.addrs.published = liveSig(a.liveRecord(rec, epoch, lease.ID, 0))
			a.startIncarnation(lease.ID, epoch, deadline, rev)
			break
		}
		if attempt == maxJoinAttempts {
			a.revoke(context.WithoutCancel(ctx), lease.ID)
			return errors.New("joining: the epoch transaction kept failing")
		}
		// The node record or the epoch changed under us: read again.
		if rec, nodeRev, err = a.admission(ctx); err != nil {
			a.revoke(context.WithoutCancel(ctx), lease.ID)
			return err
		}
	}
	a.pub.reset()
	return nil
}

// grant grants the lease, bounded by callTimeout.
func (a *Agent) grant(ctx context.Context) (*clientv3.LeaseGrantResponse, error) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout(a.cfg.LeaseTTL))
	defer cancel()
	return a.cli.Grant(cctx, int64((a.cfg.LeaseTTL+time.Second-1)/time.Second))
}

// admission reads the node's record and checks the join token (step 1).
func (a *Agent) admission(ctx context.Context) (*statev1.NodeRecord, int64, error) {
	name := a.cfg.Name
	cctx, cancel := context.WithTimeout(ctx, callTimeout(a.cfg.LeaseTTL))
	defer cancel()
	resp, err := a.cli.Get(cctx, statev1.NodeKey(name))
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
// guarded by the epoch's and the node record's mod revisions. It returns
// the epoch taken and the transaction's revision, 0 when a guard failed.
// An agent that joins again after losing its lease is superseded
// (ErrSuperseded) if the epoch moved past those it took itself: another
// process joined under its name meanwhile, and the name is that one's.
func (a *Agent) epochTxn(ctx context.Context, lease clientv3.LeaseID, rec *statev1.NodeRecord, nodeRev int64) (uint64, int64, error) {
	name := a.cfg.Name
	ctx, cancel := context.WithTimeout(ctx, callTimeout(a.cfg.LeaseTTL))
	defer cancel()
	resp, err := a.cli.Get(ctx, statev1.NodeEpochKey(name))
	if err != nil {
		return 0, 0, err
	}
	var epoch uint64
	var epochRev int64
	if len(resp.Kvs) > 0 {
		epochRev = resp.Kvs[0].ModRevision
		epoch, _ = strconv.ParseUint(string(resp.Kvs[0].Value), 10, 64)
	}
	if a.Epoch() != 0 && epoch > a.claimed {
		return 0, 0, fmt.Errorf("%w: node %s's epoch is now %d, this process last took %d: another smbnode joined under this name",
			ErrSuperseded, name, epoch, a.claimed)
	}
	epoch++
	live, err := proto.Marshal(a.liveRecord(rec, epoch, lease, 0))
	if err != nil {
		return 0, 0, err
	}
	a.claimed = max(a.claimed, epoch)
	tr, err := a.cli.Txn(ctx).If(
		clientv3.Compare(clientv3.ModRevision(statev1.NodeEpochKey(name)), "=", epochRev),
		clientv3.Compare(clientv3.ModRevision(statev1.NodeKey(name)), "=", nodeRev),
	).Then(
		clientv3.OpPut(statev1.NodeEpochKey(name), strconv.FormatUint(epoch, 10)),
		clientv3.OpPut(statev1.NodeLiveKey(name), string(live), clientv3.WithLease(lease)),
	).Commit()
	if err != nil {
		return 0, 0, fmt.Errorf("joining: %w", err)
	}
	if !tr.Succeeded {
		return 0, 0, nil
	}
	return epoch, tr.Header.Revision, nil
}

// liveRecord is the node's NodeLiveRecord.
func (a *Agent) liveRecord(rec *statev1.NodeRecord, epoch uint64, lease clientv3.LeaseID, sessions uint32) *statev1.NodeLiveRecord {
	start := a.start
	if start.IsZero() {
		start = time.Now()
	}
	return &statev1.NodeLiveRecord{
		Name: a.cfg.Name, Epoch: epoch, Addresses: a.servedAddresses(rec), Version: a.cfg.Version,
		StartTime: timestamppb.New(start), SessionCount: sessions, LeaseId: int64(lease),
		PeerAddress: a.cfg.PeerAddress, LinkSpeed: a.cfg.LinkSpeed, Draining: rec.GetDraining(),
		MetricsAddress: a.cfg.MetricsAddress,
	}
}

// rejoin joins again after the lease was lost, until it succeeds, the
// node turns out to be removed or superseded, or ctx ends. The lost
// lease is revoked first (what was published on it is stale). The node
// admits work again once it has joined and reloaded the configuration.
func (a *Agent) rejoin(ctx context.Context) error {
	a.revoke(ctx, a.inc().lease)
	err := retry(ctx, func() error {
		err := a.joinOnce(ctx)
		switch {
		case errors.Is(err, ErrNotAdmitted):
			return fmt.Errorf("%w: %v", ErrRemoved, err)
		case err != nil && !errors.Is(err, ErrSuperseded):
			a.log.Warn("joining again", "err", err)
		}
		return err
	})
	if err != nil || ctx.Err() != nil {
		return err
	}
	a.log.Info("joined the cluster again", "epoch", a.Epoch())
	a.admit()
	return nil
}
