package smb2

import "github.com/smbcluster/smbcluster/node/smb2/utf16le"

// QUERY_DIRECTORY flags ([MS-SMB2] 2.2.33).
const (
	RestartScans      uint8 = 0x01
	ReturnSingleEntry uint8 = 0x02
	IndexSpecified    uint8 = 0x04
	Reopen            uint8 = 0x10
)

// QueryDirectoryRequest is SMB2 QUERY_DIRECTORY Request ([MS-SMB2] 2.2.33).
type QueryDirectoryRequest struct {
	FileInformationClass uint8
	Flags                uint8
	FileIndex            uint32
	FileID               FileID
	OutputBufferLength   uint32
	FileName             string // search pattern, e.g. "*"
}

const (
	queryDirectoryRequestStructSize = 33
	queryDirectoryRequestFixed      = 32
)

// Decode parses the request from msg, the whole PDU.
func (r *QueryDirectoryRequest) Decode(msg []byte) error {
	b, err := requestBody(msg, queryDirectoryRequestStructSize)
	if err != nil {
		return err
	}
	r.FileInformationClass = b[2]
	r.Flags = b[3]
	r.FileIndex = le.Uint32(b[4:])
	r.FileID = DecodeFileID(b[8:])
	r.OutputBufferLength = le.Uint32(b[28:])
	name, err := span(msg, uint32(le.Uint16(b[24:])), uint32(le.Uint16(b[26:])), HeaderSize+queryDirectoryRequestFixed)
	if err != nil {
		return err
	}
	r.FileName, err = utf16le.Decode(name)
	return err
}

// Size returns the encoded body size.
func (r *QueryDirectoryRequest) Size() int {
	return bodySize(queryDirectoryRequestStructSize, utf16le.Len(r.FileName))
}

// Encode writes the body into b[:r.Size()].
func (r *QueryDirectoryRequest) Encode(b []byte) {
	put16(b, queryDirectoryRequestStructSize)
	b[2] = r.FileInformationClass
	b[3] = r.Flags
	put32(b[4:], r.FileIndex)
	r.FileID.Encode(b[8:])
	n := utf16le.Encode(b[queryDirectoryRequestFixed:], r.FileName)
	put16(b[24:], HeaderSize+queryDirectoryRequestFixed)
	put16(b[26:], uint16(n))
	put32(b[28:], r.OutputBufferLength)
	if n == 0 {
		b[queryDirectoryRequestFixed] = 0
	}
}

// QueryDirectoryResponse is SMB2 QUERY_DIRECTORY Response ([MS-SMB2] 2.2.34).
type QueryDirectoryResponse struct {
	Buffer []byte
}

// Size returns the encoded body size.
func (r *QueryDirectoryResponse) Size() int { return outputBufferSize(r.Buffer) }

// Encode writes the body into b[:r.Size()].
func (r *QueryDirectoryResponse) Encode(b []byte) { encodeOutputBuffer(b, r.Buffer) }

// Decode parses a QUERY_DIRECTORY response from msg, the whole PDU.
func (r *QueryDirectoryResponse) Decode(msg []byte) (err error) {
	r.Buffer, err = decodeOutputBuffer(msg)
	return err
}
