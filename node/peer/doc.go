// Package peer makes the per-file state of a cluster one thing: every
// file's share modes, delete pending, oplocks, leases and byte-range locks
// live in the state.Table and state.LockTable of the node that owns the
// file's shard, and the other nodes reach them over node-to-node gRPC
// (proto/smbcluster/peer/v1).
//
// A Router is the node's state.Files and state.Locks. For a file whose
// shard the node owns it calls the local tables directly (no network hop);
// for any other it calls the owner, naming the shard assignment it routed
// with, and routes again when the owner answers that the assignment
// moved. The owner holds a proxy state.Open for each open another node
// holds; the proxy's Breaker delivers breaks to the holder node, which
// hands them to its own open (and so to the client's connection).
//
// A Service answers the other nodes: the owner side (Admit, Call, Wait)
// and the holder side (Deliver, Held, TakeDurable, CloseAppInstance).
// Each operation of Call and Wait is a message of its own in
// CallRequest's oneof, answered by a handler of its own (calls.go; ops.go
// names them for metrics); the copies between node/state's types and
// the messages are in convert.go alone.
//
// The Router reaches the other nodes through the node's one transport
// (node/mesh): their connections, shared with node/handoff, and
// mesh.Broadcast for every question put to all of them (ask in
// router.go); it keeps only its Exchange stream to each (mux.go).
//
// Durable opens move between nodes (durable.go, orphans.go): a reconnect
// through another node takes the open over from its holder, or — when the
// holder died — from the owner, which keeps a dead holder's durable opens
// in force from their records in etcd; either way the owner re-keys the
// open's entry (HandoverOp) without releasing its share modes, caching
// or locks.
//
// A close whose answer cannot matter does not wait for it: the owner
// serves it in order with what the holder sends after it, and has the
// holders flush such closes before it refuses anything an open could
// cause (closing.go).
//
// An owner may delegate the admission of plain opens of a file to a
// node that opens it (deleg.go): the holder admits and closes them with
// no call, under a stand-in open at the owner that the owner recalls
// before anything those opens could change.
//
// Invariants: an open is admitted at most once cluster-wide (a holder
// whose Admit failed after it was sent removes it again, so a cancelled
// CREATE leaves no phantom open behind); once a CLOSE is answered no other
// client meets its open (a close on its way is flushed before the owner
// refuses anything for it); a node answers for a shard only
// while Routes says it owns it at the revision the caller routed with; no
// mutex is held across an RPC.
//
// The Router is composed of its roles, each a type with its own lock
// where it has state: holdings (the opens this node holds, as their
// holder), owner (other nodes' opens of the files it owns: proxies,
// closes leaving, pending deletes, orphans), delegations (deleg.go),
// notifier (change notify, notify.go) and muxPool (the exchanges with the
// peers, mux.go); lockSide, cachingSide, nameSide and durableSide are
// the holder side's parts of the state.Files API, with no state of their
// own, and handlers serve Call and Wait at the owner. Router itself has
// no mutex but dropMu.
//
// Lock order: Router.dropMu before holdings.mu before owner.mu before
// delegations.mu (dropStale meets the held opens and the proxies in one
// step; the owner adds or drops a grant's stand-in in one step with the
// grant, and the Router admits or closes a delegated open in one step
// with its books; a delegations method takes nothing while it holds its
// mu); a mux's mu before the mesh's (a stream opened on the node's
// connection); notifier.mu before an outbox's mu (a change is queued to a
// node under the notifier's lock), and notifier.mu is taken under no
// other lock of the package; delegations.mu, muxPool.mu, an outbox's mu,
// Service.mu and the mesh's mu are leaves.
package peer
