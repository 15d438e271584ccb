// Package smbc is smbctl's SMB2/3 client: one TCP connection carrying one
// session and one tree, with requests pipelined up to the credits the
// server grants. It is built for measuring servers, so it stays out of
// their way: a READ's payload is received straight into the caller's
// buffer and a WRITE's payload is sent from it (writev), the measured path
// allocates nothing per request, and one receiver goroutine routes
// responses to the goroutines waiting on them by MessageId.
//
// Beyond READ and WRITE it opens and closes files the way the open/close
// benchmark needs (OpenRead returns a File value; the open costs one
// request allocation), asks for leases (OpenLease), and hands the oplock
// and lease break notifications the server sends (MessageId 0xFFFF…FFFF)
// to Conn.Breaks, stamped with when the receiver read them, for the
// lease-break probe; AckLeaseBreak acknowledges one.
//
// It is a multichannel client too ([MS-SMB2] 3.2.4.1.7): Conn.Bind opens
// a further connection to any address and binds it to the session as a
// channel (a SESSION_SETUP with SMB2_SESSION_FLAG_BINDING signed with the
// session's signing key; the channel's own signing key from the binding's
// authentication and, for 3.1.1, the channel's preauth integrity hash);
// Conn.Interfaces reads the server's interface list
// (FSCTL_QUERY_NETWORK_INTERFACE_INFO) and ChannelAddrs makes channel
// addresses of it; File.Spread uses one open through several channels,
// each request on the live channel with the fewest in flight, a request
// whose channel dies sent again on another. Conn.Stats counts the READs
// and WRITEs each connection carried.
//
// It speaks dialects 2.0.2 to 3.1.1, logs on with NTLMv2, signs (HMAC-SHA256,
// AES-CMAC, AES-GMAC) and encrypts (AES-128/256-CCM/GCM) as negotiated, and
// verifies the signature of every response of a signed session. The wire
// codec and the crypto primitives are node/smb2 and node/smb2/signing, leaf
// packages checked against Microsoft's and NIST's vectors; the load
// generator's results against Samba in `make bench` are the check that this
// client is a fair one.
//
// Invariant: the measured path, a READ or WRITE through an open File,
// allocates nothing per request (alloc_test.go).
package smbc
