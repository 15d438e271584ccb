package smb2

// TreeDisconnectRequest is SMB2 TREE_DISCONNECT Request ([MS-SMB2] 2.2.11).
type TreeDisconnectRequest struct{}

// Decode checks the body of msg, the whole PDU.
func (r *TreeDisconnectRequest) Decode(msg []byte) error { return decodeEmpty(msg, emptyStructSize) }

// Size returns the encoded body size.
func (r *TreeDisconnectRequest) Size() int { return emptyStructSize }

// Encode writes the body into b[:4].
func (r *TreeDisconnectRequest) Encode(b []byte) { encodeEmpty(b, emptyStructSize) }

// TreeDisconnectResponse is SMB2 TREE_DISCONNECT Response ([MS-SMB2] 2.2.12).
type TreeDisconnectResponse struct{}

// Decode checks the body of msg, the whole PDU.
func (r *TreeDisconnectResponse) Decode(msg []byte) error { return decodeEmpty(msg, emptyStructSize) }

// Size returns the encoded body size.
func (r *TreeDisconnectResponse) Size() int { return emptyStructSize }

// Encode writes the body into b[:4].
func (r *TreeDisconnectResponse) Encode(b []byte) { encodeEmpty(b, emptyStructSize) }
