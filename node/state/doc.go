// Package state holds the per-file state that must be coherent between all
// opens of a file: share modes, delete-pending, oplocks and leases (one
// lease per ClientGuid and LeaseKey, bound to one file, shared by that
// client's opens with the key; an oplock is held as the lease state it
// amounts to, so both break by the same rules). A lease on a directory
// caches no writes and breaks when its entries change (dirlease.go).
//
// It is reached only through narrow interfaces (OpenTable) keyed by a
// FileKey that is the same on every node sharing the filesystem, so that a
// cluster can move the table to the file's owner node behind the same
// interface. Nothing here knows SMB wire formats or connections: a grant
// that needs another open's oplock broken asks that open's Breaker.
//
// Lock order: OpenTable's mutex is never held while a Breaker is called or
// while waiting for an acknowledgment.
package state
