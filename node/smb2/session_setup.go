package smb2

// SessionFlagBinding asks to bind the connection to an existing session
// ([MS-SMB2] 2.2.5).
const SessionFlagBinding uint8 = 0x01

// SessionFlags of the response ([MS-SMB2] 2.2.6).
const (
	SessionFlagIsGuest     uint16 = 0x0001
	SessionFlagIsNull      uint16 = 0x0002
	SessionFlagEncryptData uint16 = 0x0004
)

// SessionSetupRequest is SMB2 SESSION_SETUP Request ([MS-SMB2] 2.2.5).
type SessionSetupRequest struct {
	Flags             uint8
	SecurityMode      uint8
	Capabilities      uint32
	Channel           uint32
	PreviousSessionID uint64
	SecurityBuffer    []byte
}

const sessionSetupRequestStructSize = 25

// Decode parses the request from msg, the whole PDU.
func (r *SessionSetupRequest) Decode(msg []byte) error {
	b, err := requestBody(msg, sessionSetupRequestStructSize)
	if err != nil {
		return err
	}
	r.Flags = b[2]
	r.SecurityMode = b[3]
	r.Capabilities = le.Uint32(b[4:])
	r.Channel = le.Uint32(b[8:])
	r.PreviousSessionID = le.Uint64(b[16:])
	r.SecurityBuffer, err = span(msg, uint32(le.Uint16(b[12:])), uint32(le.Uint16(b[14:])), HeaderSize+24)
	return err
}

// Size returns the encoded body size.
func (r *SessionSetupRequest) Size() int {
	return bodySize(sessionSetupRequestStructSize, len(r.SecurityBuffer))
}

// Encode writes the body into b[:r.Size()].
func (r *SessionSetupRequest) Encode(b []byte) {
	put16(b, sessionSetupRequestStructSize)
	b[2] = r.Flags
	b[3] = r.SecurityMode
	put32(b[4:], r.Capabilities)
	put32(b[8:], r.Channel)
	off, n := putBuffer(b, 24, r.SecurityBuffer)
	put16(b[12:], uint16(off))
	put16(b[14:], uint16(n))
	put64(b[16:], r.PreviousSessionID)
	if n == 0 {
		b[24] = 0
	}
}

// SessionSetupResponse is SMB2 SESSION_SETUP Response ([MS-SMB2] 2.2.6).
type SessionSetupResponse struct {
	SessionFlags   uint16
	SecurityBuffer []byte
}

const sessionSetupResponseStructSize = 9

// Size returns the encoded body size.
func (r *SessionSetupResponse) Size() int {
	return bodySize(sessionSetupResponseStructSize, len(r.SecurityBuffer))
}

// Encode writes the body into b[:r.Size()].
func (r *SessionSetupResponse) Encode(b []byte) {
	put16(b, sessionSetupResponseStructSize)
	put16(b[2:], r.SessionFlags)
	off, n := putBuffer(b, 8, r.SecurityBuffer)
	put16(b[4:], uint16(off))
	put16(b[6:], uint16(n))
	if n == 0 {
		b[8] = 0
	}
}

// Decode parses a SESSION_SETUP response from msg, the whole PDU.
func (r *SessionSetupResponse) Decode(msg []byte) error {
	b, err := fixedBody(msg, sessionSetupResponseStructSize)
	if err != nil {
		return err
	}
	r.SessionFlags = le.Uint16(b[2:])
	r.SecurityBuffer, err = span(msg, uint32(le.Uint16(b[4:])), uint32(le.Uint16(b[6:])), HeaderSize+8)
	return err
}
