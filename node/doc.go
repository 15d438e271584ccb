// Command smbnode is one SMB3 node of an smbcluster.
//
// Invariant: main only hands its arguments to nodemain.Run, where the
// flags, the wiring and the node's lifecycle live.
package main
