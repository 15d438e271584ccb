package smb2

import "github.com/smbcluster/smbcluster/node/smb2/utf16le"

// TREE_CONNECT request flags, 3.1.1 only ([MS-SMB2] 2.2.9).
const (
	TreeConnectFlagClusterReconnect uint16 = 0x0001
	TreeConnectFlagRedirectToOwner  uint16 = 0x0002
	TreeConnectFlagExtensionPresent uint16 = 0x0004
)

// Share types ([MS-SMB2] 2.2.10).
const (
	ShareTypeDisk  uint8 = 0x01
	ShareTypePipe  uint8 = 0x02
	ShareTypePrint uint8 = 0x03
)

// Share flags ([MS-SMB2] 2.2.10). The caching policy is the 0x30 field.
const (
	ShareFlagManualCaching            uint32 = 0x00000000
	ShareFlagAutoCaching              uint32 = 0x00000010
	ShareFlagVDOCaching               uint32 = 0x00000020
	ShareFlagNoCaching                uint32 = 0x00000030
	ShareFlagCachingMask              uint32 = 0x00000030
	ShareFlagDFS                      uint32 = 0x00000001
	ShareFlagDFSRoot                  uint32 = 0x00000002
	ShareFlagRestrictExclusiveOpens   uint32 = 0x00000100
	ShareFlagForceSharedDelete        uint32 = 0x00000200
	ShareFlagAllowNamespaceCaching    uint32 = 0x00000400
	ShareFlagAccessBasedDirectoryEnum uint32 = 0x00000800
	ShareFlagForceLevelIIOplock       uint32 = 0x00001000
	ShareFlagEnableHashV1             uint32 = 0x00002000
	ShareFlagEnableHashV2             uint32 = 0x00004000
	ShareFlagEncryptData              uint32 = 0x00008000
	ShareFlagIdentityRemoting         uint32 = 0x00040000
	ShareFlagCompressData             uint32 = 0x00100000
	ShareFlagIsolatedTransport        uint32 = 0x00200000
)

// Share capabilities ([MS-SMB2] 2.2.10).
const (
	ShareCapDFS                    uint32 = 0x00000008
	ShareCapContinuousAvailability uint32 = 0x00000010
	ShareCapScaleout               uint32 = 0x00000020
	ShareCapCluster                uint32 = 0x00000040
	ShareCapAsymmetric             uint32 = 0x00000080
	ShareCapRedirectToOwner        uint32 = 0x00000100
)

// TreeConnectRequest is SMB2 TREE_CONNECT Request ([MS-SMB2] 2.2.9). Path
// is the UNC path "\\server\share". With the 3.1.1 extension present the
// path is still found through PathOffset; tree connect contexts are ignored.
type TreeConnectRequest struct {
	Flags uint16
	Path  string
}

const (
	treeConnectRequestStructSize = 9
	treeConnectExtensionSize     = 16
)

// Decode parses the request from msg, the whole PDU.
func (r *TreeConnectRequest) Decode(msg []byte) error {
	b, err := requestBody(msg, treeConnectRequestStructSize)
	if err != nil {
		return err
	}
	r.Flags = le.Uint16(b[2:])
	off, n := uint32(le.Uint16(b[4:])), uint32(le.Uint16(b[6:]))
	lo := HeaderSize + 8
	if r.Flags&TreeConnectFlagExtensionPresent != 0 {
		// The path follows the 16-byte TREE_CONNECT_Request_Extension
		// ([MS-SMB2] 2.2.9.1). Windows makes PathOffset header-relative;
		// some clients make it relative to the extension: accept both.
		lo += treeConnectExtensionSize
		if off < uint32(lo) {
			off += HeaderSize + 8
		}
	}
	p, err := span(msg, off, n, lo)
	if err != nil {
		return err
	}
	r.Path, err = utf16le.Decode(p)
	return err
}

// Size returns the encoded body size.
func (r *TreeConnectRequest) Size() int {
	return bodySize(treeConnectRequestStructSize, utf16le.Len(r.Path))
}

// Encode writes the body into b[:r.Size()]. It never sets the extension.
func (r *TreeConnectRequest) Encode(b []byte) {
	put16(b, treeConnectRequestStructSize)
	put16(b[2:], r.Flags&^TreeConnectFlagExtensionPresent)
	n := utf16le.Encode(b[8:], r.Path)
	put16(b[4:], HeaderSize+8)
	put16(b[6:], uint16(n))
	if n == 0 {
		b[8] = 0
	}
}

// TreeConnectResponse is SMB2 TREE_CONNECT Response ([MS-SMB2] 2.2.10).
type TreeConnectResponse struct {
	ShareType     uint8
	ShareFlags    uint32
	Capabilities  uint32
	MaximalAccess uint32
}

const treeConnectResponseStructSize = 16

// Size returns the encoded body size.
func (r *TreeConnectResponse) Size() int { return treeConnectResponseStructSize }

// Encode writes the body into b[:16].
func (r *TreeConnectResponse) Encode(b []byte) {
	put16(b, treeConnectResponseStructSize)
	b[2] = r.ShareType
	b[3] = 0
	put32(b[4:], r.ShareFlags)
	put32(b[8:], r.Capabilities)
	put32(b[12:], r.MaximalAccess)
}

// Decode parses a TREE_CONNECT response from msg, the whole PDU.
func (r *TreeConnectResponse) Decode(msg []byte) error {
	b, err := fixedBody(msg, treeConnectResponseStructSize)
	if err != nil {
		return err
	}
	r.ShareType = b[2]
	r.ShareFlags = le.Uint32(b[4:])
	r.Capabilities = le.Uint32(b[8:])
	r.MaximalAccess = le.Uint32(b[12:])
	return nil
}
