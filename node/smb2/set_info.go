package smb2

// SetInfoRequest is SMB2 SET_INFO Request ([MS-SMB2] 2.2.39).
type SetInfoRequest struct {
	InfoType              uint8
	FileInfoClass         uint8
	Buffer                []byte
	AdditionalInformation uint32
	FileID                FileID
}

const (
	setInfoRequestStructSize  = 33
	setInfoRequestFixed       = 32
	setInfoResponseStructSize = 2
)

// Decode parses the request from msg, the whole PDU.
func (r *SetInfoRequest) Decode(msg []byte) error {
	b, err := requestBody(msg, setInfoRequestStructSize)
	if err != nil {
		return err
	}
	r.InfoType = b[2]
	r.FileInfoClass = b[3]
	r.AdditionalInformation = le.Uint32(b[12:])
	r.FileID = DecodeFileID(b[16:])
	r.Buffer, err = span(msg, uint32(le.Uint16(b[8:])), le.Uint32(b[4:]), HeaderSize+setInfoRequestFixed)
	return err
}

// Size returns the encoded body size.
func (r *SetInfoRequest) Size() int { return bodySize(setInfoRequestStructSize, len(r.Buffer)) }

// Encode writes the body into b[:r.Size()].
func (r *SetInfoRequest) Encode(b []byte) {
	put16(b, setInfoRequestStructSize)
	b[2] = r.InfoType
	b[3] = r.FileInfoClass
	off, n := putBuffer(b, setInfoRequestFixed, r.Buffer)
	if n == 0 {
		b[setInfoRequestFixed] = 0
	}
	put32(b[4:], n)
	put16(b[8:], uint16(off))
	put16(b[10:], 0)
	put32(b[12:], r.AdditionalInformation)
	r.FileID.Encode(b[16:])
}

// SetInfoResponse is SMB2 SET_INFO Response ([MS-SMB2] 2.2.40): just
// StructureSize 2.
type SetInfoResponse struct{}

// Decode checks the body of msg, the whole PDU.
func (r *SetInfoResponse) Decode(msg []byte) error {
	return decodeEmpty(msg, setInfoResponseStructSize)
}

// Size returns the encoded body size.
func (r *SetInfoResponse) Size() int { return setInfoResponseStructSize }

// Encode writes the body into b[:2].
func (r *SetInfoResponse) Encode(b []byte) { put16(b, setInfoResponseStructSize) }
