package smb2

// READ request flags ([MS-SMB2] 2.2.19).
const (
	ReadFlagUnbuffered        uint8 = 0x01
	ReadFlagRequestCompressed uint8 = 0x02
)

// Channel values for READ and WRITE ([MS-SMB2] 2.2.19).
const (
	ChannelNone             uint32 = 0x00000000
	ChannelRDMAV1           uint32 = 0x00000001
	ChannelRDMAV1Invalidate uint32 = 0x00000002
	ChannelRDMATransform    uint32 = 0x00000003
)

// ReadRequest is SMB2 READ Request ([MS-SMB2] 2.2.19).
type ReadRequest struct {
	Padding        uint8 // requested DataOffset of the response
	Flags          uint8
	Length         uint32
	Offset         uint64
	FileID         FileID
	MinimumCount   uint32
	Channel        uint32
	RemainingBytes uint32
	ChannelInfo    []byte
}

const (
	readRequestStructSize = 49
	readRequestFixed      = 48
)

// Decode parses the request from msg, the whole PDU.
func (r *ReadRequest) Decode(msg []byte) error {
	b, err := requestBody(msg, readRequestStructSize)
	if err != nil {
		return err
	}
	r.Padding = b[2]
	r.Flags = b[3]
	r.Length = le.Uint32(b[4:])
	r.Offset = le.Uint64(b[8:])
	r.FileID = DecodeFileID(b[16:])
	r.MinimumCount = le.Uint32(b[32:])
	r.Channel = le.Uint32(b[36:])
	r.RemainingBytes = le.Uint32(b[40:])
	r.ChannelInfo, err = span(msg, uint32(le.Uint16(b[44:])), uint32(le.Uint16(b[46:])), HeaderSize+readRequestFixed)
	return err
}

// Size returns the encoded body size.
func (r *ReadRequest) Size() int { return bodySize(readRequestStructSize, len(r.ChannelInfo)) }

// Encode writes the body into b[:r.Size()].
func (r *ReadRequest) Encode(b []byte) {
	put16(b, readRequestStructSize)
	b[2] = r.Padding
	b[3] = r.Flags
	put32(b[4:], r.Length)
	put64(b[8:], r.Offset)
	r.FileID.Encode(b[16:])
	put32(b[32:], r.MinimumCount)
	put32(b[36:], r.Channel)
	put32(b[40:], r.RemainingBytes)
	put32(b[44:], 0)
	if len(r.ChannelInfo) == 0 {
		b[48] = 0
		return
	}
	off, n := putBuffer(b, readRequestFixed, r.ChannelInfo)
	put16(b[44:], uint16(off))
	put16(b[46:], uint16(n))
}

// ReadResponseFixedSize is the size of the READ response body before its
// data; the data normally starts at header offset ReadResponseDataOffset.
const (
	ReadResponseFixedSize  = 16
	ReadResponseDataOffset = HeaderSize + ReadResponseFixedSize // 0x50
)

// ReadResponse is SMB2 READ Response ([MS-SMB2] 2.2.20). Encode writes only
// the fixed part; the data travels as a separate buffer right after it.
type ReadResponse struct {
	DataOffset    uint8
	DataLength    uint32
	DataRemaining uint32
	Flags         uint32 // Reserved2 before 3.1.1
	Data          []byte // set by Decode only
}

const readResponseStructSize = 17

// Size returns the size of the fixed part Encode writes.
func (r *ReadResponse) Size() int { return ReadResponseFixedSize }

// Encode writes the fixed part into b[:16].
func (r *ReadResponse) Encode(b []byte) {
	put16(b, readResponseStructSize)
	b[2] = r.DataOffset
	b[3] = 0
	put32(b[4:], r.DataLength)
	put32(b[8:], r.DataRemaining)
	put32(b[12:], r.Flags)
}

// Decode parses a READ response from msg, the whole PDU; Data aliases msg.
func (r *ReadResponse) Decode(msg []byte) error {
	b, err := fixedBody(msg, readResponseStructSize)
	if err != nil {
		return err
	}
	r.DataOffset = b[2]
	r.DataLength = le.Uint32(b[4:])
	r.DataRemaining = le.Uint32(b[8:])
	r.Flags = le.Uint32(b[12:])
	r.Data, err = span(msg, uint32(r.DataOffset), r.DataLength, HeaderSize+ReadResponseFixedSize)
	return err
}
