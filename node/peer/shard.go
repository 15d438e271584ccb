package peer

import (
	"encoding/binary"
	"hash/fnv"

	"github.com/smbcluster/smbcluster/node/state"
)

// NumShards is the number of shards the file-id space is split into. It is
// part of the cluster's layout: every node must agree on it.
const NumShards = 64

// ShardOf is the shard of a file.
func ShardOf(key state.FileKey) uint32 {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], key.Volume)
	binary.LittleEndian.PutUint64(b[8:], key.FileID)
	h := fnv.New64a()
	h.Write(b[:])
	return uint32(h.Sum64() % NumShards)
}

// Route is a shard's assignment: the node that owns it, where its peer
// service listens, and the etcd revision of the assignment.
type Route struct {
	Shard    uint32
	Node     string
	Addr     string
	Revision int64
}

// Routes is the shard map as this node knows it (node/cluster keeps it in
// step with etcd).
type Routes interface {
	// Self is this node's name.
	Self() string
	// Epoch is this node's current epoch.
	Epoch() uint64
	// Owner returns the current assignment of shard; ok is false while the
	// shard has no owner (its owner died and no node took it over yet).
	Owner(shard uint32) (r Route, ok bool)
	// Owns reports whether this node holds shard at revision rev and may
	// answer for it (it holds its cluster lease and is not fenced).
	Owns(shard uint32, rev int64) bool
	// Peers lists the live nodes' peer addresses by node name, this node
	// included.
	Peers() map[string]string
	// Changed returns a channel closed at the next change of the map.
	Changed() <-chan struct{}
}
