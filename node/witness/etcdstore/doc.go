// Package etcdstore keeps the witness registrations of a cluster in etcd
// (the keys in proto/smbcluster/state/v1/keys_witness.go) and feeds a
// node's witness.Hub from them: the registrations every node mirrors, the
// cluster's addresses and whether their nodes are live and undrained (from
// the node and live records), and the operator's moves.
//
// Invariant: no etcd call is made under a lock; the Hub is only told what
// etcd said, so every node's Hub converges on the same registrations.
package etcdstore
