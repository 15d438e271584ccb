// Package servertest runs an in-process SMB server for engine tests and
// drives it with a small raw SMB2 client.
//
// Start serves a memfs-backed disk share "share" (and "encshare", which
// requires encryption) on 127.0.0.1 with the users alice and bob; the
// server's log is recorded and any record that mentions a panic fails the
// test; cleanup shuts the server down and fails the test if an open or a
// file handle leaked.
//
// Conn is a client that speaks the wire format directly: it frames, signs,
// encrypts and numbers messages itself, authenticates with its own NTLMv2
// initiator ([MS-NLMP] 3.1.5) and derives the session keys as a client
// does ([MS-SMB2] 3.2.5.3), so that tests can send anything — a valid
// request, a compound, a wrong signature, a reused MessageId or raw bytes.
//
// Invariant: every read from the network has a deadline (Conn.Timeout), so
// a test that waits for a response the server never sends fails instead of
// hanging.
package servertest
