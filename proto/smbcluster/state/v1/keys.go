package statev1

import (
	"fmt"
	"hash/fnv"
	"strings"
)

// The etcd key layout of the cluster, in one place. Every value is a
// protobuf record of this package (marshalled with proto.Marshal) unless
// said otherwise. Names in keys are lower case: share and user names are
// case-insensitive, so ShareKey("Data") == ShareKey("data").
//
//	/smbcluster/v1/nodes/<node>              NodeRecord      coordinator
//	/smbcluster/v1/live/<node>               NodeLiveRecord  node, on its lease
//	/smbcluster/v1/epochs/<node>             decimal uint64  node, by txn
//	/smbcluster/v1/shares/<share>            ShareRecord     coordinator
//	/smbcluster/v1/users/<user>              UserRecord      coordinator
//	/smbcluster/v1/settings                  Settings        coordinator
//	/smbcluster/v1/netname                   NetNameRecord   node (clusapi), absent: online
//	/smbcluster/v1/sessions/<id>             SessionRecord   establishing node, on its lease
//	/smbcluster/v1/channels/<node>/<id>      ChannelRecord   node holding the channels, on its lease
//	/smbcluster/v1/opens/<node>/<fileid>     OpenRecord      node holding the open
//	/smbcluster/v1/close/sessions/<id>       CloseRequest    coordinator, on a 60 s lease
//	/smbcluster/v1/close/opens/<node>/<fileid> CloseRequest  coordinator, on a 60 s lease
//	/smbcluster/v1/shards/<nn>               ShardRecord     owner node, on its lease, by txn
//	/smbcluster/v1/addresses/<host:port>     AddressRecord   holder node, on its lease, by txn
//	/smbcluster/v1/storage/probes/<share>/<node>            StorageProbeRecord   node, on its lease
//	/smbcluster/v1/storage/verdicts/<share>/<checker>/<prober> StorageVerdictRecord checker, on its lease
//	/smbcluster/v1/storage/views/<share>/<node>             ShareViewRecord      node, on its lease
//
// <id> and <fileid> are 16 lower-case hex digits (SessionIDKeyPart), so keys
// sort by number.
//
// # The node agent's contract
//
// Joining. A node started with --name N --join-token T:
//  1. reads NodeKey(N); absent means not admitted: refuse to start. It
//     compares HashJoinToken(T) with NodeRecord.JoinTokenSha256 using
//     CheckJoinToken; a mismatch means refuse to start.
//  2. grants an etcd lease (TTL a few seconds) and keeps it alive.
//  3. obtains its epoch with one transaction: read NodeEpochKey(N) (value e,
//     absent = 0, mod revision r), then
//     If(ModRevision(NodeEpochKey(N)) == r,             // r = 0 if absent
//     ModRevision(NodeKey(N)) == nodeRecordModRevision) // still admitted, same token
//     Then(Put(NodeEpochKey(N), e+1),
//     Put(NodeLiveKey(N), NodeLiveRecord{Epoch: e+1, ...}, WithLease(lease)))
//     and retries from the read if the transaction fails. The epoch thus
//     increases by one at every join and fences the node's older
//     incarnations.
//  4. watches NodeKey(N): deleted means the node was removed (leave the
//     cluster); Draining means stop advertising the node to clients
//     (FSCTL_QUERY_NETWORK_INTERFACE_INFO, witness) and refuse new sessions.
//
// Liveness. NodeLiveKey(N) exists exactly while the node's lease lives: the
// coordinator reports the node up when it exists, down when it does not but
// NodeEpochKey(N) does. A node that loses its lease stops accepting new work
// and joins again (step 2 and 3) before it serves again. The node refreshes
// NodeLiveRecord.SessionCount now and then (informational).
//
// Configuration. Nodes watch SharesPrefix, UsersPrefix, SettingsKey and
// KerberosKey and apply changes live: a deleted share ends its tree
// connects, a deleted user ends that user's sessions, a new keytab applies
// to the next Kerberos logons. User NT hashes and the keytab are opened
// with the cluster secret: Sealer.Open(rec.NtHash, UserKey(rec.Name)),
// Sealer.Open(rec.Keytab, KerberosKey()).
//
// Sessions and opens. When a session is established, its node writes
// SessionKey(id) (key material sealed with AAD SessionKey(id)) and its own
// ChannelKey(N, id), both on its lease; a node accepting a bound channel
// reads SessionKey(id) and writes its own ChannelKey(node, id). A node deletes
// its ChannelKey when its last channel of the session goes, and the
// establishing node deletes SessionKey(id) when the session is logged off.
// The number of keys under NodeChannelsPrefix(N) is the node's session
// count (DrainNode waits for it to reach 0). Opens go under OpenKey(N, fid),
// on the lease unless durable.
//
// Shards. The file-id space is split into shards (node/peer.NumShards);
// each shard's per-file state lives at one owner node. A live node takes a
// shard whose key is absent and for which it ranks first among the live,
// non-draining nodes (rendezvous hashing of shard and node names; every
// live node when all drain; a node's draining shows in its live record)
// with
// If(CreateRevision(ShardKey(n)) == 0, Value(NodeEpochKey(N)) == epoch)
// Then(Put(ShardKey(n), ShardRecord, WithLease(lease))); it gives a shard up
// to a better-ranked live node only while the shard holds no open (Delete
// guarded by the key's mod revision). A dead owner's shards go with its
// lease.
//
// Public addresses. The SMB endpoints nodes were admitted with
// (NodeRecord.Addresses) are public addresses, held by one node at a time
// under AddressKey(addr). Every node computes the same assignment from
// the node records, the live records and the address records: an address
// belongs to its home node while that node is live and not draining;
// otherwise to the live, non-draining node holding the fewest addresses
// (ties: the current holder, then rendezvous hashing of address and node
// name). A node takes an address assigned to it whose key is absent, or
// held by a node that is not live, with
// If(CreateRevision(AddressKey(a)) == 0, Value(NodeEpochKey(N)) == epoch)
// Then(Put(AddressKey(a), AddressRecord, WithLease(lease))), and only then
// listens on it. A holder gives up an address assigned to another node by
// first stopping to listen on it (and ending its connections), then
// deleting the key (guarded by its mod revision): the next holder listens
// only after. A dead holder's addresses go with its lease; a fenced node
// stops listening on every public address before its lease can expire.
// A node publishes the addresses it holds in NodeLiveRecord.Addresses.
//
// Storage. A node serving a share in a cluster checks, through its own
// mount, that the share's storage is coherent between nodes: each round it
// rewrites its probe file (at the share's root, named StorageProbePrefix…, hidden
// from clients) and publishes StorageProbeKey (announcing the round, with
// no name, before it touches the files); every other node serving
// the share reads the file back through its own mount and publishes what
// it saw under StorageVerdictKey. A node serves the share while it and
// more than half of the nodes it has a decided check with agree (each
// pair seen right both ways, twice); it refuses the share otherwise, and
// publishes how it serves it under ShareViewKey. A share record's
// VolumeID names its files on every node.
//
// Closing. The coordinator asks for a session or an open to be closed by
// writing CloseSessionKey(id) or CloseOpenKey(N, fid) on a short lease. Nodes
// watch ClosePrefix; a node holding a channel of the session (or the open)
// closes it and deletes its own records. The request key expires by itself.
const (
	// Root is the prefix of every key; v1 is the layout's version.
	Root = "/smbcluster/v1/"

	NodesPrefix    = Root + "nodes/"
	LivePrefix     = Root + "live/"
	EpochsPrefix   = Root + "epochs/"
	SharesPrefix   = Root + "shares/"
	UsersPrefix    = Root + "users/"
	SessionsPrefix = Root + "sessions/"
	ChannelsPrefix = Root + "channels/"
	OpensPrefix    = Root + "opens/"
	ShardsPrefix   = Root + "shards/"
	// AddressesPrefix holds the public addresses' holders (AddressKey).
	AddressesPrefix = Root + "addresses/"

	// ClosePrefix holds close requests; CloseSessionsPrefix and
	// CloseOpensPrefix divide it.
	ClosePrefix         = Root + "close/"
	CloseSessionsPrefix = ClosePrefix + "sessions/"
	CloseOpensPrefix    = ClosePrefix + "opens/"

	// StoragePrefix holds the storage checks' records; StorageProbesPrefix,
	// StorageVerdictsPrefix and ShareViewsPrefix divide it.
	StoragePrefix         = Root + "storage/"
	StorageProbesPrefix   = StoragePrefix + "probes/"
	StorageVerdictsPrefix = StoragePrefix + "verdicts/"
	ShareViewsPrefix      = StoragePrefix + "views/"

	// StorageProbePrefix begins the names of the probe files nodes keep at
	// a share's root (".smbcluster.NODE.…"); clients neither see nor reach
	// a root entry whose name begins with it, in any case.
	StorageProbePrefix = ".smbcluster"
)

// NodeKey is where the coordinator keeps node name's NodeRecord.
func NodeKey(name string) string { return NodesPrefix + strings.ToLower(name) }

// NodeLiveKey is where node name keeps its NodeLiveRecord on its lease.
func NodeLiveKey(name string) string { return LivePrefix + strings.ToLower(name) }

// NodeEpochKey holds node name's last epoch as a decimal number.
func NodeEpochKey(name string) string { return EpochsPrefix + strings.ToLower(name) }

// ShareKey is where share name's ShareRecord lives.
func ShareKey(name string) string { return SharesPrefix + strings.ToLower(name) }

// UserKey is where user name's UserRecord lives.
func UserKey(name string) string { return UsersPrefix + strings.ToLower(name) }

// SettingsKey is where the cluster's Settings live.
func SettingsKey() string { return Root + "settings" }

// NetNameKey is where the state of the cluster's network name (its client
// access point) is kept; absent means online.
func NetNameKey() string { return Root + "netname" }

// KerberosKey is where the cluster's KerberosRecord (its service keytab,
// sealed) lives.
func KerberosKey() string { return Root + "kerberos" }

// SessionKey is where session id's SessionRecord lives.
func SessionKey(id uint64) string { return SessionsPrefix + IDKeyPart(id) }

// ShardKey is where shard n's ShardRecord lives.
func ShardKey(n uint32) string { return fmt.Sprintf("%s%02d", ShardsPrefix, n) }

// AddressKey is where the holder of public address addr ("host:port")
// keeps its AddressRecord.
func AddressKey(addr string) string { return AddressesPrefix + strings.ToLower(addr) }

// StorageProbeKey is where node publishes its probe of share.
func StorageProbeKey(share, node string) string {
	return StorageProbesPrefix + strings.ToLower(share) + "/" + strings.ToLower(node)
}

// StorageVerdictKey is where checker publishes what it saw of prober's
// probe of share.
func StorageVerdictKey(share, checker, prober string) string {
	return StorageVerdictsPrefix + strings.ToLower(share) + "/" + strings.ToLower(checker) + "/" + strings.ToLower(prober)
}

// ShareViewKey is where node publishes how it serves share.
func ShareViewKey(share, node string) string {
	return ShareViewsPrefix + strings.ToLower(share) + "/" + strings.ToLower(node)
}

// VolumeID is the volume identity of share rec: its VolumeId, or for a
// record written before shares had one, a hash of its lower-case name
// (the same on every node).
func VolumeID(rec *ShareRecord) uint64 {
	if id := rec.GetVolumeId(); id != 0 {
		return id
	}
	h := fnv.New64a()
	h.Write([]byte(strings.ToLower(rec.GetName())))
	return h.Sum64() | 1
}

// NodeChannelsPrefix prefixes the ChannelRecords node name publishes.
func NodeChannelsPrefix(node string) string {
	return ChannelsPrefix + strings.ToLower(node) + "/"
}

// ChannelKey is where node publishes its channels of session id.
func ChannelKey(node string, id uint64) string {
	return NodeChannelsPrefix(node) + IDKeyPart(id)
}

// NodeOpensPrefix prefixes the OpenRecords node name publishes.
func NodeOpensPrefix(node string) string {
	return OpensPrefix + strings.ToLower(node) + "/"
}

// OpenKey is where node publishes its open with persistent file id fid.
func OpenKey(node string, fid uint64) string {
	return NodeOpensPrefix(node) + IDKeyPart(fid)
}

// CloseSessionKey is where the coordinator asks for session id to close.
func CloseSessionKey(id uint64) string { return CloseSessionsPrefix + IDKeyPart(id) }

// CloseOpenKey is where the coordinator asks node to close open fid.
func CloseOpenKey(node string, fid uint64) string {
	return CloseOpensPrefix + strings.ToLower(node) + "/" + IDKeyPart(fid)
}

// IDKeyPart formats a 64-bit identifier as it appears in keys.
func IDKeyPart(id uint64) string { return fmt.Sprintf("%016x", id) }

// ParseIDKeyPart is the inverse of IDKeyPart.
func ParseIDKeyPart(s string) (uint64, error) {
	if len(s) != 16 {
		return 0, fmt.Errorf("statev1: id key part %q: want 16 hex digits", s)
	}
	var id uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		default:
			return 0, fmt.Errorf("statev1: id key part %q: want lower-case hex", s)
		}
		id = id<<4 | uint64(d)
	}
	return id, nil
}

// LastKeyPart returns what follows the last '/' of key: the name or id
// a key was built from (lower-cased for names).
func LastKeyPart(key string) string {
	return key[strings.LastIndexByte(key, '/')+1:]
}
