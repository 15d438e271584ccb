// Package memfs is an in-memory vfs backend for handler tests, and the
// oracle that osfs is checked against (both pass vfstest.TestFS).
//
// Invariant: memfs behaves like osfs on every operation the vfs contract
// names — the same name rules (absolute names, NUL bytes, empty and "."
// components are syscall.EINVAL; ".." is syscall.EACCES), the same errors,
// the same derived DOS attributes — minus what a memory tree cannot have
// (symbolic links, a real statfs). Files keep POSIX semantics: an open file
// stays readable and writable after Remove. One mutex guards the whole tree;
// times come from an injectable clock.
package memfs
