package smb2

// CreateContext is one SMB2_CREATE_CONTEXT ([MS-SMB2] 2.2.13.2). Name is
// usually a four-character tag ("MxAc", "RqLs"…); Data aliases the message.
type CreateContext struct {
	Name string
	Data []byte
}

// Create context names ([MS-SMB2] 2.2.13.2, 2.2.14.2).
const (
	CreateCtxEABuffer                 = "ExtA"
	CreateCtxSecurityDescriptor       = "SecD"
	CreateCtxDurableHandleRequest     = "DHnQ"
	CreateCtxDurableHandleReconnect   = "DHnC"
	CreateCtxAllocationSize           = "AlSi"
	CreateCtxQueryMaximalAccess       = "MxAc"
	CreateCtxTimewarpToken            = "TWrp"
	CreateCtxQueryOnDiskID            = "QFid"
	CreateCtxRequestLease             = "RqLs"
	CreateCtxDurableHandleRequestV2   = "DH2Q"
	CreateCtxDurableHandleReconnectV2 = "DH2C"
	// CreateCtxAppInstanceID is a GUID, 45BCA66A-EFA7-F74A-9008-FA462E144D74.
	CreateCtxAppInstanceID = "\x45\xBC\xA6\x6A\xEF\xA7\xF7\x4A\x90\x08\xFA\x46\x2E\x14\x4D\x74"
)

const createContextHeaderSize = 16

// FindCreateContext returns the data of the context named name.
func FindCreateContext(cs []CreateContext, name string) ([]byte, bool) {
	for _, c := range cs {
		if c.Name == name {
			return c.Data, true
		}
	}
	return nil, false
}

// DecodeCreateContexts parses a chain of create contexts filling b exactly
// as far as the last one's Next is 0. Offsets inside a context are relative
// to its start; Next must be 8-byte aligned.
func DecodeCreateContexts(b []byte) ([]CreateContext, error) {
	var out []CreateContext
	for len(b) > 0 {
		if len(b) < createContextHeaderSize {
			return nil, ErrShortMessage
		}
		next := le.Uint32(b)
		ext := len(b)
		if next != 0 {
			if next%8 != 0 || next < createContextHeaderSize || uint64(next) > uint64(len(b)) {
				return nil, ErrBadOffset
			}
			ext = int(next)
		}
		name, err := span(b[:ext], uint32(le.Uint16(b[4:])), uint32(le.Uint16(b[6:])), createContextHeaderSize)
		if err != nil || len(name) == 0 {
			return nil, ErrBadOffset
		}
		data, err := span(b[:ext], uint32(le.Uint16(b[10:])), le.Uint32(b[12:]), createContextHeaderSize)
		if err != nil {
			return nil, err
		}
		out = append(out, CreateContext{Name: string(name), Data: data})
		if next == 0 {
			break
		}
		b = b[next:]
	}
	return out, nil
}

// createContextSize is the unpadded size of one context.
func createContextSize(c CreateContext) int {
	if len(c.Data) == 0 {
		return createContextHeaderSize + len(c.Name)
	}
	return align8(createContextHeaderSize+len(c.Name)) + len(c.Data)
}

// CreateContextsSize is the encoded size of cs, padded between contexts.
func CreateContextsSize(cs []CreateContext) int {
	n := 0
	for i, c := range cs {
		if i > 0 {
			n = align8(n)
		}
		n += createContextSize(c)
	}
	return n
}

// EncodeCreateContexts writes cs into b (which starts 8-byte aligned) and
// returns the bytes written.
func EncodeCreateContexts(b []byte, cs []CreateContext) int {
	p := 0
	for i, c := range cs {
		size := createContextSize(c)
		next := 0
		if i < len(cs)-1 {
			next = align8(size)
		}
		e := b[p:]
		put32(e, uint32(next))
		put16(e[4:], createContextHeaderSize)
		put16(e[6:], uint16(len(c.Name)))
		put16(e[8:], 0)
		put16(e[10:], 0)
		put32(e[12:], uint32(len(c.Data)))
		copy(e[16:], c.Name)
		if len(c.Data) > 0 {
			d := align8(createContextHeaderSize + len(c.Name))
			zero(e[16+len(c.Name) : d])
			put16(e[10:], uint16(d))
			copy(e[d:], c.Data)
		}
		if next != 0 {
			zero(e[size:next])
			p += next
		} else {
			p += size
		}
	}
	return p
}

// MxAcRequest is SMB2_CREATE_QUERY_MAXIMAL_ACCESS_REQUEST ([MS-SMB2] 2.2.13.2.5).
type MxAcRequest struct {
	Timestamp    uint64 // FILETIME; only when HasTimestamp
	HasTimestamp bool
}

// Decode parses the context data (empty or an 8-byte timestamp).
func (c *MxAcRequest) Decode(data []byte) error {
	*c = MxAcRequest{}
	switch len(data) {
	case 0:
	case 8:
		c.Timestamp, c.HasTimestamp = le.Uint64(data), true
	default:
		return ErrMalformed
	}
	return nil
}

// Append appends the context data to b.
func (c *MxAcRequest) Append(b []byte) []byte {
	if !c.HasTimestamp {
		return b
	}
	return le.AppendUint64(b, c.Timestamp)
}

// MxAcResponse is SMB2_CREATE_QUERY_MAXIMAL_ACCESS_RESPONSE ([MS-SMB2] 2.2.14.2.5).
type MxAcResponse struct {
	QueryStatus   uint32
	MaximalAccess uint32
}

// Append appends the context data to b.
func (c *MxAcResponse) Append(b []byte) []byte {
	b = le.AppendUint32(b, c.QueryStatus)
	return le.AppendUint32(b, c.MaximalAccess)
}

// Decode parses the context data.
func (c *MxAcResponse) Decode(data []byte) error {
	if len(data) < 8 {
		return ErrShortMessage
	}
	c.QueryStatus, c.MaximalAccess = le.Uint32(data), le.Uint32(data[4:])
	return nil
}

// QFidResponse is SMB2_CREATE_QUERY_ON_DISK_ID response data ([MS-SMB2] 2.2.14.2.9).
type QFidResponse struct {
	DiskFileID uint64
	VolumeID   uint64
}

// Append appends the 32 bytes of context data to b.
func (c *QFidResponse) Append(b []byte) []byte {
	b = le.AppendUint64(b, c.DiskFileID)
	b = le.AppendUint64(b, c.VolumeID)
	return append(b, make([]byte, 16)...)
}

// Decode parses the context data.
func (c *QFidResponse) Decode(data []byte) error {
	if len(data) < 32 {
		return ErrShortMessage
	}
	c.DiskFileID, c.VolumeID = le.Uint64(data), le.Uint64(data[8:])
	return nil
}

// AllocationSizeRequest is SMB2_CREATE_ALLOCATION_SIZE ([MS-SMB2] 2.2.13.2.6).
type AllocationSizeRequest struct {
	AllocationSize uint64
}

// Decode parses the context data.
func (c *AllocationSizeRequest) Decode(data []byte) error {
	if len(data) != 8 {
		return ErrMalformed
	}
	c.AllocationSize = le.Uint64(data)
	return nil
}

// Append appends the context data to b.
func (c *AllocationSizeRequest) Append(b []byte) []byte {
	return le.AppendUint64(b, c.AllocationSize)
}

// TimewarpRequest is SMB2_CREATE_TIMEWARP_TOKEN ([MS-SMB2] 2.2.13.2.7): open
// the snapshot taken at Timestamp (FILETIME).
type TimewarpRequest struct {
	Timestamp uint64
}

// Decode parses the context data.
func (c *TimewarpRequest) Decode(data []byte) error {
	if len(data) != 8 {
		return ErrMalformed
	}
	c.Timestamp = le.Uint64(data)
	return nil
}

// Append appends the context data to b.
func (c *TimewarpRequest) Append(b []byte) []byte { return le.AppendUint64(b, c.Timestamp) }
