package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/crypto/common"
	"github.com/jcmturner/gokrb5/v8/crypto/etype"
	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/types"
)

// Per-message tokens of the Kerberos 5 GSS-API mechanism for the enctypes
// of [RFC3962] (aes128- and aes256-cts-hmac-sha1-96): the MIC and Wrap
// tokens of [RFC4121] 4.2, and the DCE-style GSS_WrapEx of [MS-KILE]
// 3.4.5.4.1 that DCE/RPC packet privacy uses, where the data is encrypted
// in place and everything else of the token travels as the auth_value.

// Key usages of [RFC4121] 2.
const (
	kgUsageAcceptorSeal  = 22
	kgUsageAcceptorSign  = 23
	kgUsageInitiatorSeal = 24
	kgUsageInitiatorSign = 25
)

// Token flags ([RFC4121] 4.2.2).
const (
	cfxSentByAcceptor = 0x01
	cfxSealed         = 0x02
	cfxAcceptorSubkey = 0x04
)

const cfxHeaderSize = 16

// cfxRand is where confounders come from (tests fix it).
var cfxRand io.Reader = rand.Reader

// ErrGSSToken reports a per-message token that does not verify: malformed,
// modified, from the wrong direction or out of sequence.
var ErrGSSToken = errors.New("auth: bad GSS-API per-message token")

// CFX holds the per-message state of an established Kerberos context.
// It is not safe for concurrent use.
type CFX struct {
	e              etype.EType
	key            []byte
	initiator      bool // this side initiated the context
	acceptorSubkey bool // the key is the acceptor's subkey
	sendSeq        uint64
	recvSeq        uint64
}

// NewCFX sets up per-message protection with key; sendSeq and recvSeq are
// the first sequence numbers of each direction. Only the AES enctypes of
// [RFC3962] are supported.
func NewCFX(key types.EncryptionKey, initiator, acceptorSubkey bool, sendSeq, recvSeq uint64) (*CFX, error) {
	switch key.KeyType {
	case etypeID.AES128_CTS_HMAC_SHA1_96, etypeID.AES256_CTS_HMAC_SHA1_96:
	default:
		return nil, errors.New("auth: per-message tokens need an AES session key")
	}
	e, err := crypto.GetEtype(key.KeyType)
	if err != nil {
		return nil, err
	}
	if len(key.KeyValue) != e.GetKeyByteSize() {
		return nil, errors.New("auth: session key of the wrong size")
	}
	return &CFX{e: e, key: key.KeyValue, initiator: initiator, acceptorSubkey: acceptorSubkey, sendSeq: sendSeq, recvSeq: recvSeq}, nil
}

func (g *CFX) usages(send bool) (seal, sign uint32) {
	if g.initiator == send {
		return kgUsageInitiatorSeal, kgUsageInitiatorSign
	}
	return kgUsageAcceptorSeal, kgUsageAcceptorSign
}

// flags are the token flags of the direction.
func (g *CFX) flags(send bool) byte {
	var f byte
	if g.initiator != send {
		f |= cfxSentByAcceptor
	}
	if g.acceptorSubkey {
		f |= cfxAcceptorSubkey
	}
	return f
}

func (g *CFX) hmacSize() int  { return g.e.GetHMACBitLength() / 8 }
func (g *CFX) confSize() int  { return g.e.GetConfounderByteSize() }
func (g *CFX) blockSize() int { return g.e.GetCypherBlockBitLength() / 8 }
func (g *CFX) MICSize() int   { return cfxHeaderSize + g.hmacSize() }
func (g *CFX) WrapDCESize() int {
	return cfxHeaderSize + g.blockSize() + cfxHeaderSize + g.hmacSize() + g.confSize()
}

// MIC returns the MIC token of msg ([RFC4121] 4.2.6.1).
func (g *CFX) MIC(msg []byte) []byte {
	_, usage := g.usages(true)
	tok := make([]byte, cfxHeaderSize, g.MICSize())
	tok[0], tok[1], tok[2] = 0x04, 0x04, g.flags(true)
	for i := 3; i < 8; i++ {
		tok[i] = 0xff
	}
	binary.BigEndian.PutUint64(tok[8:], g.sendSeq)
	g.sendSeq++
	sum, _ := common.GetChecksumHash(append(append([]byte(nil), msg...), tok...), g.key, usage, g.e)
	return append(tok, sum[:g.hmacSize()]...)
}

// VerifyMIC checks the peer's MIC token of msg.
func (g *CFX) VerifyMIC(msg, tok []byte) error {
	_, usage := g.usages(false)
	if len(tok) != g.MICSize() || tok[0] != 0x04 || tok[1] != 0x04 || tok[2]&^cfxSealed != g.flags(false) ||
		tok[3] != 0xff || tok[4] != 0xff || tok[5] != 0xff || tok[6] != 0xff || tok[7] != 0xff {
		return ErrGSSToken
	}
	if binary.BigEndian.Uint64(tok[8:]) != g.recvSeq {
		return ErrGSSToken
	}
	sum, err := common.GetChecksumHash(append(append([]byte(nil), msg...), tok[:cfxHeaderSize]...), g.key, usage, g.e)
	if err != nil || !hmac.Equal(sum[:g.hmacSize()], tok[cfxHeaderSize:]) {
		return ErrGSSToken
	}
	g.recvSeq++
	return nil
}

// WrapDCE is GSS_WrapEx in DCE style with confidentiality ([MS-KILE]
// 3.4.5.4.1, Heimdal's gss_wrap_iov without a trailer buffer): data is
// encrypted in place; pre and post are signed only, in the order pre,
// data, post. It returns the token: the header (EC = one block of
// filler, RRC = 28 for AES), then the encrypted filler, the encrypted
// header copy, the checksum and the encrypted confounder — the tail of
// the ciphertext rotated to the front.
func (g *CFX) WrapDCE(pre, data, post []byte) []byte {
	seal, _ := g.usages(true)
	ec := g.blockSize()
	hdr := make([]byte, cfxHeaderSize)
	hdr[0], hdr[1], hdr[2], hdr[3] = 0x05, 0x04, g.flags(true)|cfxSealed, 0xff
	binary.BigEndian.PutUint16(hdr[4:], uint16(ec))
	binary.BigEndian.PutUint64(hdr[8:], g.sendSeq) // RRC 0 in the encrypted copy
	g.sendSeq++
	conf := make([]byte, g.confSize())
	_, _ = io.ReadFull(cfxRand, conf)
	filler := make([]byte, ec)
	for i := range filler {
		filler[i] = 0xff
	}
	tail := append(filler, hdr...)
	signed := concat(conf, pre, data, post, tail)
	sum, _ := common.GetIntegrityHash(signed, g.key, seal, g.e)
	ke, _ := g.e.DeriveKey(g.key, common.GetUsageKe(seal))
	_, ct, _ := g.e.EncryptData(ke, concat(conf, data, tail))
	n := len(conf)
	copy(data, ct[n:n+len(data)])
	tok := hdr
	binary.BigEndian.PutUint16(tok[6:], uint16(len(tail)+g.hmacSize()-ec)) // RRC
	tok = append(tok, ct[n+len(data):]...)
	tok = append(tok, sum[:g.hmacSize()]...)
	return append(tok, ct[:n]...)
}

// UnwrapDCE decrypts data in place and verifies the peer's DCE-style
// token over pre, data and post.
func (g *CFX) UnwrapDCE(pre, data, post, tok []byte) error {
	seal, _ := g.usages(false)
	if len(tok) < cfxHeaderSize || tok[0] != 0x05 || tok[1] != 0x04 || tok[2] != g.flags(false)|cfxSealed || tok[3] != 0xff {
		return ErrGSSToken
	}
	ec := int(binary.BigEndian.Uint16(tok[4:]))
	rrc := int(binary.BigEndian.Uint16(tok[6:]))
	h, c := g.hmacSize(), g.confSize()
	// [MS-KILE] 3.4.5.4.1: the rotation is RRC+EC, RRC covering the
	// encrypted header copy and the checksum.
	if rrc != cfxHeaderSize+h || len(tok) != cfxHeaderSize+ec+cfxHeaderSize+h+c {
		return ErrGSSToken
	}
	if binary.BigEndian.Uint64(tok[8:]) != g.recvSeq {
		return ErrGSSToken
	}
	encTail := tok[cfxHeaderSize : cfxHeaderSize+ec+cfxHeaderSize]
	sum := tok[cfxHeaderSize+ec+cfxHeaderSize : cfxHeaderSize+ec+cfxHeaderSize+h]
	encConf := tok[len(tok)-c:]
	ke, err := g.e.DeriveKey(g.key, common.GetUsageKe(seal))
	if err != nil {
		return ErrGSSToken
	}
	pt, err := g.e.DecryptData(ke, concat(encConf, data, encTail))
	if err != nil || len(pt) != c+len(data)+len(encTail) {
		return ErrGSSToken
	}
	conf, plain, tail := pt[:c], pt[c:c+len(data)], pt[c+len(data):]
	want := append([]byte(nil), tok[:cfxHeaderSize]...)
	want[6], want[7] = 0, 0
	if !hmac.Equal(tail[ec:], want) {
		return ErrGSSToken
	}
	mine, err := common.GetIntegrityHash(concat(conf, pre, plain, post, tail), g.key, seal, g.e)
	if err != nil || !hmac.Equal(mine[:h], sum) {
		return ErrGSSToken
	}
	copy(data, plain)
	g.recvSeq++
	return nil
}

func concat(bs ...[]byte) []byte {
	n := 0
	for _, b := range bs {
		n += len(b)
	}
	out := make([]byte, 0, n)
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}
