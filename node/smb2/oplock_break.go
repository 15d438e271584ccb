package smb2

// OplockBreakAck is the SMB2 OPLOCK_BREAK Acknowledgment and Response
// ([MS-SMB2] 2.2.24.1, 2.2.25.1); it has the shape of the notification.
type OplockBreakAck struct {
	OplockLevel uint8
	FileID      FileID
}

// OplockBreakNotification is SMB2 Oplock Break Notification ([MS-SMB2] 2.2.23.1).
type OplockBreakNotification OplockBreakAck

const (
	oplockBreakStructSize            = 24
	leaseBreakAckStructSize          = 36
	leaseBreakNotificationStructSize = 44
)

// Decode parses the body of msg, the whole PDU.
func (r *OplockBreakAck) Decode(msg []byte) error {
	b, err := fixedBody(msg, oplockBreakStructSize)
	if err != nil {
		return err
	}
	r.OplockLevel = b[2]
	r.FileID = DecodeFileID(b[8:])
	return nil
}

// Size returns the encoded body size.
func (r *OplockBreakAck) Size() int { return oplockBreakStructSize }

// Encode writes the body into b[:24].
func (r *OplockBreakAck) Encode(b []byte) {
	put16(b, oplockBreakStructSize)
	b[2] = r.OplockLevel
	zero(b[3:8])
	r.FileID.Encode(b[8:])
}

// Decode parses the body of msg, the whole PDU.
func (r *OplockBreakNotification) Decode(msg []byte) error {
	return (*OplockBreakAck)(r).Decode(msg)
}

// Size returns the encoded body size.
func (r *OplockBreakNotification) Size() int { return oplockBreakStructSize }

// Encode writes the body into b[:24].
func (r *OplockBreakNotification) Encode(b []byte) { (*OplockBreakAck)(r).Encode(b) }

// LeaseBreakNotification is SMB2 Lease Break Notification ([MS-SMB2] 2.2.23.2).
type LeaseBreakNotification struct {
	NewEpoch          uint16
	Flags             uint32 // LeaseBreakFlagAckRequired
	LeaseKey          [16]byte
	CurrentLeaseState uint32
	NewLeaseState     uint32
}

// Size returns the encoded body size.
func (r *LeaseBreakNotification) Size() int { return leaseBreakNotificationStructSize }

// Encode writes the body into b[:44].
func (r *LeaseBreakNotification) Encode(b []byte) {
	put16(b, leaseBreakNotificationStructSize)
	put16(b[2:], r.NewEpoch)
	put32(b[4:], r.Flags)
	copy(b[8:24], r.LeaseKey[:])
	put32(b[24:], r.CurrentLeaseState)
	put32(b[28:], r.NewLeaseState)
	zero(b[32:44]) // BreakReason, AccessMaskHint, ShareMaskHint
}

// Decode parses the body of msg, the whole PDU.
func (r *LeaseBreakNotification) Decode(msg []byte) error {
	b, err := fixedBody(msg, leaseBreakNotificationStructSize)
	if err != nil {
		return err
	}
	r.NewEpoch = le.Uint16(b[2:])
	r.Flags = le.Uint32(b[4:])
	copy(r.LeaseKey[:], b[8:24])
	r.CurrentLeaseState = le.Uint32(b[24:])
	r.NewLeaseState = le.Uint32(b[28:])
	return nil
}

// LeaseBreakAck is the SMB2 Lease Break Acknowledgment and Response
// ([MS-SMB2] 2.2.24.2, 2.2.25.2).
type LeaseBreakAck struct {
	Flags         uint32
	LeaseKey      [16]byte
	LeaseState    uint32
	LeaseDuration uint64
}

// Decode parses the body of msg, the whole PDU.
func (r *LeaseBreakAck) Decode(msg []byte) error {
	b, err := fixedBody(msg, leaseBreakAckStructSize)
	if err != nil {
		return err
	}
	r.Flags = le.Uint32(b[4:])
	copy(r.LeaseKey[:], b[8:24])
	r.LeaseState = le.Uint32(b[24:])
	r.LeaseDuration = le.Uint64(b[28:])
	return nil
}

// Size returns the encoded body size.
func (r *LeaseBreakAck) Size() int { return leaseBreakAckStructSize }

// Encode writes the body into b[:36].
func (r *LeaseBreakAck) Encode(b []byte) {
	put16(b, leaseBreakAckStructSize)
	put16(b[2:], 0)
	put32(b[4:], r.Flags)
	copy(b[8:24], r.LeaseKey[:])
	put32(b[24:], r.LeaseState)
	put64(b[28:], r.LeaseDuration)
}

// DecodeOplockBreak tells an oplock break acknowledgment (StructureSize 24)
// from a lease break acknowledgment (36) in msg, the whole PDU
// ([MS-SMB2] 3.3.5.22).
func DecodeOplockBreak(msg []byte) (isLease bool, err error) {
	if len(msg) < HeaderSize+2 {
		return false, ErrShortMessage
	}
	switch le.Uint16(msg[HeaderSize:]) {
	case oplockBreakStructSize:
		return false, nil
	case leaseBreakAckStructSize:
		return true, nil
	}
	return false, ErrBadStructureSize
}
