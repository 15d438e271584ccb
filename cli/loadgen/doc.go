// Package loadgen is smbctl's load generator: it drives read, write and
// mixed workloads against one file over SMB connections, measures latency
// in a fixed-size log-bucket histogram and checks every block it reads
// against a deterministic data pattern.
//
// Invariant: the measured loop allocates nothing of its own per operation
// (histograms are fixed arrays owned by one worker goroutine, pattern checks
// compare against a precomputed buffer), so the generator's cost stays small
// beside the server's.
//
// loadgen talks to servers only through Target, so it is tested without a
// server; native.go adapts smbctl's own client (cli/smbc) to Target and
// smb.go adapts github.com/cloudsoda/go-smb2.
package loadgen
