// Package vfs is the storage contract the SMB engine serves shares from.
//
// A share is an FS rooted at one directory. Every name passed to an FS is
// slash-separated and relative to that root ("" is the root itself); an
// implementation must never resolve a name to anything outside the root, for
// any input, including "..", absolute paths and symbolic links.
//
// Invariant: vfs knows nothing of SMB wire formats; the share layer maps
// between SMB semantics and this interface, and errors come back as the
// standard io/fs and syscall errors (fs.ErrNotExist, fs.ErrExist,
// syscall.ENOTEMPTY, syscall.EISDIR, syscall.ENOTDIR, fs.ErrPermission,
// syscall.ENOSPC …) so that one mapping turns them into NTSTATUS codes.
package vfs
