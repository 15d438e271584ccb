package smb2

// Lease states ([MS-SMB2] 2.2.13.2.8).
const (
	LeaseNone   uint32 = 0x00
	LeaseRead   uint32 = 0x01
	LeaseHandle uint32 = 0x02
	LeaseWrite  uint32 = 0x04
)

// Lease flags ([MS-SMB2] 2.2.13.2.10, 2.2.14.2.10, 2.2.23.2).
const (
	LeaseFlagBreakInProgress   uint32 = 0x02
	LeaseFlagParentLeaseKeySet uint32 = 0x04
	LeaseBreakFlagAckRequired  uint32 = 0x01 // in a lease break notification
	leaseV1Size                       = 32
	leaseV2Size                       = 52
)

// LeaseRequest is SMB2_CREATE_REQUEST_LEASE (Version 1, [MS-SMB2]
// 2.2.13.2.8) or SMB2_CREATE_REQUEST_LEASE_V2 (Version 2, 2.2.13.2.10).
type LeaseRequest struct {
	Key       [16]byte
	State     uint32
	Flags     uint32
	Duration  uint64 // reserved, zero
	ParentKey [16]byte
	Epoch     uint16
	Version   int // 1 or 2, chosen by the data length
}

// Decode parses the context data; its length selects the version.
func (c *LeaseRequest) Decode(data []byte) error {
	return decodeLease((*leaseFields)(c), data)
}

// Append appends the context data to b.
func (c *LeaseRequest) Append(b []byte) []byte { return appendLease(b, (*leaseFields)(c)) }

// LeaseResponse is SMB2_CREATE_RESPONSE_LEASE (Version 1, [MS-SMB2]
// 2.2.14.2.10) or SMB2_CREATE_RESPONSE_LEASE_V2 (Version 2, 2.2.14.2.11).
type LeaseResponse struct {
	Key       [16]byte
	State     uint32
	Flags     uint32
	Duration  uint64
	ParentKey [16]byte
	Epoch     uint16
	Version   int
}

// Decode parses the context data; its length selects the version.
func (c *LeaseResponse) Decode(data []byte) error {
	return decodeLease((*leaseFields)(c), data)
}

// Append appends the context data to b.
func (c *LeaseResponse) Append(b []byte) []byte { return appendLease(b, (*leaseFields)(c)) }

// leaseFields is the common shape of lease requests and responses.
type leaseFields struct {
	Key       [16]byte
	State     uint32
	Flags     uint32
	Duration  uint64
	ParentKey [16]byte
	Epoch     uint16
	Version   int
}

func decodeLease(c *leaseFields, data []byte) error {
	*c = leaseFields{}
	switch {
	case len(data) >= leaseV2Size:
		c.Version = 2
		copy(c.ParentKey[:], data[32:48])
		c.Epoch = le.Uint16(data[48:])
	case len(data) >= leaseV1Size:
		c.Version = 1
	default:
		return ErrShortMessage
	}
	copy(c.Key[:], data[:16])
	c.State = le.Uint32(data[16:])
	c.Flags = le.Uint32(data[20:])
	c.Duration = le.Uint64(data[24:])
	return nil
}

func appendLease(b []byte, c *leaseFields) []byte {
	b = append(b, c.Key[:]...)
	b = le.AppendUint32(b, c.State)
	b = le.AppendUint32(b, c.Flags)
	b = le.AppendUint64(b, c.Duration)
	if c.Version < 2 {
		return b
	}
	b = append(b, c.ParentKey[:]...)
	b = le.AppendUint16(b, c.Epoch)
	return le.AppendUint16(b, 0)
}

// Durable handle flags ([MS-SMB2] 2.2.13.2.11).
const DurableHandleFlagPersistent uint32 = 0x00000002

// DurableRequest is SMB2_CREATE_DURABLE_HANDLE_REQUEST ([MS-SMB2] 2.2.13.2.3),
// 16 reserved bytes.
type DurableRequest struct{}

// Decode checks the context data.
func (c *DurableRequest) Decode(data []byte) error {
	if len(data) < 16 {
		return ErrShortMessage
	}
	return nil
}

// Append appends the context data to b.
func (c *DurableRequest) Append(b []byte) []byte { return append(b, make([]byte, 16)...) }

// DurableResponse is SMB2_CREATE_DURABLE_HANDLE_RESPONSE ([MS-SMB2] 2.2.14.2.3),
// 8 reserved bytes.
type DurableResponse struct{}

// Append appends the context data to b.
func (c *DurableResponse) Append(b []byte) []byte { return append(b, make([]byte, 8)...) }

// Decode checks the context data.
func (c *DurableResponse) Decode(data []byte) error {
	if len(data) < 8 {
		return ErrShortMessage
	}
	return nil
}

// DurableReconnect is SMB2_CREATE_DURABLE_HANDLE_RECONNECT ([MS-SMB2] 2.2.13.2.4).
type DurableReconnect struct {
	FileID FileID
}

// Decode parses the context data.
func (c *DurableReconnect) Decode(data []byte) error {
	if len(data) < 16 {
		return ErrShortMessage
	}
	c.FileID = DecodeFileID(data)
	return nil
}

// Append appends the context data to b.
func (c *DurableReconnect) Append(b []byte) []byte {
	b = le.AppendUint64(b, c.FileID.Persistent)
	return le.AppendUint64(b, c.FileID.Volatile)
}

// DurableRequestV2 is SMB2_CREATE_DURABLE_HANDLE_REQUEST_V2 ([MS-SMB2] 2.2.13.2.11).
type DurableRequestV2 struct {
	Timeout    uint32 // milliseconds
	Flags      uint32
	CreateGUID [16]byte
}

// Decode parses the context data.
func (c *DurableRequestV2) Decode(data []byte) error {
	if len(data) < 32 {
		return ErrShortMessage
	}
	c.Timeout, c.Flags = le.Uint32(data), le.Uint32(data[4:])
	copy(c.CreateGUID[:], data[16:32])
	return nil
}

// Append appends the context data to b.
func (c *DurableRequestV2) Append(b []byte) []byte {
	b = le.AppendUint32(b, c.Timeout)
	b = le.AppendUint32(b, c.Flags)
	b = append(b, make([]byte, 8)...)
	return append(b, c.CreateGUID[:]...)
}

// DurableResponseV2 is SMB2_CREATE_DURABLE_HANDLE_RESPONSE_V2 ([MS-SMB2] 2.2.14.2.12).
type DurableResponseV2 struct {
	Timeout uint32
	Flags   uint32
}

// Append appends the context data to b.
func (c *DurableResponseV2) Append(b []byte) []byte {
	b = le.AppendUint32(b, c.Timeout)
	return le.AppendUint32(b, c.Flags)
}

// Decode parses the context data.
func (c *DurableResponseV2) Decode(data []byte) error {
	if len(data) < 8 {
		return ErrShortMessage
	}
	c.Timeout, c.Flags = le.Uint32(data), le.Uint32(data[4:])
	return nil
}

// DurableReconnectV2 is SMB2_CREATE_DURABLE_HANDLE_RECONNECT_V2 ([MS-SMB2] 2.2.13.2.12).
type DurableReconnectV2 struct {
	FileID     FileID
	CreateGUID [16]byte
	Flags      uint32
}

// Decode parses the context data.
func (c *DurableReconnectV2) Decode(data []byte) error {
	if len(data) < 36 {
		return ErrShortMessage
	}
	c.FileID = DecodeFileID(data)
	copy(c.CreateGUID[:], data[16:32])
	c.Flags = le.Uint32(data[32:])
	return nil
}

// Append appends the context data to b.
func (c *DurableReconnectV2) Append(b []byte) []byte {
	b = le.AppendUint64(b, c.FileID.Persistent)
	b = le.AppendUint64(b, c.FileID.Volatile)
	b = append(b, c.CreateGUID[:]...)
	return le.AppendUint32(b, c.Flags)
}
