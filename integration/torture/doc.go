// Package torture runs Samba's smbtorture conformance tests against the
// server: every test named in allowlist.txt, each in its own smbtorture
// process, two at a time, each in its own share.
//
// allowlist.txt lists the tests the server passes (one full name such as
// smb2.connect or smb2.read.eof per line, # starts a comment); it only
// grows. knownfail.txt lists allowlisted tests that are expected to fail,
// with the reason after a #; one of them passing is an error too, so the
// list stays honest. run-suites.sh runs whole suites (suites.txt) and writes
// a TSV of per-test results, which is how the allowlist is grown.
//
// Two runs, side by side (both are parallel tests, two processes each):
//
//   - TestTorture: one server (smbnode, or Samba with SMBCLUSTER_TARGET=samba).
//   - TestTortureCluster: three smbnode processes on 127.0.0.1-3 joined
//     through etcd and the coordinator, the shares and users added with
//     smbctl, every node serving the same directories; smbtorture connects
//     to a framework.RoundRobin forwarder that places each new TCP
//     connection on the next node in turn, as round-robin DNS or an L4
//     load balancer would. Each slot has its own forwarder, rewound before
//     each test, so a test's k-th connection always lands on node k mod 3:
//     its second connection meets its first one's opens from another node,
//     the same way on every run. Tests that fail only across nodes are in
//     cluster-knownfail.txt (same format, grouped by cause; the aim is an
//     empty list), and one of them passing fails the run as well.
//
// Every smbtorture process is killed after testTimeout (a test waiting for
// a notify that another node never sends hangs) and counted as a failure.
// Each run logs its wall time and pass/fail counts per suite.
//
// Running a part: the cluster run alone,
//
//	go test ./integration/torture -run 'TestTortureCluster' -v
//
// the single-node run alone with -run 'TestTorture$', one suite with
// -run 'TestTortureCluster/smbtorture/smb2.oplock', or any subset with
// SMBTORTURE_ALLOWLIST=FILE, a file in allowlist.txt's format read instead
// of allowlist.txt (SMBNODE_BIN must name a bin/smbnode: make build).
//
// Invariant: each test fails, naming them, exactly when some allowlisted
// test does not have the expected outcome on its target.
package torture
