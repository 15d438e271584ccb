// Package command implements smbctl's commands: one file per noun
// (node.go, share.go, user.go, session.go, open.go, lock.go, status.go, bench.go,
// version.go, completion.go), listed in the nouns table in main.go. Admin
// nouns are tables of verbs (verb.go) that talk to the coordinator's
// admin gRPC API (proto/smbcluster/admin/v1) through one connection whose
// settings come from flags, then the environment, then the config file
// (client.go); errors.go turns gRPC codes into messages that say what to
// do and into exit codes. Every command prints through a printer
// (printer.go; cells formatted in view.go) that renders -o table or
// -o json; the JSON field names are the stable interface for scripts. A
// password is read from the terminal without echo (password_linux.go).
//
// The bench noun does not use the coordinator: it drives SMB servers
// itself through cli/loadgen (bench.go, bench_open.go for the open/close
// and lease-break runs, bench_output.go for the report).
//
// Invariant: Main never exits the process and writes only to the writers
// it is given (and, to prompt for a password, the terminal); its return
// value is one of the Exit* codes, which scripts may rely on. Nothing here
// imports node/... directly; through cli/loadgen and cli/smbc, smbctl
// links only the client's leaves of it — the wire codec, its crypto, the
// NTLMv2 initiator and the socket reader — never the engine, shares or
// state (layers_test.go holds this).
package command
