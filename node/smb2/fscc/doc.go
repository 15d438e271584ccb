// Package fscc encodes and decodes the [MS-FSCC] structures that travel
// inside SMB2 QUERY_INFO, SET_INFO, QUERY_DIRECTORY and IOCTL payloads: file
// and filesystem information classes, directory entries, extended
// attributes, FSCTL payloads ([MS-SMB2] 2.2.31.4, 2.2.32.x), self-relative
// security descriptors ([MS-DTYP] 2.4), and the Windows name-matching
// algorithm used by directory enumeration ([MS-FSA] 2.1.4.4).
//
// Invariant: the package does no I/O and imports nothing of the project but
// utf16le. Every Decode validates each length and offset against the buffer
// it is given and returns an error instead of panicking on any input;
// Encode writes exactly Size() bytes into a buffer the caller sized.
// Times are Windows FILETIME values (100 ns since 1601-01-01 UTC).
package fscc
