package smb2

// EchoRequest is SMB2 ECHO Request ([MS-SMB2] 2.2.28).
type EchoRequest struct{}

// Decode checks the body of msg, the whole PDU.
func (r *EchoRequest) Decode(msg []byte) error { return decodeEmpty(msg, emptyStructSize) }

// Size returns the encoded body size.
func (r *EchoRequest) Size() int { return emptyStructSize }

// Encode writes the body into b[:4].
func (r *EchoRequest) Encode(b []byte) { encodeEmpty(b, emptyStructSize) }

// EchoResponse is SMB2 ECHO Response ([MS-SMB2] 2.2.29).
type EchoResponse struct{}

// Decode checks the body of msg, the whole PDU.
func (r *EchoResponse) Decode(msg []byte) error { return decodeEmpty(msg, emptyStructSize) }

// Size returns the encoded body size.
func (r *EchoResponse) Size() int { return emptyStructSize }

// Encode writes the body into b[:4].
func (r *EchoResponse) Encode(b []byte) { encodeEmpty(b, emptyStructSize) }
