// Package ipc serves the named pipes of the IPC$ share: a client CREATEs a
// pipe such as "srvsvc" and speaks connection-oriented DCE/RPC over it with
// WRITE and READ or FSCTL_PIPE_TRANSCEIVE ([MS-SMB2] 3.3.5.9, 3.3.5.15.1).
//
// It implements the srvsvc ([MS-SRVS]) calls that list shares and describe the
// server — what `smbclient -L` and Windows Explorer ask — and NetrWkstaGetInfo
// of wkssvc ([MS-WKST]). The DCE/RPC machinery lives in package dcerpc, the
// NDR codec in package ndr.
//
// Pipe semantics are those of a message-mode pipe: every DCE/RPC PDU the
// server produces is one message, a Read returns bytes of one message only,
// and reports more when the reader's buffer cut the message short (the SMB
// server then answers STATUS_BUFFER_OVERFLOW).
//
// Invariant: no client input makes a Pipe panic or hold unbounded memory:
// unprocessed input is at most one Write plus one incomplete PDU (frag_length
// is 16 bits), a reassembled request is bounded by dcerpc, and processing
// stops while unread output exceeds maxPendingOutput.
package ipc
