// Package store keeps the cluster's protobuf records in etcd for the
// coordinator: typed reads, create-if-absent and compare-mod-revision
// writes, counts, waits, and an embedded etcd for development and tests,
// reachable only through unix sockets in a directory of its user.
//
// Invariant: every write is one etcd transaction guarded by the record's
// create or mod revision, so two coordinators never overwrite each other's
// changes unseen; keys come only from proto/smbcluster/state/v1 (keys.go).
package store
