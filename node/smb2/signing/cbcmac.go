package signing

import (
	"crypto/cipher"
	"crypto/subtle"
)

// cbcMAC is the CBC-MAC engine shared by AES-CMAC (RFC 4493) and AES-CCM
// (NIST SP 800-38C). It runs the chaining through crypto/cipher's CBC
// encrypter so that AES works on whole runs of blocks, not one interface call
// per block; the ciphertext goes to scratch and only its last block, the
// chaining value, is kept.
//
// write keeps the last block of its input pending (1..16 bytes in buf), so
// CMAC can still tweak it; CCM flushes it zero-padded with pad.
type cbcMAC struct {
	cbc     cipher.BlockMode // CBC encrypter whose IV is the chaining value
	x       [16]byte         // chaining value: last ciphertext block
	buf     [16]byte         // pending input
	n       int              // bytes pending in buf
	scratch [1024]byte       // discarded CBC output
}

// ivSetter is implemented by crypto/cipher's CBC encrypters.
type ivSetter interface{ SetIV([]byte) }

var zeroBlock [16]byte

func newCBCMAC(b cipher.Block) *cbcMAC {
	m := &cbcMAC{cbc: cipher.NewCBCEncrypter(b, zeroBlock[:])}
	if _, ok := m.cbc.(ivSetter); !ok {
		panic("signing: CBC encrypter cannot reset its IV")
	}
	return m
}

func (m *cbcMAC) reset() {
	m.cbc.(ivSetter).SetIV(zeroBlock[:])
	m.x = zeroBlock
	m.n = 0
}

// write absorbs p, keeping the last block of the input so far pending.
func (m *cbcMAC) write(p []byte) {
	if len(p) == 0 {
		return
	}
	if m.n > 0 {
		k := copy(m.buf[m.n:], p)
		m.n += k
		p = p[k:]
		if len(p) == 0 {
			return
		}
		m.blocks(m.buf[:])
		m.n = 0
	}
	full := (len(p) - 1) &^ 15
	if full > 0 {
		m.blocks(p[:full])
	}
	m.n = copy(m.buf[:], p[full:])
}

// blocks chains whole blocks p through the cipher.
func (m *cbcMAC) blocks(p []byte) {
	k := 0
	for len(p) > 0 {
		k = min(len(p), len(m.scratch))
		m.cbc.CryptBlocks(m.scratch[:k], p[:k])
		p = p[k:]
	}
	copy(m.x[:], m.scratch[k-16:k])
}

// pad flushes the pending block, zero padded (CCM formatting, SP 800-38C A.2).
func (m *cbcMAC) pad() {
	if m.n == 0 {
		return
	}
	clear(m.buf[m.n:])
	m.blocks(m.buf[:])
	m.n = 0
}

// cmacFinal finishes AES-CMAC (RFC 4493 2.4) into m.x, given the subkeys.
func (m *cbcMAC) cmacFinal(k1, k2 *[16]byte) {
	if m.n == 16 {
		subtle.XORBytes(m.buf[:], m.buf[:], k1[:])
	} else {
		m.buf[m.n] = 0x80
		clear(m.buf[m.n+1:])
		subtle.XORBytes(m.buf[:], m.buf[:], k2[:])
	}
	m.cbc.CryptBlocks(m.x[:], m.buf[:])
	m.n = 0
}

// cmacSubkeys derives K1 and K2 from L = AES(K, 0^128) (RFC 4493 2.3).
func cmacSubkeys(b cipher.Block) (k1, k2 [16]byte) {
	var l [16]byte
	b.Encrypt(l[:], l[:])
	k1 = dbl(l)
	k2 = dbl(k1)
	return k1, k2
}

// dbl multiplies by x in GF(2^128) with the CMAC polynomial (Rb = 0x87).
func dbl(in [16]byte) (out [16]byte) {
	var carry byte
	for i := 15; i >= 0; i-- {
		out[i] = in[i]<<1 | carry
		carry = in[i] >> 7
	}
	out[15] ^= 0x87 & -carry
	return out
}
