package signing

import (
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"sync/atomic"
)

// TransformHeaderSize is the size of the SMB2 TRANSFORM_HEADER ([MS-SMB2] 2.2.41).
const TransformHeaderSize = 52

// TRANSFORM_HEADER layout ([MS-SMB2] 2.2.41). The additional authenticated
// data is the 32 bytes from Nonce through SessionId.
const (
	tfProtocolID = 0x424d53fd // 0xFD 'S' 'M' 'B'
	tfSignature  = 4
	tfNonce      = 20
	tfOrigSize   = 36
	tfFlags      = 42
	tfSessionID  = 44
	tfEncrypted  = 0x0001 // Flags (3.1.1) / EncryptionAlgorithm (3.0.x)
)

// Errors from ParseTransformHeader and Open.
var (
	ErrShortTransform = errors.New("signing: message shorter than a TRANSFORM_HEADER")
	ErrNotTransform   = errors.New("signing: not a TRANSFORM_HEADER (bad ProtocolId)")
	ErrTransformFlags = errors.New("signing: TRANSFORM_HEADER Flags/EncryptionAlgorithm is not 0x0001")
	ErrOriginalSize   = errors.New("signing: TRANSFORM_HEADER OriginalMessageSize does not match the message")
	ErrAuth           = errors.New("signing: message authentication failed")
)

// NonceSource hands out the Nonce of each message encrypted under one key
// ([MS-SMB2] 2.2.41: never reused within a session). It is a 64-bit counter
// with a random start followed by a random 32-bit suffix (of which CCM's
// 11-byte nonce keeps 24 bits), so several independent sources sharing a
// key — the nodes serving the channels of one session — draw from disjoint
// ranges with overwhelming probability. Safe for concurrent use.
type NonceSource struct {
	ctr    atomic.Uint64
	suffix uint32
}

// NewNonceSource returns a NonceSource with a random starting point.
func NewNonceSource() *NonceSource {
	var b [12]byte
	rand.Read(b[:])
	s := &NonceSource{suffix: binary.LittleEndian.Uint32(b[8:])}
	s.ctr.Store(binary.LittleEndian.Uint64(b[:8]))
	return s
}

// fill writes the next nonce into the 16-byte Nonce field: size bytes of
// nonce, the rest zero.
func (s *NonceSource) fill(field []byte, size int) {
	var n [16]byte
	binary.LittleEndian.PutUint64(n[:8], s.ctr.Add(1))
	binary.LittleEndian.PutUint32(n[8:12], s.suffix)
	clear(n[size:])
	copy(field[:16], n[:])
}

// Seal encrypts the concatenated plaintext parts (one SMB2 message or
// compound chain) for sessionID and appends TRANSFORM_HEADER + ciphertext to
// dst ([MS-SMB2] 3.1.4.3). To avoid allocating, dst needs spare capacity for
// the result plus 16 bytes (the tag is computed after the ciphertext and then
// moved into the header). aead must come from NewCipher.
func Seal(dst []byte, aead cipher.AEAD, nonces *NonceSource, sessionID uint64, plaintext ...[]byte) []byte {
	if nonces == nil {
		panic("signing: Seal without a NonceSource")
	}
	return seal(dst, aead, nonces, nil, sessionID, plaintext)
}

// SealInPlace encrypts msg[TransformHeaderSize:] in place and writes the
// TRANSFORM_HEADER into msg[:TransformHeaderSize] ([MS-SMB2] 3.1.4.3). msg
// needs aead.Overhead() bytes of spare capacity: the tag is computed there
// and then moved into the header. It spares the copy Seal makes when the
// caller can lay the plaintext out behind room for the header.
func SealInPlace(aead cipher.AEAD, nonces *NonceSource, sessionID uint64, msg []byte) []byte {
	if nonces == nil {
		panic("signing: SealInPlace without a NonceSource")
	}
	if len(msg) < TransformHeaderSize || cap(msg)-len(msg) < aead.Overhead() {
		panic("signing: SealInPlace needs room for the header and the tag")
	}
	tf, body := msg[:TransformHeaderSize], msg[TransformHeaderSize:]
	total := len(body)
	binary.LittleEndian.PutUint32(tf[0:], tfProtocolID)
	clear(tf[tfSignature:tfOrigSize])
	nonces.fill(tf[tfNonce:], aead.NonceSize())
	binary.LittleEndian.PutUint32(tf[tfOrigSize:], uint32(total))
	binary.LittleEndian.PutUint16(tf[tfFlags-2:], 0) // Reserved
	binary.LittleEndian.PutUint16(tf[tfFlags:], tfEncrypted)
	binary.LittleEndian.PutUint64(tf[tfSessionID:], sessionID)
	sealed := aead.Seal(body[:0], tf[tfNonce:tfNonce+aead.NonceSize()], body, tf[tfNonce:])
	copy(tf[tfSignature:tfNonce], sealed[total:])
	return msg
}

// seal is Seal taking its nonce from nonces or, when nonces is nil, from
// nonce (for test vectors).
func seal(dst []byte, aead cipher.AEAD, nonces *NonceSource, nonce []byte, sessionID uint64, plaintext [][]byte) []byte {
	total := 0
	for _, p := range plaintext {
		total += len(p)
	}
	if uint64(total) > 0xFFFFFFFF {
		panic("signing: message too large for a TRANSFORM_HEADER")
	}
	ret, out := sliceForAppend(dst, TransformHeaderSize+total+aead.Overhead())
	tf, body := out[:TransformHeaderSize], out[TransformHeaderSize:]
	binary.LittleEndian.PutUint32(tf[0:], tfProtocolID)
	clear(tf[tfSignature:tfOrigSize])
	if nonces != nil {
		nonces.fill(tf[tfNonce:], aead.NonceSize())
	} else {
		copy(tf[tfNonce:tfOrigSize], nonce)
	}
	binary.LittleEndian.PutUint32(tf[tfOrigSize:], uint32(total))
	binary.LittleEndian.PutUint16(tf[tfFlags-2:], 0) // Reserved
	binary.LittleEndian.PutUint16(tf[tfFlags:], tfEncrypted)
	binary.LittleEndian.PutUint64(tf[tfSessionID:], sessionID)
	n := 0
	for _, p := range plaintext {
		n += copy(body[n:], p)
	}
	aead.Seal(body[:0], tf[tfNonce:tfNonce+aead.NonceSize()], body[:total], tf[tfNonce:])
	copy(tf[tfSignature:tfNonce], body[total:])
	return ret[:len(ret)-aead.Overhead()]
}

// ParseTransformHeader checks the TRANSFORM_HEADER at the start of msg, a
// whole transform message, and returns its SessionId ([MS-SMB2] 3.3.5.2.1.1).
func ParseTransformHeader(msg []byte) (sessionID uint64, err error) {
	if len(msg) < TransformHeaderSize {
		return 0, ErrShortTransform
	}
	if binary.LittleEndian.Uint32(msg) != tfProtocolID {
		return 0, ErrNotTransform
	}
	if binary.LittleEndian.Uint16(msg[tfFlags:]) != tfEncrypted {
		return 0, ErrTransformFlags
	}
	if uint64(binary.LittleEndian.Uint32(msg[tfOrigSize:])) != uint64(len(msg)-TransformHeaderSize) {
		return 0, ErrOriginalSize
	}
	return binary.LittleEndian.Uint64(msg[tfSessionID:]), nil
}

// Open checks and decrypts msg, a whole transform message (header and
// ciphertext), appending the plaintext to dst, which must not overlap msg
// ([MS-SMB2] 3.3.5.2.1.1). To avoid allocating, dst needs spare capacity for
// the plaintext plus 16 bytes. The nonce is the first NonceSize() bytes of
// the Nonce field. Open never panics.
func Open(dst []byte, aead cipher.AEAD, msg []byte) ([]byte, error) {
	if err := checkOpen(aead, msg); err != nil {
		return nil, err
	}
	ct := msg[TransformHeaderSize:]
	ret, buf := sliceForAppend(dst, len(ct)+aead.Overhead())
	copy(buf, ct)
	copy(buf[len(ct):], msg[tfSignature:tfNonce])
	plain, err := aead.Open(buf[:0], msg[tfNonce:tfNonce+aead.NonceSize()], buf, msg[tfNonce:TransformHeaderSize])
	if err != nil {
		return nil, ErrAuth
	}
	return ret[:len(dst)+len(plain)], nil
}

// OpenInPlace is Open decrypting inside msg: it returns the plaintext as
// msg[TransformHeaderSize:]. It needs 16 bytes of spare capacity after msg
// (it moves the tag there); without them it decrypts into a new buffer.
// On failure the contents of msg are unspecified.
func OpenInPlace(aead cipher.AEAD, msg []byte) ([]byte, error) {
	if err := checkOpen(aead, msg); err != nil {
		return nil, err
	}
	if cap(msg)-len(msg) < aead.Overhead() {
		return Open(nil, aead, msg)
	}
	n := len(msg) - TransformHeaderSize
	buf := msg[TransformHeaderSize : len(msg)+aead.Overhead()]
	copy(buf[n:], msg[tfSignature:tfNonce])
	plain, err := aead.Open(buf[:0], msg[tfNonce:tfNonce+aead.NonceSize()], buf, msg[tfNonce:TransformHeaderSize])
	if err != nil {
		return nil, ErrAuth
	}
	return plain, nil
}

func checkOpen(aead cipher.AEAD, msg []byte) error {
	if _, err := ParseTransformHeader(msg); err != nil {
		return err
	}
	if aead.NonceSize() > 16 || aead.Overhead() != 16 {
		return errors.New("signing: AEAD does not fit the TRANSFORM_HEADER")
	}
	return nil
}
