package smb2

// Lock element flags ([MS-SMB2] 2.2.26.1).
const (
	LockFlagShared          uint32 = 0x00000001
	LockFlagExclusive       uint32 = 0x00000002
	LockFlagUnlock          uint32 = 0x00000004
	LockFlagFailImmediately uint32 = 0x00000010
)

// LockElement is SMB2_LOCK_ELEMENT ([MS-SMB2] 2.2.26.1).
type LockElement struct {
	Offset uint64
	Length uint64
	Flags  uint32
}

const lockElementSize = 24

// LockRequest is SMB2 LOCK Request ([MS-SMB2] 2.2.26). LockSequenceNumber
// is the low 4 bits and LockSequenceIndex the upper 28 bits of the
// LockSequence field (2.1 and later).
type LockRequest struct {
	LockSequenceNumber uint8
	LockSequenceIndex  uint32
	FileID             FileID
	Locks              []LockElement
}

const (
	lockRequestStructSize = 48
	lockRequestFixed      = 24
)

// Decode parses the request from msg, the whole PDU.
func (r *LockRequest) Decode(msg []byte) error {
	b, err := requestBody(msg, lockRequestStructSize)
	if err != nil {
		return err
	}
	count := int(le.Uint16(b[2:]))
	if count == 0 {
		return ErrMalformed // [MS-SMB2] 3.3.5.14: LockCount 0 is invalid
	}
	if len(b) < lockRequestFixed+count*lockElementSize {
		return ErrShortMessage
	}
	seq := le.Uint32(b[4:])
	r.LockSequenceNumber = uint8(seq & 0xF)
	r.LockSequenceIndex = seq >> 4
	r.FileID = DecodeFileID(b[8:])
	r.Locks = make([]LockElement, count)
	for i := range r.Locks {
		e := b[lockRequestFixed+i*lockElementSize:]
		r.Locks[i] = LockElement{Offset: le.Uint64(e), Length: le.Uint64(e[8:]), Flags: le.Uint32(e[16:])}
	}
	return nil
}

// Size returns the encoded body size.
func (r *LockRequest) Size() int { return lockRequestFixed + lockElementSize*max(1, len(r.Locks)) }

// Encode writes the body into b[:r.Size()].
func (r *LockRequest) Encode(b []byte) {
	put16(b, lockRequestStructSize)
	put16(b[2:], uint16(len(r.Locks)))
	put32(b[4:], uint32(r.LockSequenceNumber&0xF)|r.LockSequenceIndex<<4)
	r.FileID.Encode(b[8:])
	if len(r.Locks) == 0 {
		zero(b[lockRequestFixed : lockRequestFixed+lockElementSize])
	}
	for i, l := range r.Locks {
		e := b[lockRequestFixed+i*lockElementSize:]
		put64(e, l.Offset)
		put64(e[8:], l.Length)
		put32(e[16:], l.Flags)
		put32(e[20:], 0)
	}
}

// LockResponse is SMB2 LOCK Response ([MS-SMB2] 2.2.27).
type LockResponse struct{}

// Decode checks the body of msg, the whole PDU.
func (r *LockResponse) Decode(msg []byte) error { return decodeEmpty(msg, emptyStructSize) }

// Size returns the encoded body size.
func (r *LockResponse) Size() int { return emptyStructSize }

// Encode writes the body into b[:4].
func (r *LockResponse) Encode(b []byte) { encodeEmpty(b, emptyStructSize) }
