// Package robustness is the cluster's robustness suite (issue 23): random
// concurrent SMB traffic from many clients against a cluster on the
// multi-host test bed, a nemesis injecting faults at random times, and a
// checker over the recorded history.
//
// The workload (workload.go) runs clients of cli/smbc, each connection on
// the next node's public address, on a small set of files: registers
// (whole small files written and read without caching), counters
// incremented only under an exclusive byte-range lock, and files opened
// exclusively or shared by share mode; and (ops.go) durable and
// persistent opens reconnected through the next node after their
// connection is dropped, names published by rename and deleted, and
// writes read back through another channel of a session that two of the
// clients bind on two nodes. Every operation is recorded
// (history.go) with its invoke and complete times on one monotonic clock,
// its client and its outcome: ok, failed (an NTSTATUS before anything
// changed) or unknown (no answer, or an error after the change was sent).
//
// The nemesis (nemesis.go) kills and restarts nodes, stops them past
// their lease, cuts them off from their peers or etcd, kills the etcd
// leader, partitions an etcd member, drops or delays a node's packets
// and steps a node's clock (node/clock's test-only offset): one fault
// at a time, or one step in four two at once on different targets,
// every fault of a step undone before the next.
//
// The checker (checker.go, checker_ops.go) decides the history:
// porcupine for the linearizability of the registers, the names and the
// files read back through another channel, invariants for the rest.
//
// Invariant: the schedule of faults and the operations' choices are a
// function of the seed; the timing, and so the history, is not.
package robustness
