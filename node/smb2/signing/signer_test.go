package signing

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"testing"
)

// A signed SMB 3.0 SESSION_SETUP response captured from a real server, with
// its session key; the data of cloudsoda/go-smb2's sign_test.go.
func TestSignerCapturedSMB30(t *testing.T) {
	keys := SessionKeys(0x0300, 0, unhex(t, "726d4c454e63516446695457664e5042"), nil)
	s, err := NewSigner(AESCMAC, keys.Signing)
	if err != nil {
		t.Fatal(err)
	}
	pkt := unhex(t, `fe534d42400001000000000001007f00090000000000000003000000000000000000000000000000
		020000007bfba3f4041393e756a048c9092c4e52dc7037190900000048000900a1073005a0030a0100`)
	if !s.Verify(pkt) {
		t.Error("Verify rejected the captured packet")
	}
	if got, want := s.Sign(pkt), unhex(t, "041393e756a048c9092c4e52dc703719"); string(got[:]) != string(want) {
		t.Errorf("Sign = %x, want %x", got, want)
	}
}

// testMessage returns a message of n bytes (n >= 64) with an SMB2 header.
func testMessage(r *rand.Rand, n int, messageID uint64, flags uint32, cmd uint16) []byte {
	m := make([]byte, n)
	for i := range m {
		m[i] = byte(r.Uint32())
	}
	copy(m, "\xfeSMB")
	binary.LittleEndian.PutUint16(m[offCommand:], cmd)
	binary.LittleEndian.PutUint32(m[offFlags:], flags)
	binary.LittleEndian.PutUint64(m[offMessageID:], messageID)
	return m
}

// reference computes the signature independently of the Signer code: over
// the whole message with a zeroed Signature field.
func reference(t *testing.T, alg uint16, key, msg []byte) (sig [16]byte) {
	m := append([]byte(nil), msg...)
	clear(m[offSignature:headerSize])
	switch alg {
	case HMACSHA256:
		h := hmac.New(sha256.New, key)
		h.Write(m)
		copy(sig[:], h.Sum(nil))
	case AESCMAC:
		copy(sig[:], cmac(t, key, m))
	case AESGMAC:
		b, _ := aes.NewCipher(key)
		g, _ := cipher.NewGCM(b)
		var nonce [12]byte
		copy(nonce[:], m[24:32]) // MessageId
		if m[16]&1 != 0 {        // SMB2_FLAGS_SERVER_TO_REDIR
			nonce[8] |= 1
		}
		if m[12] == 0x0C && m[13] == 0 { // SMB2 CANCEL
			nonce[8] |= 2
		}
		copy(sig[:], g.Seal(nil, nonce[:], nil, m))
	}
	return sig
}

// split cuts m into parts at random points.
func split(r *rand.Rand, m []byte) [][]byte {
	var parts [][]byte
	for len(m) > 0 {
		n := min(len(m), 1+r.IntN(100))
		parts = append(parts, m[:n])
		m = m[n:]
	}
	return parts
}

func TestSigners(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	key := unhex(t, "000102030405060708090a0b0c0d0e0f")
	for _, alg := range []uint16{HMACSHA256, AESCMAC, AESGMAC} {
		s, err := NewSigner(alg, key)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{64, 65, 79, 80, 81, 200, 4096 + 7} {
			for _, hdr := range []struct {
				flags uint32
				cmd   uint16
			}{{0, 5}, {1, 5}, {0, 0x0C}, {1 | 8, 0x0C}} {
				m := testMessage(r, n, r.Uint64(), hdr.flags, hdr.cmd)
				want := reference(t, alg, key, m)
				if got := s.Sign(split(r, m)...); got != want {
					t.Fatalf("alg %d n %d %+v: Sign = %x, want %x", alg, n, hdr, got, want)
				}
				if s.Verify(m) {
					t.Fatalf("alg %d: Verify accepted a random signature", alg)
				}
				copy(m[offSignature:], want[:])
				if !s.Verify(split(r, m)...) {
					t.Fatalf("alg %d n %d: Verify rejected a good signature", alg, n)
				}
				// Any flipped bit outside the Signature-free region is caught.
				i := r.IntN(n)
				m[i] ^= 1 << r.IntN(8)
				if s.Verify(m) {
					t.Fatalf("alg %d n %d: Verify accepted a message with byte %d flipped", alg, n, i)
				}
			}
		}
		if s.Verify(make([]byte, 63)) {
			t.Errorf("alg %d: Verify accepted a short message", alg)
		}
		s.Sign()                 // no panic on empty input
		s.Sign(make([]byte, 50)) // nor on a short header
	}
}

func TestGMACNonceRole(t *testing.T) {
	// The same bytes signed as a request and as a response must differ:
	// the role bit is in the nonce.
	key := make([]byte, 16)
	s, _ := NewSigner(AESGMAC, key)
	r := rand.New(rand.NewPCG(3, 4))
	req := testMessage(r, 100, 7, 0, 5)
	resp := append([]byte(nil), req...)
	resp[offFlags] |= 1
	if reference(t, AESGMAC, key, resp) != s.Sign(resp) || s.Sign(req) == s.Sign(resp) {
		t.Error("response nonce not distinguished")
	}
}

func TestNewSignerErrors(t *testing.T) {
	if _, err := NewSigner(AESCMAC, make([]byte, 15)); err == nil {
		t.Error("AESCMAC accepted a 15-byte key")
	}
	if _, err := NewSigner(AESGMAC, make([]byte, 32)); err == nil {
		t.Error("AESGMAC accepted a 32-byte key")
	}
	if _, err := NewSigner(7, make([]byte, 16)); err == nil {
		t.Error("unknown algorithm accepted")
	}
}

func TestSignerAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	r := rand.New(rand.NewPCG(5, 6))
	m := testMessage(r, 64<<10, 1, 0, 9)
	parts := [][]byte{m[:64], m[64:112], m[112:]}
	for _, alg := range []uint16{HMACSHA256, AESCMAC, AESGMAC} {
		s, _ := NewSigner(alg, make([]byte, 16))
		sig := s.Sign(parts...)
		copy(m[offSignature:], sig[:])
		s.Verify(parts...) // warm the pool
		if n := testing.AllocsPerRun(100, func() { s.Sign(parts...) }); n != 0 {
			t.Errorf("alg %d: Sign allocates %v times per call", alg, n)
		}
		if n := testing.AllocsPerRun(100, func() {
			if !s.Verify(parts...) {
				t.Fatal("Verify failed")
			}
		}); n != 0 {
			t.Errorf("alg %d: Verify allocates %v times per call", alg, n)
		}
	}
}

// TestSignerConcurrent shares one Signer between goroutines (run with -race).
func TestSignerConcurrent(t *testing.T) {
	for _, alg := range []uint16{HMACSHA256, AESCMAC, AESGMAC} {
		key := make([]byte, 16)
		s, _ := NewSigner(alg, key)
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(g), 9))
				for range 50 {
					m := testMessage(r, 64+r.IntN(3000), r.Uint64(), r.Uint32()&1, 5)
					sig := s.Sign(m)
					copy(m[offSignature:], sig[:])
					if !s.Verify(m[:64], m[64:]) {
						t.Errorf("alg %d: concurrent Verify failed", alg)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
}

// TestSignOneSlice: a message signed as one slice (AES-GMAC's path without
// gathering when its Signature is zero) gets the signature it gets in
// parts, and verifies.
func TestSignOneSlice(t *testing.T) {
	key := bytes.Repeat([]byte{0x42}, 16)
	msg := make([]byte, 64+80+1<<16)
	for i := range msg {
		msg[i] = byte(i * 13)
	}
	clear(msg[48:64])
	for _, alg := range []uint16{HMACSHA256, AESCMAC, AESGMAC} {
		s, err := NewSigner(alg, key)
		if err != nil {
			t.Fatal(err)
		}
		whole := s.Sign(msg)
		if parts := s.Sign(msg[:30], msg[30:100], msg[100:]); parts != whole {
			t.Errorf("%s: one slice %x, parts %x", algName(alg), whole, parts)
		}
		signed := bytes.Clone(msg)
		copy(signed[48:64], whole[:])
		if !s.Verify(signed) {
			t.Errorf("%s: signed message does not verify", algName(alg))
		}
	}
}
