// Package integration holds the end-to-end acceptance tests: real SMB
// clients that nobody on this project wrote (smbclient, impacket,
// github.com/cloudsoda/go-smb2) drive a server started by
// [github.com/smbcluster/smbcluster/integration/framework], and every
// result is checked both on the wire and on the disk behind the share.
//
// The server is smbnode by default; SMBCLUSTER_TARGET=samba runs the same
// tests against a private smbd, which is how the tests themselves are
// validated. `go test -short` skips the slow parts (100 MiB transfers,
// 10,000-entry directories). A test skips only when its client program is
// not installed.
//
// Invariant: a test leaves nothing behind outside its t.TempDir and its
// server's process, and asserts on observable results only (no timing).
package integration
