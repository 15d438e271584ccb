package smb2

// ErrorResponse is SMB2 ERROR Response ([MS-SMB2] 2.2.2), sent for any
// command that fails (and for STATUS_PENDING interim responses). Data is
// ErrorData: error contexts (3.1.1) or one structure such as a symbolic link
// error response.
type ErrorResponse struct {
	ErrorContextCount uint8
	Data              []byte
}

const (
	errorResponseStructSize = 9
	errorResponseFixed      = 8
)

// Size returns the encoded body size: 9 with no data, as Windows sends it.
func (r *ErrorResponse) Size() int {
	if len(r.Data) == 0 {
		return errorResponseStructSize
	}
	return errorResponseFixed + len(r.Data)
}

// Encode writes the body into b[:r.Size()].
func (r *ErrorResponse) Encode(b []byte) {
	put16(b, errorResponseStructSize)
	b[2] = r.ErrorContextCount
	b[3] = 0
	put32(b[4:], uint32(len(r.Data)))
	if len(r.Data) == 0 {
		b[errorResponseFixed] = 0
		return
	}
	copy(b[errorResponseFixed:], r.Data)
}

// Decode parses an ERROR response from msg, the whole PDU; Data aliases msg.
func (r *ErrorResponse) Decode(msg []byte) error {
	b, err := fixedBody(msg, errorResponseStructSize)
	if err != nil {
		return err
	}
	r.ErrorContextCount = b[2]
	n := le.Uint32(b[4:])
	r.Data, err = span(msg, HeaderSize+errorResponseFixed, n, HeaderSize+errorResponseFixed)
	return err
}

// ErrorResponseMinSize is the size of the smallest ERROR body.
const ErrorResponseMinSize = errorResponseStructSize
