// Package server is the SMB2/3 connection engine: it accepts connections,
// frames and decrypts messages, splits compounds, enforces the credit window,
// verifies signatures, resolves the session, tree and open a request names,
// dispatches through one declarative command table, and signs, encrypts and
// writes the responses.
//
// The shape follows net/http: an exported Server with Serve and Shutdown, an
// unexported conn per connection with its own read loop and per-request
// goroutines bounded by the credits granted. There is no writer goroutine:
// whoever made a response writes it under the connection's write lock
// (conn.wmu), the reader batching its own small ones. Shutdown is
// graceful: connections stop reading, the requests read are answered, then
// each connection ends with a FIN; Close is the forcible path.
//
// Invariant: every cross-cutting check (negotiated? session? tree? open?
// signed? encrypted? credits?) is made here, once, before a handler runs;
// handlers receive a resolved *Request and return a response or an error.
//
// Lock order (outermost first; docs/ARCHITECTURE.md says the same):
// Server.mu → Session.mu → Tree.mu (admitOpen takes all three), and
// conn.wmu → conn.mu (a failed write closes the connection). conn.mu and
// Open.mu are leaves: nothing is locked under them. The state package's
// table lock is a leaf too. Nothing is called on the disk or etcd while
// one of these is held, nor on the network but under conn.wmu, which
// exists to serialize the socket's writes.
package server
