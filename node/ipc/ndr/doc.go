// Package ndr encodes and decodes the subset of NDR (Network Data
// Representation, [C706] chapter 14, as profiled by [MS-RPCE] 2.2.5) that the
// IPC$ services need: little-endian primitives, alignment, unique and ref
// pointers with referent ids, and conformant varying UTF-16 strings.
//
// Alignment is always relative to the start of the stub data, which is where
// a Writer's buffer and a Reader's input begin.
//
// Invariant: a Reader never panics and never reads past its input; the first
// malformed item makes the Reader sticky-failed with ErrMalformed, every later
// read returns zero values, and Err reports the failure.
package ndr
