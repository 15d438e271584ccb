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
// Invariant: TestTorture fails, naming them, exactly when some allowlisted
// test does not have the expected outcome.
package torture
