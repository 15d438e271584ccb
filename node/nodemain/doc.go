// Package nodemain wires an smbnode process together: it parses flags and
// the optional config file, opens the shares, starts the SMB server on every
// listen address and shuts it down gracefully on SIGTERM or SIGINT: in a
// cluster the node leaves the interface list first, then the server
// answers the requests it is serving and closes its connections (forcibly
// past --shutdown-timeout), and last the node leaves the cluster.
//
// In a cluster the node joins before it listens: its --listen addresses
// that are public (those it was admitted with) are not bound then, but
// served by publicAddrs (addresses.go) only while the agent holds them,
// with --address-hook run around each; the others are bound at start.
//
// Invariant: every configuration error is reported before the first
// listener opens, so a node either starts complete or not at all.
package nodemain
