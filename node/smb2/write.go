package smb2

// WRITE request flags ([MS-SMB2] 2.2.21).
const (
	WriteFlagWriteThrough    uint32 = 0x00000001
	WriteFlagWriteUnbuffered uint32 = 0x00000002
)

// WriteRequestFixedSize is the size of the WRITE request body before its
// buffer; Windows puts the data right after it, at header offset 0x70.
const WriteRequestFixedSize = 48

const writeRequestStructSize = 49

// WriteRequest is SMB2 WRITE Request ([MS-SMB2] 2.2.21).
type WriteRequest struct {
	DataOffset             uint16 // header-relative
	Length                 uint32
	Offset                 uint64
	FileID                 FileID
	Channel                uint32
	RemainingBytes         uint32
	WriteChannelInfoOffset uint16
	WriteChannelInfoLength uint16
	Flags                  uint32
	Data                   []byte // aliases msg; nil after DecodeWriteHeader
	ChannelInfo            []byte // set by Decode
}

// DecodeWriteHeader parses the fixed 48 bytes of a WRITE request body
// (body starts right after the SMB2 header) without touching the data, so
// that the payload can be read separately. The caller checks that
// DataOffset and Length fit what it reads.
func DecodeWriteHeader(body []byte) (w WriteRequest, err error) {
	if len(body) < WriteRequestFixedSize {
		return w, ErrShortMessage
	}
	if le.Uint16(body) != writeRequestStructSize {
		return w, ErrBadStructureSize
	}
	w.DataOffset = le.Uint16(body[2:])
	w.Length = le.Uint32(body[4:])
	w.Offset = le.Uint64(body[8:])
	w.FileID = DecodeFileID(body[16:])
	w.Channel = le.Uint32(body[32:])
	w.RemainingBytes = le.Uint32(body[36:])
	w.WriteChannelInfoOffset = le.Uint16(body[40:])
	w.WriteChannelInfoLength = le.Uint16(body[42:])
	w.Flags = le.Uint32(body[44:])
	if w.Length > 0 && int(w.DataOffset) < HeaderSize+WriteRequestFixedSize {
		return w, ErrBadOffset
	}
	return w, nil
}

// Decode parses the request from msg, the whole PDU; Data aliases msg.
func (r *WriteRequest) Decode(msg []byte) error {
	if len(msg) < HeaderSize {
		return ErrShortHeader
	}
	w, err := DecodeWriteHeader(msg[HeaderSize:])
	if err != nil {
		return err
	}
	lo := HeaderSize + WriteRequestFixedSize
	if w.Data, err = span(msg, uint32(w.DataOffset), w.Length, lo); err != nil {
		return err
	}
	w.ChannelInfo, err = span(msg, uint32(w.WriteChannelInfoOffset), uint32(w.WriteChannelInfoLength), lo)
	if err != nil {
		return err
	}
	*r = w
	return nil
}

// Size returns the encoded body size (the data follows the fixed part).
func (r *WriteRequest) Size() int {
	return bodySize(writeRequestStructSize, len(r.ChannelInfo)+len(r.Data))
}

// Encode writes the body into b[:r.Size()]: channel info, if any, then the
// data. DataOffset, Length and the channel info fields are computed.
func (r *WriteRequest) Encode(b []byte) {
	put16(b, writeRequestStructSize)
	put32(b[4:], uint32(len(r.Data)))
	put64(b[8:], r.Offset)
	r.FileID.Encode(b[16:])
	put32(b[32:], r.Channel)
	put32(b[36:], r.RemainingBytes)
	put32(b[40:], 0)
	put32(b[44:], r.Flags)
	p := WriteRequestFixedSize
	if len(r.ChannelInfo) > 0 {
		off, n := putBuffer(b, p, r.ChannelInfo)
		put16(b[40:], uint16(off))
		put16(b[42:], uint16(n))
		p += len(r.ChannelInfo)
	}
	put16(b[2:], uint16(HeaderSize+p))
	copy(b[p:], r.Data)
	if len(r.Data)+len(r.ChannelInfo) == 0 {
		b[p] = 0
	}
}

// WriteResponse is SMB2 WRITE Response ([MS-SMB2] 2.2.22).
type WriteResponse struct {
	Count     uint32
	Remaining uint32
}

const (
	writeResponseStructSize = 17
	writeResponseFixed      = 16
)

// Size returns the encoded body size.
func (r *WriteResponse) Size() int { return writeResponseStructSize }

// Encode writes the body into b[:17].
func (r *WriteResponse) Encode(b []byte) {
	put16(b, writeResponseStructSize)
	put16(b[2:], 0)
	put32(b[4:], r.Count)
	put32(b[8:], r.Remaining)
	put32(b[12:], 0) // WriteChannelInfoOffset/Length
	b[writeResponseFixed] = 0
}

// Decode parses a WRITE response from msg, the whole PDU.
func (r *WriteResponse) Decode(msg []byte) error {
	b, err := fixedBody(msg, writeResponseStructSize)
	if err != nil {
		return err
	}
	r.Count = le.Uint32(b[4:])
	r.Remaining = le.Uint32(b[8:])
	return nil
}
