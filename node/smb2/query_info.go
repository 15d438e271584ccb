package smb2

// InfoType values ([MS-SMB2] 2.2.37).
const (
	InfoFile       uint8 = 0x01
	InfoFilesystem uint8 = 0x02
	InfoSecurity   uint8 = 0x03
	InfoQuota      uint8 = 0x04
)

// AdditionalInformation bits for InfoSecurity ([MS-SMB2] 2.2.37).
const (
	OwnerSecurityInformation     uint32 = 0x00000001
	GroupSecurityInformation     uint32 = 0x00000002
	DACLSecurityInformation      uint32 = 0x00000004
	SACLSecurityInformation      uint32 = 0x00000008
	LabelSecurityInformation     uint32 = 0x00000010
	AttributeSecurityInformation uint32 = 0x00000020
	ScopeSecurityInformation     uint32 = 0x00000040
	BackupSecurityInformation    uint32 = 0x00010000
)

// QUERY_INFO flags, SL_RESTART_SCAN… ([MS-SMB2] 2.2.37).
const (
	QueryInfoRestartScan       uint32 = 0x00000001
	QueryInfoReturnSingleEntry uint32 = 0x00000002
	QueryInfoIndexSpecified    uint32 = 0x00000004
)

// QueryInfoRequest is SMB2 QUERY_INFO Request ([MS-SMB2] 2.2.37).
type QueryInfoRequest struct {
	InfoType              uint8
	FileInfoClass         uint8
	OutputBufferLength    uint32
	InputBuffer           []byte
	AdditionalInformation uint32
	Flags                 uint32
	FileID                FileID
}

const (
	queryInfoRequestStructSize = 41
	queryInfoRequestFixed      = 40
)

// Decode parses the request from msg, the whole PDU.
func (r *QueryInfoRequest) Decode(msg []byte) error {
	b, err := fixedBody(msg, queryInfoRequestStructSize)
	if err != nil {
		return err
	}
	r.InfoType = b[2]
	r.FileInfoClass = b[3]
	r.OutputBufferLength = le.Uint32(b[4:])
	r.AdditionalInformation = le.Uint32(b[16:])
	r.Flags = le.Uint32(b[20:])
	r.FileID = DecodeFileID(b[24:])
	r.InputBuffer, err = span(msg, uint32(le.Uint16(b[8:])), le.Uint32(b[12:]), HeaderSize+queryInfoRequestFixed)
	return err
}

// Size returns the encoded body size.
func (r *QueryInfoRequest) Size() int {
	return bodySize(queryInfoRequestStructSize, len(r.InputBuffer))
}

// Encode writes the body into b[:r.Size()].
func (r *QueryInfoRequest) Encode(b []byte) {
	put16(b, queryInfoRequestStructSize)
	b[2] = r.InfoType
	b[3] = r.FileInfoClass
	put32(b[4:], r.OutputBufferLength)
	off, n := putBuffer(b, queryInfoRequestFixed, r.InputBuffer)
	if n == 0 {
		off = 0
		b[queryInfoRequestFixed] = 0
	}
	put16(b[8:], uint16(off))
	put16(b[10:], 0)
	put32(b[12:], n)
	put32(b[16:], r.AdditionalInformation)
	put32(b[20:], r.Flags)
	r.FileID.Encode(b[24:])
}

// QueryInfoResponse is SMB2 QUERY_INFO Response ([MS-SMB2] 2.2.38).
type QueryInfoResponse struct {
	Buffer []byte
}

// Size returns the encoded body size.
func (r *QueryInfoResponse) Size() int { return outputBufferSize(r.Buffer) }

// Encode writes the body into b[:r.Size()].
func (r *QueryInfoResponse) Encode(b []byte) { encodeOutputBuffer(b, r.Buffer) }

// Decode parses a QUERY_INFO response from msg, the whole PDU.
func (r *QueryInfoResponse) Decode(msg []byte) (err error) {
	r.Buffer, err = decodeOutputBuffer(msg)
	return err
}
