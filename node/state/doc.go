// Package state holds the per-file state that must be coherent between all
// opens of a file: share modes, delete-pending, oplocks and leases (one
// lease per ClientGuid and LeaseKey, bound to one file, shared by that
// client's opens with the key; an oplock is held as the lease state it
// amounts to, so both break by the same rules) and byte-range locks. A
// lease on a directory caches no writes and breaks when its entries
// change (dirlease.go). Durable opens are described by DurableRecords
// (durable.go) and change hands between nodes on a reconnect
// (handover.go); a node taking a shard over rebuilds its files' state
// from the nodes holding the opens (Restore, restore.go).
//
// It is reached only through two narrow interfaces keyed by a FileKey
// that is the same on every node sharing the filesystem: Files (the open
// and lease Table, opentable.go) and Locks (the LockTable, locks.go), so
// that a cluster can move the tables to the file's owner node behind the
// same interfaces (files.go; node/peer's router). Nothing here knows SMB
// wire formats or connections: a grant that needs another open's oplock
// broken asks that open's Breaker.
//
// Invariant: neither table waits or calls a Breaker while holding its
// mutex. The Table sends the breaks a call started once its mutex is
// released and waits for their acknowledgment without it; the LockTable
// waits for a blocked lock without it. So either can sit behind an RPC to
// the file's owner node.
package state
