package signing

import (
	"crypto/cipher"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"sync"
)

// ccm is AES-CCM (NIST SP 800-38C, RFC 3610) as a cipher.AEAD. SMB uses an
// 11-byte nonce and a 16-byte tag; other sizes exist for the published test
// vectors. Authentication runs through cbcMAC and encryption through
// crypto/cipher's CTR, both over whole runs of blocks, in chunks so each
// chunk is MACed and encrypted while it is in cache.
type ccm struct {
	block     cipher.Block
	nonceSize int // N, 7..13 bytes; the length field has q = 15-N bytes
	tagSize   int // Tlen/8: 4, 6, 8, 10, 12, 14 or 16
	pool      sync.Pool
}

type ccmState struct {
	mac   *cbcMAC
	ctr   [16]byte // counter block A_i
	s0    [16]byte // AES(K, A_0), masks the tag
	b0    [16]byte // first MAC block B_0
	alen  [10]byte // encoded length of the associated data
	tag   [16]byte
	check [16]byte
}

const ccmChunk = 16 << 10

func newCCM(b cipher.Block, nonceSize, tagSize int) (*ccm, error) {
	if nonceSize < 7 || nonceSize > 13 || tagSize < 4 || tagSize > 16 || tagSize%2 != 0 {
		return nil, errors.New("signing: invalid CCM nonce or tag size")
	}
	c := &ccm{block: b, nonceSize: nonceSize, tagSize: tagSize}
	c.pool.New = func() any { return &ccmState{mac: newCBCMAC(b)} }
	return c, nil
}

func (c *ccm) NonceSize() int { return c.nonceSize }
func (c *ccm) Overhead() int  { return c.tagSize }

// maxLen is the largest payload the q-byte length field can express.
func (c *ccm) maxLen() uint64 {
	q := 15 - c.nonceSize
	if q >= 8 {
		return 1<<63 - 1
	}
	return 1<<(8*q) - 1
}

// start formats B_0, A_0 and the associated data (SP 800-38C A.2) and
// absorbs B_0 || encoded length || aad, zero padded, into the MAC.
func (c *ccm) start(st *ccmState, nonce, aad []byte, plen int) {
	q := 15 - c.nonceSize
	flags := byte((c.tagSize-2)/2<<3 | (q - 1))
	if len(aad) > 0 {
		flags |= 0x40
	}
	st.b0[0] = flags
	copy(st.b0[1:], nonce)
	var l [8]byte
	binary.BigEndian.PutUint64(l[:], uint64(plen))
	copy(st.b0[16-q:], l[8-q:])

	st.ctr = [16]byte{}
	st.ctr[0] = byte(q - 1)
	copy(st.ctr[1:], nonce)
	c.block.Encrypt(st.s0[:], st.ctr[:])
	st.ctr[15] = 1

	st.mac.reset()
	st.mac.write(st.b0[:])
	if len(aad) > 0 {
		st.mac.write(st.alen[:encodeAADLen(&st.alen, len(aad))])
		st.mac.write(aad)
		st.mac.pad()
	}
}

// encodeAADLen writes the length prefix of the associated data.
func encodeAADLen(b *[10]byte, n int) int {
	switch {
	case n < 0xFF00:
		binary.BigEndian.PutUint16(b[:], uint16(n))
		return 2
	case uint64(n) <= 0xFFFFFFFF:
		b[0], b[1] = 0xFF, 0xFE
		binary.BigEndian.PutUint32(b[2:], uint32(n))
		return 6
	}
	b[0], b[1] = 0xFF, 0xFF
	binary.BigEndian.PutUint64(b[2:], uint64(n))
	return 10
}

// finish computes the masked tag into st.tag.
func (c *ccm) finish(st *ccmState) {
	st.mac.pad()
	subtle.XORBytes(st.tag[:], st.mac.x[:], st.s0[:])
}

func (c *ccm) Seal(dst, nonce, plaintext, aad []byte) []byte {
	if len(nonce) != c.nonceSize {
		panic("signing: incorrect nonce length given to CCM")
	}
	if uint64(len(plaintext)) > c.maxLen() {
		panic("signing: message too large for CCM")
	}
	ret, out := sliceForAppend(dst, len(plaintext)+c.tagSize)
	st := c.pool.Get().(*ccmState)
	c.start(st, nonce, aad, len(plaintext))
	ctr := cipher.NewCTR(c.block, st.ctr[:])
	for i := 0; i < len(plaintext); i += ccmChunk {
		j := min(i+ccmChunk, len(plaintext))
		st.mac.write(plaintext[i:j])
		ctr.XORKeyStream(out[i:j], plaintext[i:j])
	}
	c.finish(st)
	copy(out[len(plaintext):], st.tag[:c.tagSize])
	c.pool.Put(st)
	return ret
}

func (c *ccm) Open(dst, nonce, ciphertext, aad []byte) ([]byte, error) {
	if len(nonce) != c.nonceSize {
		panic("signing: incorrect nonce length given to CCM")
	}
	if len(ciphertext) < c.tagSize || uint64(len(ciphertext)-c.tagSize) > c.maxLen() {
		return nil, ErrAuth
	}
	n := len(ciphertext) - c.tagSize
	tag := ciphertext[n:]
	ciphertext = ciphertext[:n]
	ret, out := sliceForAppend(dst, n)
	st := c.pool.Get().(*ccmState)
	c.start(st, nonce, aad, n)
	ctr := cipher.NewCTR(c.block, st.ctr[:])
	for i := 0; i < n; i += ccmChunk {
		j := min(i+ccmChunk, n)
		ctr.XORKeyStream(out[i:j], ciphertext[i:j])
		st.mac.write(out[i:j])
	}
	c.finish(st)
	copy(st.check[:], tag)
	ok := subtle.ConstantTimeCompare(st.tag[:c.tagSize], st.check[:c.tagSize]) == 1
	c.pool.Put(st)
	if !ok {
		clear(out)
		return nil, ErrAuth
	}
	return ret, nil
}

// sliceForAppend extends in by n bytes, returning the whole slice and the
// new tail, as crypto/cipher does.
func sliceForAppend(in []byte, n int) (head, tail []byte) {
	if total := len(in) + n; cap(in) >= total {
		head = in[:total]
	} else {
		head = make([]byte, total)
		copy(head, in)
	}
	return head, head[len(in):]
}
