// Package share serves the file commands of disk shares (one file per SMB2
// command: create.go, read.go, write.go, query_info.go …) on top of a vfs.FS,
// and adapts IPC$ named pipes (pipe.go) to the engine.
//
// Invariant: every name a client sends is validated here and then resolved
// by the vfs beneath the share root; handlers never build host paths.
package share
