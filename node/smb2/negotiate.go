package smb2

// Dialects ([MS-SMB2] 2.2.3).
const (
	Dialect202      uint16 = 0x0202
	Dialect210      uint16 = 0x0210
	Dialect300      uint16 = 0x0300
	Dialect302      uint16 = 0x0302
	Dialect311      uint16 = 0x0311
	DialectWildcard uint16 = 0x02FF // "SMB 2.???" in a multi-protocol negotiate
)

// SecurityMode bits ([MS-SMB2] 2.2.3, 2.2.4).
const (
	NegotiateSigningEnabled  uint16 = 0x0001
	NegotiateSigningRequired uint16 = 0x0002
)

// Global capabilities ([MS-SMB2] 2.2.3, 2.2.4).
const (
	CapDFS               uint32 = 0x00000001
	CapLeasing           uint32 = 0x00000002
	CapLargeMTU          uint32 = 0x00000004
	CapMultiChannel      uint32 = 0x00000008
	CapPersistentHandles uint32 = 0x00000010
	CapDirectoryLeasing  uint32 = 0x00000020
	CapEncryption        uint32 = 0x00000040
	CapNotifications     uint32 = 0x00000080
)

// NegotiateRequest is SMB2 NEGOTIATE Request ([MS-SMB2] 2.2.3).
type NegotiateRequest struct {
	SecurityMode uint16
	Capabilities uint32
	ClientGUID   [16]byte
	Dialects     []uint16
	// ClientStartTime occupies the NegotiateContextOffset/Count bytes when
	// the request does not offer 3.1.1.
	ClientStartTime uint64
	Contexts        []NegotiateContext // only when Dialects contains 3.1.1
}

const negotiateRequestStructSize = 36

// Has311 reports whether the request offers dialect 3.1.1.
func (r *NegotiateRequest) Has311() bool {
	for _, d := range r.Dialects {
		if d == Dialect311 {
			return true
		}
	}
	return false
}

// Decode parses the request from msg, the whole PDU.
func (r *NegotiateRequest) Decode(msg []byte) error {
	b, err := requestBody(msg, negotiateRequestStructSize)
	if err != nil {
		return err
	}
	count := int(le.Uint16(b[2:]))
	if count == 0 {
		return ErrMalformed // [MS-SMB2] 3.3.5.4: DialectCount 0 is invalid
	}
	if len(b) < negotiateRequestStructSize+2*count {
		return ErrShortMessage
	}
	r.SecurityMode = le.Uint16(b[4:])
	r.Capabilities = le.Uint32(b[8:])
	copy(r.ClientGUID[:], b[12:28])
	r.Dialects = make([]uint16, count)
	for i := range r.Dialects {
		r.Dialects[i] = le.Uint16(b[36+2*i:])
	}
	r.ClientStartTime, r.Contexts = 0, nil
	if !r.Has311() {
		r.ClientStartTime = le.Uint64(b[28:])
		return nil
	}
	off, n := le.Uint32(b[28:]), int(le.Uint16(b[32:]))
	end := HeaderSize + negotiateRequestStructSize + 2*count
	r.Contexts, err = decodeNegotiateContexts(msg, off, n, end)
	return err
}

// Size returns the encoded body size.
func (r *NegotiateRequest) Size() int {
	n := negotiateRequestStructSize + 2*len(r.Dialects)
	if r.Has311() && len(r.Contexts) > 0 {
		n = align8(HeaderSize+n) - HeaderSize + negotiateContextsSize(r.Contexts)
	}
	return n
}

// Encode writes the body into b[:r.Size()].
func (r *NegotiateRequest) Encode(b []byte) {
	put16(b, negotiateRequestStructSize)
	put16(b[2:], uint16(len(r.Dialects)))
	put16(b[4:], r.SecurityMode)
	put16(b[6:], 0)
	put32(b[8:], r.Capabilities)
	copy(b[12:28], r.ClientGUID[:])
	put64(b[28:], r.ClientStartTime)
	p := negotiateRequestStructSize
	for _, d := range r.Dialects {
		put16(b[p:], d)
		p += 2
	}
	if !r.Has311() {
		return
	}
	put64(b[28:], 0)
	if len(r.Contexts) == 0 {
		return
	}
	q := align8(HeaderSize+p) - HeaderSize
	zero(b[p:q])
	put32(b[28:], uint32(HeaderSize+q))
	put16(b[32:], uint16(len(r.Contexts)))
	encodeNegotiateContexts(b[q:], r.Contexts)
}

// NegotiateResponse is SMB2 NEGOTIATE Response ([MS-SMB2] 2.2.4).
type NegotiateResponse struct {
	SecurityMode    uint16
	DialectRevision uint16
	ServerGUID      [16]byte
	Capabilities    uint32
	MaxTransactSize uint32
	MaxReadSize     uint32
	MaxWriteSize    uint32
	SystemTime      uint64 // FILETIME
	ServerStartTime uint64 // FILETIME
	SecurityBuffer  []byte
	Contexts        []NegotiateContext // encoded only for DialectRevision 3.1.1
}

const negotiateResponseStructSize = 65

// Size returns the encoded body size.
func (r *NegotiateResponse) Size() int {
	if r.DialectRevision == Dialect311 && len(r.Contexts) > 0 {
		return align8(64+len(r.SecurityBuffer)) + negotiateContextsSize(r.Contexts)
	}
	return bodySize(negotiateResponseStructSize, len(r.SecurityBuffer))
}

// Encode writes the body into b[:r.Size()].
func (r *NegotiateResponse) Encode(b []byte) {
	put16(b, negotiateResponseStructSize)
	put16(b[2:], r.SecurityMode)
	put16(b[4:], r.DialectRevision)
	put16(b[6:], 0)
	copy(b[8:24], r.ServerGUID[:])
	put32(b[24:], r.Capabilities)
	put32(b[28:], r.MaxTransactSize)
	put32(b[32:], r.MaxReadSize)
	put32(b[36:], r.MaxWriteSize)
	put64(b[40:], r.SystemTime)
	put64(b[48:], r.ServerStartTime)
	off, n := putBuffer(b, 64, r.SecurityBuffer)
	put16(b[56:], uint16(off))
	put16(b[58:], uint16(n))
	put32(b[60:], 0)
	if n == 0 {
		b[64] = 0
	}
	if r.DialectRevision != Dialect311 || len(r.Contexts) == 0 {
		return
	}
	p := 64 + len(r.SecurityBuffer)
	q := align8(p)
	zero(b[p:q])
	put16(b[6:], uint16(len(r.Contexts)))
	put32(b[60:], uint32(HeaderSize+q))
	encodeNegotiateContexts(b[q:], r.Contexts)
}

// Decode parses a NEGOTIATE response from msg, the whole PDU.
func (r *NegotiateResponse) Decode(msg []byte) error {
	b, err := fixedBody(msg, negotiateResponseStructSize)
	if err != nil {
		return err
	}
	r.SecurityMode = le.Uint16(b[2:])
	r.DialectRevision = le.Uint16(b[4:])
	copy(r.ServerGUID[:], b[8:24])
	r.Capabilities = le.Uint32(b[24:])
	r.MaxTransactSize = le.Uint32(b[28:])
	r.MaxReadSize = le.Uint32(b[32:])
	r.MaxWriteSize = le.Uint32(b[36:])
	r.SystemTime = le.Uint64(b[40:])
	r.ServerStartTime = le.Uint64(b[48:])
	end := HeaderSize + 64
	r.SecurityBuffer, err = span(msg, uint32(le.Uint16(b[56:])), uint32(le.Uint16(b[58:])), end)
	if err != nil {
		return err
	}
	r.Contexts = nil
	if r.DialectRevision != Dialect311 {
		return nil
	}
	r.Contexts, err = decodeNegotiateContexts(msg, le.Uint32(b[60:]), int(le.Uint16(b[6:])), end)
	return err
}
