// Package vfstest holds what vfs backends and their users test with: the
// conformance suite TestFS that every backend must pass (osfs and memfs
// run it, which makes memfs a faithful stand-in for osfs in handler
// tests), and TrackOpens, a wrapper that counts open files so server tests
// can assert that nothing leaks.
//
// Invariant: the suite asserts only what the vfs contract (and osfs's
// documented name rules) promise, so a passing backend is interchangeable
// with any other.
package vfstest
