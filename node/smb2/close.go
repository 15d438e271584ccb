package smb2

// ClosePostQueryAttrib asks for the file's attributes in the response
// ([MS-SMB2] 2.2.15).
const ClosePostQueryAttrib uint16 = 0x0001

// CloseRequest is SMB2 CLOSE Request ([MS-SMB2] 2.2.15).
type CloseRequest struct {
	Flags  uint16
	FileID FileID
}

const closeRequestStructSize = 24

// Decode parses the request from msg, the whole PDU.
func (r *CloseRequest) Decode(msg []byte) error {
	b, err := requestBody(msg, closeRequestStructSize)
	if err != nil {
		return err
	}
	r.Flags = le.Uint16(b[2:])
	r.FileID = DecodeFileID(b[8:])
	return nil
}

// Size returns the encoded body size.
func (r *CloseRequest) Size() int { return closeRequestStructSize }

// Encode writes the body into b[:24].
func (r *CloseRequest) Encode(b []byte) {
	put16(b, closeRequestStructSize)
	put16(b[2:], r.Flags)
	put32(b[4:], 0)
	r.FileID.Encode(b[8:])
}

// CloseResponse is SMB2 CLOSE Response ([MS-SMB2] 2.2.16). The attribute
// fields are zero unless the request had ClosePostQueryAttrib.
type CloseResponse struct {
	Flags          uint16
	CreationTime   uint64
	LastAccessTime uint64
	LastWriteTime  uint64
	ChangeTime     uint64
	AllocationSize uint64
	EndOfFile      uint64
	FileAttributes uint32
}

const closeResponseStructSize = 60

// Size returns the encoded body size.
func (r *CloseResponse) Size() int { return closeResponseStructSize }

// Encode writes the body into b[:60].
func (r *CloseResponse) Encode(b []byte) {
	put16(b, closeResponseStructSize)
	put16(b[2:], r.Flags)
	put32(b[4:], 0)
	put64(b[8:], r.CreationTime)
	put64(b[16:], r.LastAccessTime)
	put64(b[24:], r.LastWriteTime)
	put64(b[32:], r.ChangeTime)
	put64(b[40:], r.AllocationSize)
	put64(b[48:], r.EndOfFile)
	put32(b[56:], r.FileAttributes)
}

// Decode parses a CLOSE response from msg, the whole PDU.
func (r *CloseResponse) Decode(msg []byte) error {
	b, err := fixedBody(msg, closeResponseStructSize)
	if err != nil {
		return err
	}
	r.Flags = le.Uint16(b[2:])
	r.CreationTime = le.Uint64(b[8:])
	r.LastAccessTime = le.Uint64(b[16:])
	r.LastWriteTime = le.Uint64(b[24:])
	r.ChangeTime = le.Uint64(b[32:])
	r.AllocationSize = le.Uint64(b[40:])
	r.EndOfFile = le.Uint64(b[48:])
	r.FileAttributes = le.Uint32(b[56:])
	return nil
}
