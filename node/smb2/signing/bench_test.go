package signing

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

var benchSizes = []int{64 << 10, 1 << 20}

func BenchmarkSign(b *testing.B) {
	for _, alg := range []uint16{HMACSHA256, AESCMAC, AESGMAC} {
		for _, n := range benchSizes {
			s, _ := NewSigner(alg, make([]byte, 16))
			m := testMessage(rand.New(rand.NewPCG(1, 1)), n, 1, 0, 8)
			parts := [][]byte{m[:64], m[64:80], m[80:]}
			sig := s.Sign(parts...)
			copy(m[offSignature:], sig[:])
			b.Run(fmt.Sprintf("%s/%dKiB/Sign", signName(alg), n>>10), func(b *testing.B) {
				b.SetBytes(int64(n))
				b.ReportAllocs()
				for b.Loop() {
					s.Sign(parts...)
				}
			})
			b.Run(fmt.Sprintf("%s/%dKiB/Verify", signName(alg), n>>10), func(b *testing.B) {
				b.SetBytes(int64(n))
				b.ReportAllocs()
				for b.Loop() {
					if !s.Verify(parts...) {
						b.Fatal("Verify failed")
					}
				}
			})
		}
	}
}

func signName(alg uint16) string {
	return [...]string{"HMAC-SHA256", "AES-CMAC", "AES-GMAC"}[alg]
}

func cipherName(id uint16) string {
	return [...]string{"", "AES-128-CCM", "AES-128-GCM", "AES-256-CCM", "AES-256-GCM"}[id]
}

func BenchmarkSealOpen(b *testing.B) {
	for _, id := range allCiphers {
		for _, n := range benchSizes {
			aead := newTestCipher(b, id)
			nonces := NewNonceSource()
			plain := make([]byte, n)
			parts := [][]byte{plain[:64], plain[64:]}
			sealBuf := make([]byte, 0, n+TransformHeaderSize+16)
			openBuf := make([]byte, 0, n+16)
			b.Run(fmt.Sprintf("%s/%dKiB/Seal", cipherName(id), n>>10), func(b *testing.B) {
				b.SetBytes(int64(n))
				b.ReportAllocs()
				for b.Loop() {
					Seal(sealBuf, aead, nonces, 1, parts...)
				}
			})
			msg := Seal(nil, aead, nonces, 1, parts...)
			b.Run(fmt.Sprintf("%s/%dKiB/Open", cipherName(id), n>>10), func(b *testing.B) {
				b.SetBytes(int64(n))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := Open(openBuf, aead, msg); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
