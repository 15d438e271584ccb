// Package dcerpc implements the server side of connection-oriented DCE/RPC
// ([C706] chapter 12, with the [MS-RPCE] 2.2.2 and 3.3 extensions) as used
// over SMB named pipes and TCP: the PDU codecs (bind, bind_ack, bind_nak,
// alter_context, request, response, fault) and Conn, the association
// (a pipe open or a TCP connection) that negotiates presentation contexts,
// reassembles fragmented requests, dispatches them to an Interface and
// fragments the responses.
//
// Only little-endian NDR with ASCII characters is accepted (data
// representation 0x10 0x00 0x00 0x00), with the NDR transfer syntax (NDR64
// is declined). With a Security, an association authenticates its client
// (auth.go: the legs carried by bind, alter_context and auth3) and then
// verifies, decrypts, signs and seals PDUs at the negotiated level,
// connect to privacy ([MS-RPCE] 2.2.2.11, 3.3.1.5.2); verification
// trailers are checked (vtrailer.go). An Interface may require a level.
//
// Invariant: Decode never panics and never reads outside its input; Conn
// answers every complete PDU with zero or more whole PDUs and never lets a
// client make it hold more than maxRequest bytes of a request.
package dcerpc
