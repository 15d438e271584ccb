// Package nthash is the NT one-way function of a password, NTOWFv1 of
// [MS-NLMP] 3.3.1: MD4 of the password's UTF-16LE encoding. It is the one
// copy for the nodes' NTLMv2 (node/auth, which keys NTOWFv2 on it) and the
// coordinator, which stores it sealed instead of the password.
//
// It sits outside node/ so that the admin plane can use it without
// importing the engine; it imports only the UTF-16LE leaf.
package nthash

import (
	"github.com/smbcluster/smbcluster/node/smb2/utf16le"
	"golang.org/x/crypto/md4" //nolint:staticcheck // NTOWFv1 is MD4 by definition
)

// Of returns MD4(UNICODE(password)).
func Of(password string) [16]byte {
	h := md4.New()
	h.Write(utf16le.Append(nil, password))
	var sum [16]byte
	h.Sum(sum[:0])
	return sum
}
