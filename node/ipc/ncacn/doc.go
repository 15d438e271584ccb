// Package ncacn serves DCE/RPC over TCP (ncacn_ip_tcp, [C706] chapter 12,
// [MS-RPCE] 2.1.1.1): a Server accepts connections on listeners, each an
// association of package dcerpc's Conn with the listener's interfaces and
// optional authentication, and EndpointMapper answers ept_map ([C706]
// appendix O) for the interfaces served on other ports.
//
// Each connection has a reader goroutine, which frames PDUs by frag_length
// and hands them one at a time to the connection's call goroutine, so that a
// call that waits (a witness AsyncNotify) sees the client go away: the
// reader's end cancels the call's context.
//
// Invariant: a connection holds at most one PDU being read (64 KiB, the
// largest frag_length) and one being served; a PDU that breaks the protocol
// closes the connection, never the server.
package ncacn
