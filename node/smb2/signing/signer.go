package signing

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"fmt"
	"hash"
	"sync"
)

// Offsets in the 64-byte SMB2 header ([MS-SMB2] 2.2.1).
const (
	headerSize   = 64
	offCommand   = 12
	offFlags     = 16
	offMessageID = 24
	offSignature = 48

	flagServerToRedir = 0x1
	commandCancel     = 0x0C
)

// Signer signs and verifies SMB2 messages ([MS-SMB2] 3.1.4.1). A message is
// given as parts that are concatenated; it starts with the 64-byte SMB2
// header whose Signature field (bytes 48..64) counts as zero. A message
// shorter than the header never verifies.
//
// A Signer is safe for concurrent use and allocates nothing per call. Called
// through the interface, a variadic call with literal arguments makes the
// caller allocate the [][]byte; pass a reused slice (s.Sign(parts...)).
type Signer interface {
	Sign(msg ...[]byte) [16]byte
	Verify(msg ...[]byte) bool // compares with the header's Signature in constant time
}

// NewSigner returns the Signer for a signing algorithm id: HMACSHA256 (the
// 2.x dialects; any key length, SHA-256 HMAC truncated to 16 bytes), AESCMAC
// or AESGMAC (16-byte key).
func NewSigner(alg uint16, key []byte) (Signer, error) {
	switch alg {
	case HMACSHA256:
		return newHMACSigner(key), nil
	case AESCMAC, AESGMAC:
		if len(key) != 16 {
			return nil, fmt.Errorf("signing: %d-byte key for AES-%s signing, want 16", len(key), algName(alg))
		}
		b, err := aes.NewCipher(key)
		if err != nil {
			return nil, err
		}
		if alg == AESCMAC {
			return newCMACSigner(b), nil
		}
		return newGMACSigner(b)
	}
	return nil, fmt.Errorf("signing: unknown signing algorithm %#04x", alg)
}

func algName(alg uint16) string {
	if alg == AESCMAC {
		return "CMAC"
	}
	return "GMAC"
}

// absorber takes the bytes of a message in order.
type absorber interface{ absorb(p []byte) }

// walk feeds msg to a with the header's Signature field replaced by zeros.
func walk(a absorber, msg [][]byte) {
	off := 0
	for _, p := range msg {
		if off < offSignature {
			n := min(len(p), offSignature-off)
			a.absorb(p[:n])
			p, off = p[n:], off+n
		}
		if off < headerSize && len(p) > 0 {
			n := min(len(p), headerSize-off)
			a.absorb(zeroBlock[:n])
			p, off = p[n:], off+n
		}
		if len(p) > 0 {
			a.absorb(p)
			off += len(p)
		}
	}
}

// header copies the first 64 bytes of msg into h and reports whether msg
// holds that many.
func header(h *[headerSize]byte, msg [][]byte) bool {
	n := 0
	for _, p := range msg {
		n += copy(h[n:], p)
		if n == headerSize {
			return true
		}
	}
	return false
}

// verify compares sig with the Signature field of hdr in constant time.
func verify(hdr *[headerSize]byte, sig [16]byte) bool {
	return subtle.ConstantTimeCompare(hdr[offSignature:], sig[:]) == 1
}

// hmacSigner is HMAC-SHA256 signing for the 2.x dialects.
type hmacSigner struct{ pool sync.Pool }

type hmacState struct {
	h   hash.Hash
	sum [sha256.Size]byte
	hdr [headerSize]byte
}

func (st *hmacState) absorb(p []byte) { st.h.Write(p) }

func newHMACSigner(key []byte) *hmacSigner {
	key = append([]byte(nil), key...)
	s := &hmacSigner{}
	s.pool.New = func() any { return &hmacState{h: hmac.New(sha256.New, key)} }
	return s
}

func (st *hmacState) sign(msg [][]byte) (sig [16]byte) {
	st.h.Reset()
	walk(st, msg)
	st.h.Sum(st.sum[:0])
	copy(sig[:], st.sum[:])
	return sig
}

func (s *hmacSigner) Sign(msg ...[]byte) [16]byte {
	st := s.pool.Get().(*hmacState)
	sig := st.sign(msg)
	s.pool.Put(st)
	return sig
}

func (s *hmacSigner) Verify(msg ...[]byte) bool {
	st := s.pool.Get().(*hmacState)
	ok := header(&st.hdr, msg) && verify(&st.hdr, st.sign(msg))
	s.pool.Put(st)
	return ok
}

// cmacSigner is AES-128-CMAC signing ([MS-SMB2] 3.1.4.1, RFC 4493).
type cmacSigner struct {
	k1, k2 [16]byte
	pool   sync.Pool
}

type cmacState struct {
	cbcMAC
	hdr [headerSize]byte
}

func (st *cmacState) absorb(p []byte) { st.write(p) }

func newCMACSigner(b cipher.Block) *cmacSigner {
	s := &cmacSigner{}
	s.k1, s.k2 = cmacSubkeys(b)
	s.pool.New = func() any { return &cmacState{cbcMAC: *newCBCMAC(b)} }
	return s
}

func (s *cmacSigner) sign(st *cmacState, msg [][]byte) [16]byte {
	st.reset()
	walk(st, msg)
	st.cmacFinal(&s.k1, &s.k2)
	return st.x
}

func (s *cmacSigner) Sign(msg ...[]byte) [16]byte {
	st := s.pool.Get().(*cmacState)
	sig := s.sign(st, msg)
	s.pool.Put(st)
	return sig
}

func (s *cmacSigner) Verify(msg ...[]byte) bool {
	st := s.pool.Get().(*cmacState)
	ok := header(&st.hdr, msg) && verify(&st.hdr, s.sign(st, msg))
	s.pool.Put(st)
	return ok
}

// gmacSigner is AES-128-GMAC signing ([MS-SMB2] 3.1.4.1): AES-GCM with the
// message as additional data, no plaintext, and a nonce of MessageId ||
// role/cancel bits. crypto/cipher's GCM wants the additional data in one
// slice, so the parts are gathered into a pooled buffer.
type gmacSigner struct {
	gcm  cipher.AEAD
	pool sync.Pool
}

type gmacState struct {
	buf   []byte
	nonce [12]byte
	tag   [16]byte
	hdr   [headerSize]byte
}

func (st *gmacState) absorb(p []byte) { st.buf = append(st.buf, p...) }

func newGMACSigner(b cipher.Block) (*gmacSigner, error) {
	gcm, err := cipher.NewGCM(b)
	if err != nil {
		return nil, err
	}
	s := &gmacSigner{gcm: gcm}
	s.pool.New = func() any { return &gmacState{} }
	return s, nil
}

// gmacNonce is MessageId followed by a 32-bit field whose bit 0 says the
// message is a response (SMB2_FLAGS_SERVER_TO_REDIR) and bit 1 that it is
// an SMB2 CANCEL ([MS-SMB2] 3.1.4.1).
func gmacNonce(nonce *[12]byte, hdr *[headerSize]byte) {
	copy(nonce[:8], hdr[offMessageID:offMessageID+8])
	var role uint32
	if binary.LittleEndian.Uint32(hdr[offFlags:])&flagServerToRedir != 0 {
		role |= 1
	}
	if binary.LittleEndian.Uint16(hdr[offCommand:]) == commandCancel {
		role |= 2
	}
	binary.LittleEndian.PutUint32(nonce[8:], role)
}

// tag computes the signature into st.tag and reports whether msg has a
// whole header (st.hdr).
func (s *gmacSigner) tag(st *gmacState, msg [][]byte) bool {
	ok := header(&st.hdr, msg)
	gmacNonce(&st.nonce, &st.hdr)
	if len(msg) == 1 && ok && [headerSize - offSignature]byte(st.hdr[offSignature:]) == [headerSize - offSignature]byte{} {
		// One slice whose Signature is already zero: no gathering.
		s.gcm.Seal(st.tag[:0], st.nonce[:], nil, msg[0])
		return ok
	}
	st.buf = st.buf[:0]
	walk(st, msg)
	s.gcm.Seal(st.tag[:0], st.nonce[:], nil, st.buf)
	if cap(st.buf) > maxPooledGMAC {
		st.buf = nil
	}
	return ok
}

// maxPooledGMAC bounds the gather buffer kept in the pool.
const maxPooledGMAC = 16 << 20

func (s *gmacSigner) Sign(msg ...[]byte) [16]byte {
	st := s.pool.Get().(*gmacState)
	s.tag(st, msg)
	sig := st.tag
	s.pool.Put(st)
	return sig
}

func (s *gmacSigner) Verify(msg ...[]byte) bool {
	st := s.pool.Get().(*gmacState)
	ok := s.tag(st, msg) && verify(&st.hdr, st.tag)
	s.pool.Put(st)
	return ok
}
