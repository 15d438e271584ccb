// Package dcerpc implements the server side of connection-oriented DCE/RPC
// ([C706] chapter 12, with the [MS-RPCE] 2.2.2 and 3.3 extensions) as used
// over SMB named pipes: the PDU codecs (bind, bind_ack, bind_nak,
// alter_context, request, response, fault) and Conn, the per-pipe association
// that negotiates presentation contexts, reassembles fragmented requests,
// dispatches them to an Interface and fragments the responses.
//
// Only little-endian NDR with ASCII characters is accepted (data
// representation 0x10 0x00 0x00 0x00), and only authentication level none:
// over SMB the pipe is already protected by the SMB session.
//
// Invariant: Decode never panics and never reads outside its input; Conn
// answers every complete PDU with zero or more whole PDUs and never lets a
// client make it hold more than maxRequest bytes of a request.
package dcerpc
