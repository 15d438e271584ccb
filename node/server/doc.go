// Package server is the SMB2/3 connection engine: it accepts connections,
// frames and decrypts messages, splits compounds, enforces the credit window,
// verifies signatures, resolves the session, tree and open a request names,
// dispatches through one declarative command table, and signs, encrypts and
// writes the responses.
//
// The shape follows net/http: an exported Server with Serve and Shutdown, an
// unexported conn per connection with its own read loop, one writer goroutine
// and per-request goroutines bounded by the credits granted. Shutdown is
// graceful: connections stop reading, the requests read are answered, then
// each connection ends with a FIN; Close is the forcible path.
//
// Invariant: every cross-cutting check (negotiated? session? tree? open?
// signed? encrypted? credits?) is made here, once, before a handler runs;
// handlers receive a resolved *Request and return a response or an error.
//
// Lock order (outermost first): Server.mu → Session.mu → conn.mu, and
// Tree.mu innermost (admitOpen takes it under the first two). Nothing is
// called on the network, the disk or etcd while one of these is held.
package server
