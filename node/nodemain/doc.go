// Package nodemain wires an smbnode process together: it parses flags and
// the optional config file, opens the shares, starts the SMB server on every
// listen address and shuts it down gracefully on SIGTERM or SIGINT.
//
// Invariant: every configuration error is reported before the first
// listener opens, so a node either starts complete or not at all.
package nodemain
