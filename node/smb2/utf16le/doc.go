// Package utf16le converts between Go strings and the little-endian UTF-16
// that SMB puts on the wire.
//
// Invariant: decoding never fails on odd lengths or unpaired surrogates; it
// reports them, so that callers can refuse a malformed name.
package utf16le
