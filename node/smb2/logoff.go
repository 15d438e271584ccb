package smb2

// LogoffRequest is SMB2 LOGOFF Request ([MS-SMB2] 2.2.7).
type LogoffRequest struct{}

// Decode checks the body of msg, the whole PDU.
func (r *LogoffRequest) Decode(msg []byte) error { return decodeEmpty(msg, emptyStructSize) }

// Size returns the encoded body size.
func (r *LogoffRequest) Size() int { return emptyStructSize }

// Encode writes the body into b[:4].
func (r *LogoffRequest) Encode(b []byte) { encodeEmpty(b, emptyStructSize) }

// LogoffResponse is SMB2 LOGOFF Response ([MS-SMB2] 2.2.8).
type LogoffResponse struct{}

// Decode checks the body of msg, the whole PDU.
func (r *LogoffResponse) Decode(msg []byte) error { return decodeEmpty(msg, emptyStructSize) }

// Size returns the encoded body size.
func (r *LogoffResponse) Size() int { return emptyStructSize }

// Encode writes the body into b[:4].
func (r *LogoffResponse) Encode(b []byte) { encodeEmpty(b, emptyStructSize) }
