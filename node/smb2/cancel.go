package smb2

// CancelRequest is SMB2 CANCEL Request ([MS-SMB2] 2.2.30).
type CancelRequest struct{}

// Decode checks the body of msg, the whole PDU.
func (r *CancelRequest) Decode(msg []byte) error { return decodeEmpty(msg, emptyStructSize) }

// Size returns the encoded body size.
func (r *CancelRequest) Size() int { return emptyStructSize }

// Encode writes the body into b[:4].
func (r *CancelRequest) Encode(b []byte) { encodeEmpty(b, emptyStructSize) }
