// Package service implements the smbcluster admin gRPC API
// (proto/smbcluster/admin/v1) over etcd: one adapter file per service
// (node.go, share.go, user.go, session.go, cluster.go), input validation
// (validate.go), the share roots (roots.go), bearer-token authentication
// (auth.go) and the mapping of storage errors to gRPC codes (errors.go).
//
// Invariant: nothing is written to etcd before every field of the request
// has been validated, and every error a handler returns carries a gRPC code
// and a message a person can act on. A share path is accepted only at or
// under a configured share root (Options.ShareRoots), after symlinks are
// resolved as the coordinator's host sees them: no roots, no shares. The
// service holds no state of its own: any number of coordinators may serve
// the same etcd.
package service
