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
