// Package share is the backend of disk shares: the file commands the engine
// (node/server) hands to a share, on top of a vfs.FS, and the adapter that
// serves IPC$ named pipes (node/ipc) as opens (pipe.go).
//
// A command with much to it has its own file: CREATE (create.go, its
// create contexts in contexts.go), QUERY_DIRECTORY, QUERY_INFO, SET_INFO,
// IOCTL (ioctl.go; server-side copy keys in resumekey.go), LOCK and
// CHANGE_NOTIFY; READ, WRITE, FLUSH and CLOSE on an open are in open.go.
// Beside them: names and case-insensitive lookup (name.go, casefold.go),
// access checks and security descriptors (access.go, security.go), named
// streams, extended attributes, sparse files and allocation, oplocks and
// leases on files and directories (lease.go, dirlease.go) and durable
// handles (durable.go).
//
// What concerns a file rather than one open — share modes, pending
// deletes, oplocks and leases, byte-range locks — lives in node/state,
// whose tables a node's shares share (Disk.SetState), as they share
// their resume keys (Disk.SetResumeKeys).
//
// Invariant: every name a client sends is validated here and then resolved
// by the vfs beneath the share root; handlers never build host paths.
package share
