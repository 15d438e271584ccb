// Package mesh is a node's one transport to the other nodes of its
// cluster: the gRPC connection to each of them, shared by every service
// that talks node to node (node/peer's PeerService, node/handoff's
// SessionService), the end of a node's connection when its incarnation
// ends (NodeGone), and the one way to ask every other node at once
// (Broadcast).
//
// As etcd's rafthttp.Transport keeps one peer per member, a Mesh keeps one
// *grpc.ClientConn per node address, dialed lazily with the cluster's dial
// options; callers make their typed clients over it. Memory is the same
// transport in one process, over in-memory listeners, for unit tests.
//
// Invariant: a node has at most one connection to each other node's
// address at a time; a connection closed by NodeGone or Close is never
// handed out again. No mutex is held across a dial's use or an RPC.
package mesh
