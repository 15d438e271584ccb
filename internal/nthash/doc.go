// Package nthash is the NT one-way function of a password, NTOWFv1 of
// [MS-NLMP] 3.3.1: MD4 of the password's UTF-16LE encoding. It is the one
// copy for the nodes' NTLMv2 (node/auth, which keys NTOWFv2 on it) and the
// coordinator, which stores it sealed instead of the password.
//
// It sits outside node/ so that the admin plane can use it without
// importing the engine; it imports only the UTF-16LE leaf.
//
// Invariant: this is the one copy of NTOWFv1 in the project.
package nthash
