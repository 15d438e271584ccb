package nodemain

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/smbcluster/smbcluster/node/peer"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/share"
	"github.com/smbcluster/smbcluster/node/state"
)

// DescribeDurable implements cluster.DurableFiles.
func (c *coherence) DescribeDurable(h server.Handle) (state.HeldEntry, bool) {
	so := share.StateOpen(h)
	if so == nil || c.router == nil {
		return state.HeldEntry{}, false
	}
	return c.router.HeldEntry(so), true
}

// durableRecords reads the durable open records the nodes publish
// (statev1.OpenRecord with durable_open set, cluster.Agent) for the peer
// router (peer.DurableRecords).
type durableRecords struct {
	cli  *clientv3.Client
	self string
	// epoch is this node's epoch, which guards its deletes.
	epoch func() uint64
	log   *slog.Logger
}

// Orphans implements peer.DurableRecords.
func (d durableRecords) Orphans(ctx context.Context, node string) ([]peer.Orphan, error) {
	prefix := statev1.OpensPrefix
	if node != "" {
		prefix = statev1.NodeOpensPrefix(node)
	}
	resp, err := d.cli.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	var out []peer.Orphan
	for _, kv := range resp.Kvs {
		rec := &statev1.OpenRecord{}
		if proto.Unmarshal(kv.Value, rec) != nil || rec.DurableOpen == nil {
			continue
		}
		out = append(out, orphanOf(rec))
	}
	return out, nil
}

// orphanOf is the peer's view of a durable open's record.
func orphanOf(rec *statev1.OpenRecord) peer.Orphan {
	do := rec.DurableOpen
	o := peer.Orphan{
		Node: strings.ToLower(rec.Node), Epoch: do.NodeEpoch, Ref: do.Ref, FileID: rec.PersistentFileId,
		Path: rec.Path, Stream: do.Stream, Key: state.FileKey{Volume: do.Volume, FileID: do.FileId},
		Access: do.GrantedAccess, Share: rec.ShareAccess,
	}
	o.Caching = state.OplockCaching(uint8(rec.OplockLevel))
	if do.Lease {
		o.Caching = state.Caching{State: rec.LeaseState, Lease: true, Version: int(do.LeaseVersion), Epoch: uint16(do.LeaseEpoch)}
		copy(o.Caching.ID.Client[:], rec.ClientGuid)
		copy(o.Caching.ID.Key[:], rec.LeaseKey)
	}
	for _, l := range rec.Locks {
		o.Locks = append(o.Locks, state.Lock{Offset: l.Offset, Length: l.Length, Exclusive: l.Exclusive})
	}
	r := &o.Rec
	r.FileID, r.Key, r.Share, r.Name, r.Version = rec.PersistentFileId, o.Key, rec.Share, rec.Path, int(do.Version)
	copy(r.CreateGUID[:], rec.CreateGuid)
	copy(r.ClientGUID[:], rec.ClientGuid)
	copy(r.AppInstanceID[:], do.AppInstanceId)
	r.User, r.Domain, r.Timeout = rec.User, do.Domain, time.Duration(do.TimeoutMs)*time.Millisecond
	r.LeaseKey, r.HasLease, r.Persistent = o.Caching.ID.Key, do.Lease, rec.Persistent
	return o
}

// Forget implements peer.DurableRecords: a delete guarded by this node's
// epoch, as every write of the node is.
func (d durableRecords) Forget(node string, fileID uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := d.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.Value(statev1.NodeEpochKey(d.self)), "=", strconv.FormatUint(d.epoch(), 10))).
		Then(clientv3.OpDelete(statev1.OpenKey(node, fileID))).Commit()
	if err != nil {
		d.log.Warn("deleting a durable open's record", "peer", node, "id", fileID, "err", err)
	}
}
