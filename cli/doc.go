// Command smbctl administers an smbcluster and benchmarks SMB servers.
//
// Invariant: main only hands its arguments to command.Main, where every
// command lives (one file per noun).
package main
