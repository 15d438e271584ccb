// Package command implements smbctl's commands: one file per noun
// (bench.go, version.go …), listed in the nouns table in main.go, each
// printing through a Printer that renders -o table or -o json.
//
// Invariant: Main never exits the process and writes only to the writers
// it is given; its return value is one of the Exit* codes, which scripts
// may rely on.
package command
