// Package signing holds the SMB2/SMB3 message-integrity and confidentiality
// primitives: the SP800-108 key derivation of [MS-SMB2] 3.1.4.2 and the
// session keys of 3.2.5.3.1 / 3.3.5.5.3, HMAC-SHA256 / AES-CMAC / AES-GMAC
// signing (3.1.4.1), AES-CCM / AES-GCM encryption with the SMB2
// TRANSFORM_HEADER (2.2.41, 3.1.4.3), and the SHA-512 preauth integrity hash
// (3.3.5.4, 3.3.5.5).
//
// Invariant: every Signer and every AEAD returned here is safe for concurrent
// use and allocates nothing per call in steady state (per-call scratch state
// lives in a per-key sync.Pool); decoders (ParseTransformHeader, Open) never
// panic on any input. The package imports only the standard library.
package signing
