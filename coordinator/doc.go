// Command smbcoord is the smbcluster coordinator: a stateless gRPC admin
// API (proto/smbcluster/admin/v1) over the cluster's etcd. Run one or
// several against the same etcd.
//
//	smbcoord --listen ADDR (--etcd ENDPOINTS | --embedded-etcd DIR)
//	         --tls-cert F --tls-key F [--client-ca F] --token-file F --secret-file F
//	         --share-root DIR ...
//	smbcoord --dev-loopback-insecure --listen 127.0.0.1:7445 --embedded-etcd DIR
//	         --token-file F --secret-file F --share-root DIR ...
//
// Shares may be created only at or under a --share-root (symlinks resolved
// as this host sees them); without one, every share path is refused.
//
// An embedded etcd (--embedded-etcd DIR) has no TCP port: it serves only
// the unix socket DIR/client.sock, and DIR is kept mode 0700 and must be
// the starting user's, so no other local user can reach etcd and write
// records past the coordinator. Nodes join it with
// --etcd unix:///ABS/DIR/client.sock, on this host and as this user.
//
// The development mode serves plaintext on loopback, where every local
// user can connect, so it still requires a bearer token: it creates
// --token-file (mode 0600) if missing, refuses one other users can read,
// and links it from $XDG_CONFIG_HOME/smbctl/dev/HOST:PORT.token (default
// ~/.config) of the user who started it, where that user's smbctl finds
// it without flags (package coordinator/devtoken). A token file rather
// than a Unix socket checked with SO_PEERCRED: the admin API, smbctl's TLS
// and token handling and the port stay those of production, and nothing
// but file permissions has to be trusted.
//
// Invariant: without a --share-root no share path is accepted, and the
// development mode serves only on loopback and only to a bearer token.
package main
