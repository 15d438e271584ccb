package auth

import (
	"encoding/binary"
	"math/bits"
)

// md4Sum returns the MD4 digest of msg (RFC 1320). MD4 is broken as a hash;
// it is here only because NTOWFv1 ([MS-NLMP] 3.3.1) is defined with it.
func md4Sum(msg []byte) [16]byte {
	n := len(msg)
	buf := make([]byte, ((n+8)/64+1)*64) // message, 0x80, zero padding, 64-bit length
	copy(buf, msg)
	buf[n] = 0x80
	binary.LittleEndian.PutUint64(buf[len(buf)-8:], uint64(n)<<3)

	s := [4]uint32{0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476}
	var x [16]uint32
	for off := 0; off < len(buf); off += 64 {
		for i := range x {
			x[i] = binary.LittleEndian.Uint32(buf[off+4*i:])
		}
		md4Block(&s, &x)
	}
	var sum [16]byte
	for i, v := range s {
		binary.LittleEndian.PutUint32(sum[4*i:], v)
	}
	return sum
}

// md4Block runs the three MD4 rounds over one 16-word block (RFC 1320 3.4).
func md4Block(s *[4]uint32, x *[16]uint32) {
	a, b, c, d := s[0], s[1], s[2], s[3]
	rotl := bits.RotateLeft32
	f := func(x, y, z uint32) uint32 { return x&y | ^x&z }
	g := func(x, y, z uint32) uint32 { return x&y | x&z | y&z }
	h := func(x, y, z uint32) uint32 { return x ^ y ^ z }

	for _, i := range [4]int{0, 4, 8, 12} { // round 1
		a = rotl(a+f(b, c, d)+x[i], 3)
		d = rotl(d+f(a, b, c)+x[i+1], 7)
		c = rotl(c+f(d, a, b)+x[i+2], 11)
		b = rotl(b+f(c, d, a)+x[i+3], 19)
	}
	const k2 = 0x5a827999
	for _, i := range [4]int{0, 1, 2, 3} { // round 2
		a = rotl(a+g(b, c, d)+x[i]+k2, 3)
		d = rotl(d+g(a, b, c)+x[i+4]+k2, 5)
		c = rotl(c+g(d, a, b)+x[i+8]+k2, 9)
		b = rotl(b+g(c, d, a)+x[i+12]+k2, 13)
	}
	const k3 = 0x6ed9eba1
	for _, i := range [4]int{0, 2, 1, 3} { // round 3
		a = rotl(a+h(b, c, d)+x[i]+k3, 3)
		d = rotl(d+h(a, b, c)+x[i+8]+k3, 9)
		c = rotl(c+h(d, a, b)+x[i+4]+k3, 11)
		b = rotl(b+h(c, d, a)+x[i+12]+k3, 15)
	}
	s[0] += a
	s[1] += b
	s[2] += c
	s[3] += d
}
