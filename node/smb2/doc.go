// Package smb2 is the SMB2/SMB3 wire format ([MS-SMB2] section 2): the packet
// header, the request and response of every command (one file per command),
// compound chaining, the transform header, NTSTATUS codes and the Direct
// TCP transport's 4-byte header (transport.go: the one place that frames
// a message on the stream).
//
// Invariant: this package does no I/O and imports nothing of the project
// but its own leaf utf16le.
// Decoders validate every offset and length once, against the whole message,
// and never panic on any input; variable-length fields alias the input buffer.
// Request types have Decode(msg []byte) error, where msg is the whole PDU
// starting at its 64-byte header (SMB2 offsets are header-relative). Response
// types have Size() int and Encode(b []byte) writing the body that follows
// the header, with offsets computed as HeaderSize + position in b.
package smb2
