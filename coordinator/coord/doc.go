// Package coord wires a coordinator together: the cluster's etcd (given by
// endpoints, or embedded), the cluster secret that seals password hashes,
// and the admin gRPC server on its listener, and in the loopback
// development mode the bearer token linked for the starting user's smbctl.
// It is the one copy of that wiring for smbcoord (coordinator/main.go),
// `make run` (deploy/localcluster) and the integration framework.
//
// Invariant: the development mode never serves on an address that is not
// loopback; Start refuses before serving.
package coord
