package smb2

// FlushRequest is SMB2 FLUSH Request ([MS-SMB2] 2.2.17).
type FlushRequest struct {
	FileID FileID
}

const flushRequestStructSize = 24

// Decode parses the request from msg, the whole PDU.
func (r *FlushRequest) Decode(msg []byte) error {
	b, err := requestBody(msg, flushRequestStructSize)
	if err != nil {
		return err
	}
	r.FileID = DecodeFileID(b[8:])
	return nil
}

// Size returns the encoded body size.
func (r *FlushRequest) Size() int { return flushRequestStructSize }

// Encode writes the body into b[:24].
func (r *FlushRequest) Encode(b []byte) {
	put16(b, flushRequestStructSize)
	zero(b[2:8])
	r.FileID.Encode(b[8:])
}

// FlushResponse is SMB2 FLUSH Response ([MS-SMB2] 2.2.18).
type FlushResponse struct{}

// Decode checks the body of msg, the whole PDU.
func (r *FlushResponse) Decode(msg []byte) error { return decodeEmpty(msg, emptyStructSize) }

// Size returns the encoded body size.
func (r *FlushResponse) Size() int { return emptyStructSize }

// Encode writes the body into b[:4].
func (r *FlushResponse) Encode(b []byte) { encodeEmpty(b, emptyStructSize) }
