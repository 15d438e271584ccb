// Package statev1 holds the records the cluster keeps in etcd (generated
// from records.proto), the etcd key layout (keys.go), and the two helpers
// the coordinator and the nodes must agree on byte for byte: sealing secrets
// with the cluster secret (seal.go) and hashing join tokens (token.go).
//
// Invariant: every etcd key the project reads or writes is built by a
// function in keys.go; no other file spells a key.
package statev1
