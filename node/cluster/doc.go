// Package cluster is the node's cluster agent: it joins the cluster in
// etcd as the contract in proto/smbcluster/state/v1 (keys.go) describes and
// keeps the node in step with it.
//
// Join checks that the node was admitted (NodeKey exists and the join
// token matches), takes an etcd lease, bumps the node's epoch and publishes
// its NodeLiveRecord on the lease in one transaction, and loads shares,
// users and settings. Run then watches them and applies changes to the
// node live (a new share is served, a deleted share ends its tree
// connects, a deleted user's sessions end, a new password applies to new
// logons), publishes the node's sessions, channels and opens, acts on close
// requests, follows draining, and keeps the interfaces offered to
// multichannel clients (FSCTL_QUERY_NETWORK_INTERFACE_INFO) to the node's
// own addresses while it is live and not draining. Other nodes' addresses
// are not offered until a channel can be bound on another node than the
// session's (offerPeers in offer.go is that switch).
//
// At shutdown, after Run has returned, Drain takes the node out of the
// interface list (its server offers nothing, its live record lists no
// address) while the server finishes its requests; Leave then revokes the
// lease.
//
// What "draining" means here: the node refuses new sessions
// (STATUS_REQUEST_NOT_ACCEPTED) while existing sessions go on, and no node
// offers its addresses to clients any more.
//
// Invariant: the node admits new work only while it holds its lease. When
// the lease is lost (expired, or no keep-alive answer within the TTL) the
// node refuses new connections and sessions at once, and serves new work
// again only after it has joined again with a new lease and a new epoch.
//
// Concurrency: one goroutine (Run) owns the agent's state and makes every
// etcd call; the node is changed only through its own concurrency-safe
// methods, and no mutex is held across an etcd call. etcd is never on a
// request's path: sessions and opens are published by a periodic sweep of
// the server's tables.
package cluster
