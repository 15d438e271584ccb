// Package handoff lets the channels of one SMB session live on several
// nodes of a cluster ([MS-SMB2] 3.3.5.5.2, binding).
//
// A session stays on the node that authenticated it (its home). When a
// client binds a channel to it through another node, that node asks the
// node that made the session, which the id's tag names (tag.go), whether
// it holds it (Find; one that handed the session on with a connection
// says where to) and hands the connection
// to it (Relay): the home node serves the connection as one of its own
// (server.Server.Adopt) and the arrival node carries its bytes. The
// binding's authentication, the channel's signing key, every later
// request on the channel, its async completions and the breaks sent on
// it thus run where the session's trees, opens and other channels are,
// exactly as on a single node; the session is findable on every node the
// moment its SESSION_SETUP completes, since nothing needs to be published
// first.
//
// The bytes of a handed-over channel's large READs and WRITEs move at the
// arrival node, from and to its own descriptor of the file, which it
// opens through its own share by the name the home node gives
// (RemoteFile: share, vfs path, FileID; each node has its own mount), or
// else relays the request. Durability follows the bytes: the arrival node
// flushes a write-through WRITE on its descriptor before the home node
// answers, and a FLUSH of an open has every arrival node that wrote
// through it flush its own (a sync message on the channel's Relay).
//
// A Peers is the node's server.SessionPeers and, with Service, serves the
// other nodes (the home side) over proto/smbcluster/peer/v1's
// SessionService, on the node-to-node gRPC server and its mutual TLS. It
// calls the other nodes over the node's one transport (node/mesh), whose
// NodeGone ends the relays to a node whose incarnation ended.
//
// The arrival side lives here. The node's server decides that a binding
// goes to another node and gives the connection up (server.Hijacked: the
// net.Conn, the frame it read, the reader holding what it read ahead, and
// a ClientWriter that writes whole frames and sendfile); the
// server.Carrier Peers.Handoff returned carries it (arrival.go) and serves
// its large READs and WRITEs from the node's own descriptors
// (arrivalread.go, arrivalwrite.go, arrivalfile.go). The home side's
// answers — running a request as if read from the connection — are the
// server's (server.Adopted). A connection that stays with its server and
// relays one session (server.SessionRelay) sends, with each frame, the
// credits its server granted the frame's requests, as a typed field of
// the Relay message (RelayMessage.grants), which the home node records
// (Adopted.Grant) before its server reads the frame.
//
// Lock order: arrival.mu → clientRelay.smu, which serialize the sends of
// a Relay stream and are held over them only; remoteFiles.mu and
// keyring.mu are leaves, held over no call to another node and no file's
// I/O. A write to the client holds the server's ClientWriter lock alone.
//
// Invariant: a connection is served by one node at a time — the arrival
// node only carries the bytes of a connection it handed over, and the
// home node alone runs its requests, under the session's one table.
package handoff
