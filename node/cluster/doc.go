// Package cluster is the node's cluster agent: it joins the cluster in
// etcd as the contract in proto/smbcluster/state/v1 (keys.go) describes and
// keeps the node in step with it.
//
// Join checks that the node was admitted (NodeKey exists and the join
// token matches), takes an etcd lease, bumps the node's epoch and publishes
// its NodeLiveRecord on the lease in one transaction (with the addresses
// of its node-to-node API and, when it serves them, of its /metrics and
// /stats endpoints, which the coordinator reads for smbctl top), and loads
// shares, users, settings and the Kerberos keytab. Run then watches them
// and applies changes to the node live (a new share is served, a deleted
// share ends its tree connects, a deleted user's sessions end, a new
// password, a user's Kerberos principals and a new keytab apply to new
// logons), publishes the node's sessions, channels and opens (an open with
// the owner of its file and its byte-range locks, Node.Files; a record is
// rewritten only when these changed), acts on close
// requests, follows draining, moves public addresses (addresses.go), and
// keeps the interfaces offered to multichannel clients
// (FSCTL_QUERY_NETWORK_INTERFACE_INFO): a channel bound through any node
// joins its session where it is (node/handoff), so every node offers
// every live, undrained node's addresses, its own first (offerPeers in
// offer.go is the switch), each node one interface (an IfIndex of its
// own, the same on every node), RSS-capable, at the link speed the node
// publishes in its live record (Config.LinkSpeed, smbnode --link-speed).
//
// At shutdown, after Run has returned, Drain takes the node out of the
// interface list (its server offers nothing, its live record lists no
// address) while the server finishes its requests; Leave then revokes the
// lease.
//
// What "draining" means here: the node refuses new sessions
// (STATUS_REQUEST_NOT_ACCEPTED) while existing sessions go on, no node
// offers its addresses to clients any more, its public addresses move to
// other nodes (the connections made to them end), and it is ranked for no
// shard (it keeps those holding state).
//
// # Public addresses
//
// The addresses a node was admitted with are public addresses, each held
// by one node at a time under AddressKey (the contract is in keys.go).
// After every change of the node, live and address records, and every
// sweep, the agent computes the assignment (assignAddresses: a node's own
// while it is live and not draining, else the least-loaded such node) and
// brings its own part to it: it gives up an address by stopping to serve
// it (Node.Addresses.Stop: the listener closes, its connections end) and
// only then deleting its record; it takes one that is free by writing the
// record (epoch-guarded, on its lease) and only then serving it. So the
// next holder listens only after the last one stopped. A Fencing's end
// stops every address served under it (Node.Addresses.Fenced) before
// etcd can expire the lease; the live record lists the addresses served.
//
// # Fencing
//
// Each join makes an incarnation: a lease and an epoch, and a Fencing
// (Agent.Fence) that says whether the node may act on cluster state now
// and under which epoch. The rest of the node asks it, cheaply and from
// any goroutine:
//
//	f := agent.Fence()
//	if !f.Valid() { refuse }
//	... act, tagging what it writes with f.Epoch() ...
//	<-f.Done() // ended: undo or forget what was done under f
//
// A Fencing is valid from the join until the first of:
//
//   - the lease deadline passes. The deadline is known locally: the time
//     the last answered keep-alive was sent (not answered) plus the TTL,
//     less a margin (max(TTL/10, 100 ms)); etcd renews from when it
//     receives the keep-alive, so the node stops before etcd can expire
//     the lease. Keep-alives are sent every TTL/3 by a goroutine of the
//     incarnation, and a timer goroutine ends the Fencing at the deadline,
//     whatever the agent's loop or its etcd calls are doing. Valid itself
//     compares the clock with the deadline, so it is false from the
//     deadline on even before the timer has run;
//   - etcd answers that it no longer knows the lease;
//   - the node is superseded: its epoch in etcd (NodeEpochKey) is no
//     longer this incarnation's, because another process joined under the
//     same name. A watch of that key sees it at once; a write whose epoch
//     guard fails sees it too;
//   - the node is removed (smbctl node rm), or Leave is called.
//
// When it ends, the server admits nothing (no new connection, no
// SESSION_SETUP) and every connection is closed (server.EndConnections,
// race-free with the listeners' Control.Accept): requests are no longer
// served, sessions end, clients reconnect elsewhere. A Fencing never
// becomes valid again. After a lost lease Run joins again — with a new
// lease and the next epoch, unless another process took the name
// meanwhile (then it is superseded) — and admits work once the
// configuration is loaded; Fence then returns the new Fencing. A
// superseded node's Run returns ErrSuperseded and a removed node's
// ErrRemoved: smbnode exits.
//
// A fenced node that lost its lease or was superseded also abandons its
// durable opens (server.AbandonDurable): their records stay in etcd, and
// the owners of their files keep them for their clients to reconnect
// through other nodes. The server's Control.SetValid is the Fencing's
// Valid, so a request read after the deadline is not served even before
// the connections are closed.
//
// A durable open's record is published at once on its grant
// (server.OnDurableChange kicks Run), with what another node needs to
// take it over (DurableFiles), and without the node's lease; a join
// clears an earlier incarnation's open records but those of durable opens.
//
// Every write the node makes to etcd (sessions, channels, opens, the live
// record, the clearing of an earlier incarnation's opens) is a
// transaction guarded by Compare(Value(NodeEpochKey(name)) == epoch), and
// none is made once the Fencing is no longer valid. Every etcd call is
// bounded by TTL/3, well under the TTL.
//
// The ShardMap (shards.go) is the node's view of the shard assignment
// (ShardKey), the peer.Routes of its node/peer Router: it follows the live
// records and shard records, takes free shards the node ranks first for,
// rebuilds them (Recover) before answering for them, gives idle shards up
// to better-ranked nodes, and answers for a shard only while the Fencing
// is valid. It runs on goroutines of its own, with etcd calls bounded by a
// second, and learns its lease and epoch from its own live record.
//
// Concurrency: one goroutine (Run) owns the agent's configuration and
// publication state and makes the etcd calls but for the incarnation's
// own (keep-alive, epoch watch); the node is changed only through its own
// concurrency-safe methods, and no mutex is held across an etcd call.
// Ending a Fencing runs on whichever goroutine ended it. etcd is never on
// a request's path: sessions and opens are published by a periodic sweep
// of the server's tables.
//
// Invariant: the node acts on cluster state only while its Fencing is
// valid, and every write it makes to etcd is guarded by its incarnation's
// epoch.
package cluster
