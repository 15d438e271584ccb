package signing

import (
	"bytes"
	"crypto/cipher"
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"testing"
)

var allCiphers = []uint16{AES128CCM, AES128GCM, AES256CCM, AES256GCM}

func newTestCipher(t testing.TB, id uint16) cipher.AEAD {
	key := make([]byte, 16)
	if id == AES256CCM || id == AES256GCM {
		key = make([]byte, 32)
	}
	for i := range key {
		key[i] = byte(i * 7)
	}
	a, err := NewCipher(id, key)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestSealOpenRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, id := range allCiphers {
		aead := newTestCipher(t, id)
		nonces := NewNonceSource()
		for _, n := range []int{0, 1, 15, 16, 17, 64, 1000, 70000} {
			plain := make([]byte, n)
			for i := range plain {
				plain[i] = byte(r.Uint32())
			}
			msg := Seal([]byte("xx"), aead, nonces, 0x1122334455667788, split(r, plain)...)[2:]
			if len(msg) != TransformHeaderSize+n {
				t.Fatalf("cipher %d: Seal length %d, want %d", id, len(msg), TransformHeaderSize+n)
			}
			if sid, err := ParseTransformHeader(msg); err != nil || sid != 0x1122334455667788 {
				t.Fatalf("cipher %d: ParseTransformHeader = %#x, %v", id, sid, err)
			}
			// The unused tail of the Nonce field is zero ([MS-SMB2] 2.2.41).
			if tail := msg[tfNonce+aead.NonceSize() : tfOrigSize]; !bytes.Equal(tail, make([]byte, len(tail))) {
				t.Fatalf("cipher %d: nonce tail %x not zero", id, tail)
			}
			got, err := Open(nil, aead, msg)
			if err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("cipher %d n %d: Open = %v", id, n, err)
			}
			// Tampering with any byte — header, tag, nonce, AAD or
			// ciphertext — is detected.
			for range 20 {
				bad := bytes.Clone(msg)
				i := r.IntN(len(bad))
				bad[i] ^= 1 << r.IntN(8)
				if _, err := Open(nil, aead, bad); err == nil {
					t.Fatalf("cipher %d: Open accepted a flip of byte %d", id, i)
				}
			}
			inPlace := append(make([]byte, 0, len(msg)+16), msg...)
			if got, err := OpenInPlace(aead, inPlace); err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("cipher %d n %d: OpenInPlace = %v", id, n, err)
			}
			// Without spare capacity OpenInPlace still works (by copying).
			if got, err := OpenInPlace(aead, bytes.Clone(msg)[:len(msg):len(msg)]); err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("cipher %d n %d: OpenInPlace without capacity = %v", id, n, err)
			}
		}
	}
}

func TestNonceUnique(t *testing.T) {
	s := NewNonceSource()
	seen := map[[16]byte]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				var f [16]byte
				s.fill(f[:], 11)
				mu.Lock()
				if seen[f] {
					t.Errorf("nonce %x repeated", f)
				}
				seen[f] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

func TestTransformErrors(t *testing.T) {
	aead := newTestCipher(t, AES128GCM)
	msg := Seal(nil, aead, NewNonceSource(), 1, make([]byte, 100))
	for _, tc := range []struct {
		name string
		msg  []byte
		want error
	}{
		{"short", msg[:51], ErrShortTransform},
		{"empty", nil, ErrShortTransform},
		{"protocol", func() []byte { m := bytes.Clone(msg); m[0] = 0xFE; return m }(), ErrNotTransform},
		{"flags", func() []byte { m := bytes.Clone(msg); m[tfFlags] = 2; return m }(), ErrTransformFlags},
		{"truncated", msg[:len(msg)-1], ErrOriginalSize},
		{"extended", append(bytes.Clone(msg), 0), ErrOriginalSize},
		{"size", func() []byte {
			m := bytes.Clone(msg)
			binary.LittleEndian.PutUint32(m[tfOrigSize:], 0xFFFFFFFF)
			return m
		}(), ErrOriginalSize},
		{"tag", func() []byte { m := bytes.Clone(msg); m[tfSignature] ^= 1; return m }(), ErrAuth},
	} {
		if _, err := Open(nil, aead, tc.msg); err != tc.want {
			t.Errorf("%s: Open error %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestNewCipherErrors(t *testing.T) {
	for _, tc := range []struct {
		id  uint16
		key int
	}{{AES128CCM, 32}, {AES128GCM, 15}, {AES256CCM, 16}, {AES256GCM, 16}, {0, 16}, {5, 32}} {
		if _, err := NewCipher(tc.id, make([]byte, tc.key)); err == nil {
			t.Errorf("NewCipher(%d, %d-byte key) succeeded", tc.id, tc.key)
		}
	}
}

func TestSealOpenAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	for _, id := range allCiphers {
		aead := newTestCipher(t, id)
		nonces := NewNonceSource()
		plain := make([]byte, 64<<10)
		parts := [][]byte{plain[:64], plain[64:]}
		sealBuf := make([]byte, 0, len(plain)+TransformHeaderSize+16)
		openBuf := make([]byte, 0, len(plain)+16)
		msg := Seal(sealBuf, aead, nonces, 1, parts...)
		n := testing.AllocsPerRun(20, func() { Seal(sealBuf, aead, nonces, 1, parts...) })
		// AES-CCM creates one CTR stream per message; GCM allocates nothing.
		if limit := ccmAllocs(id); n > limit {
			t.Errorf("cipher %d: Seal allocates %v times, want <= %v", id, n, limit)
		}
		msg = Seal(sealBuf, aead, nonces, 1, parts...)
		n = testing.AllocsPerRun(20, func() {
			if _, err := Open(openBuf, aead, msg); err != nil {
				t.Fatal(err)
			}
		})
		if limit := ccmAllocs(id); n > limit {
			t.Errorf("cipher %d: Open allocates %v times, want <= %v", id, n, limit)
		}
	}
}

func ccmAllocs(id uint16) float64 {
	if id == AES128CCM || id == AES256CCM {
		return 1
	}
	return 0
}

func TestSessionKeysShape(t *testing.T) {
	full := make([]byte, 32)
	for i := range full {
		full[i] = byte(i + 1)
	}
	preauth := make([]byte, 64)
	k2 := SessionKeys(0x0210, 0, full, nil)
	if !bytes.Equal(k2.Signing, full[:16]) || k2.ServerIn != nil || k2.ServerOut != nil {
		t.Errorf("2.1 keys = %+v", k2)
	}
	short := SessionKeys(0x0202, 0, []byte{1, 2, 3}, nil)
	if !bytes.Equal(short.Signing, append([]byte{1, 2, 3}, make([]byte, 13)...)) {
		t.Errorf("short session key not zero padded: %x", short.Signing)
	}
	k128 := SessionKeys(0x0311, AES128GCM, full, preauth)
	k256 := SessionKeys(0x0311, AES256GCM, full, preauth)
	if len(k256.ServerIn) != 32 || len(k256.ServerOut) != 32 || len(k256.Signing) != 16 || len(k256.Application) != 16 {
		t.Fatalf("AES-256 key lengths %d %d %d %d", len(k256.ServerIn), len(k256.ServerOut), len(k256.Signing), len(k256.Application))
	}
	// AES-256 keys use the full session key and L=256; signing and
	// application keys do not depend on the cipher.
	if want := KDF(full, []byte("SMBC2SCipherKey\x00"), preauth, 256); !bytes.Equal(k256.ServerIn, want) {
		t.Error("AES-256 ServerIn not KDF(FullSessionKey, L=256)")
	}
	if !bytes.Equal(k128.Signing, k256.Signing) || !bytes.Equal(k128.Application, k256.Application) {
		t.Error("signing/application keys depend on the cipher")
	}
	if want := KDF(full[:16], []byte("SMBAppKey\x00"), preauth, 128); !bytes.Equal(k128.Application, want) {
		t.Error("3.1.1 application key")
	}
	k30 := SessionKeys(0x0302, AES128CCM, full, nil)
	if want := KDF(full[:16], []byte("SMB2APP\x00"), []byte("SmbRpc\x00"), 128); !bytes.Equal(k30.Application, want) {
		t.Error("3.0.2 application key")
	}
	// A multi-block KDF output starts with the single-block output only
	// when L matches; check the counter advances.
	long := KDF(full, []byte("x\x00"), nil, 512)
	if len(long) != 64 || bytes.Equal(long[:32], long[32:]) {
		t.Errorf("KDF(512) = %x", long)
	}
}

func FuzzParseTransformHeader(f *testing.F) {
	aead := newTestCipher(f, AES128GCM)
	f.Add(Seal(nil, aead, NewNonceSource(), 9, []byte("hello")))
	f.Add([]byte{0xFD, 'S', 'M', 'B'})
	f.Fuzz(func(t *testing.T, msg []byte) {
		sid, err := ParseTransformHeader(msg)
		if err == nil && (len(msg) < TransformHeaderSize || sid != binary.LittleEndian.Uint64(msg[tfSessionID:])) {
			t.Fatalf("accepted %x", msg)
		}
	})
}

func FuzzOpen(f *testing.F) {
	ciphers := make([]cipher.AEAD, len(allCiphers))
	for i, id := range allCiphers {
		ciphers[i] = newTestCipher(f, id)
		f.Add(uint8(i), Seal(nil, ciphers[i], NewNonceSource(), 9, []byte("hello, world")), uint16(0))
	}
	f.Fuzz(func(t *testing.T, which uint8, msg []byte, flip uint16) {
		aead := ciphers[int(which)%len(ciphers)]
		if len(msg) > 0 && flip != 0 {
			msg[int(flip)%len(msg)] ^= byte(flip >> 8)
		}
		plain, err := Open(nil, aead, msg)
		if err == nil && len(plain) != len(msg)-TransformHeaderSize {
			t.Fatalf("plaintext length %d for %d-byte message", len(plain), len(msg))
		}
		OpenInPlace(aead, bytes.Clone(msg))
	})
}
