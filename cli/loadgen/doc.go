// Package loadgen is smbctl's load generator: it drives read, write and
// mixed workloads against one file over SMB connections, measures latency
// in a fixed-size log-bucket histogram and checks every block it reads
// against a deterministic data pattern. RunOpen drives the open/close
// workload (open, optional read, close, over many files or one hot file)
// and ProbeBreaks measures how long a conflicting open takes to break
// another connection's lease. SMBOptions.Addrs spreads connections over
// several servers: connection i goes to server i mod n.
//
// Invariant: the measured loop allocates nothing of its own per operation
// (histograms are fixed arrays owned by one worker goroutine, pattern checks
// compare against a precomputed buffer), so the generator's cost stays small
// beside the server's.
//
// loadgen talks to servers only through Target (OpenTarget for the
// open/close workload), so it is tested without a server; native.go adapts
// smbctl's own client (cli/smbc) to them and smb.go adapts
// github.com/cloudsoda/go-smb2. The lease-break probe needs break
// notifications, which only cli/smbc delivers.
package loadgen
