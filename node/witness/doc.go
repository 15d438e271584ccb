// Package witness serves the Service Witness Protocol ([MS-SWN]): the
// witness RPC interface (v1 and v2) a client such as Windows registers
// with on one node of a scale-out cluster to be told when the node it uses
// becomes unavailable (RESOURCE_CHANGE), when its addresses change
// (IP_CHANGE), or when the operator wants it to move (CLIENT_MOVE,
// SHARE_MOVE).
//
// Hub holds the registrations a node knows (in a cluster, a mirror of the
// cluster's records, so that a client may register on one node and wait on
// another) and their pending notifications; AsyncNotify calls wait on it.
// Every node computes resource and address changes from the same cluster
// state, so each queues the same notifications and whichever node the
// client asks delivers them; a move is a record the operator writes, queued
// on every node and withdrawn everywhere once delivered.
//
// Lock order: Hub.mu is a leaf; no call into a Store is made under it.
//
// Invariant: every [in] stub is decoded with bounds checks (package ndr);
// a malformed one is answered with a fault, never a panic.
package witness
