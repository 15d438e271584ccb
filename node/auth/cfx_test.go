package auth

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"io"
	"testing"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/types"
)

func cfxKey(t *testing.T, etype int32) types.EncryptionKey {
	t.Helper()
	e, err := crypto.GetEtype(etype)
	if err != nil {
		t.Fatal(err)
	}
	k := types.EncryptionKey{KeyType: etype, KeyValue: make([]byte, e.GetKeyByteSize())}
	rand.Read(k.KeyValue)
	return k
}

var cfxEtypes = []int32{etypeID.AES128_CTS_HMAC_SHA1_96, etypeID.AES256_CTS_HMAC_SHA1_96}

// TestCFXMICGokrb5 cross-checks MIC tokens with gokrb5's ([RFC4121]
// 4.2.6.1): ours verify there, an initiator's from there verify here.
func TestCFXMICGokrb5(t *testing.T) {
	for _, et := range cfxEtypes {
		key := cfxKey(t, et)
		acc, err := NewCFX(key, false, false, 7, 0)
		if err != nil {
			t.Fatal(err)
		}
		msg := []byte("a DCE/RPC response PDU through its sec_trailer")
		tok := acc.MIC(msg)
		if len(tok) != 28 || acc.MICSize() != 28 {
			t.Fatalf("MIC size %d", len(tok))
		}
		var mt gssapi.MICToken
		if err := mt.Unmarshal(tok, true); err != nil {
			t.Fatal(err)
		}
		mt.Payload = msg
		if ok, err := mt.Verify(key, kgUsageAcceptorSign); !ok || mt.SndSeqNum != 7 {
			t.Errorf("etype %d: gokrb5 refuses our MIC: %v (seq %d)", et, err, mt.SndSeqNum)
		}
		theirs, err := gssapi.NewInitiatorMICToken(msg, key)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := theirs.Marshal()
		if err := acc.VerifyMIC(msg, b); err != nil {
			t.Errorf("etype %d: gokrb5's MIC refused: %v", et, err)
		}
		if err := acc.VerifyMIC(msg, b); err == nil {
			t.Errorf("etype %d: a MIC replayed (sequence number 0 again) was accepted", et)
		}
	}
}

// TestCFXWrapDCELayout: without signed-only buffers a DCE-style token is
// an [RFC4121] 4.2.6.2 sealed Wrap token with EC 16 whose ciphertext is
// rotated right by RRC+EC ([MS-KILE] 3.4.5.4.1): undone, it is an
// [RFC3961] encryption of data | filler | header that gokrb5 decrypts
// and verifies.
func TestCFXWrapDCELayout(t *testing.T) {
	for _, et := range cfxEtypes {
		key := cfxKey(t, et)
		acc, _ := NewCFX(key, false, true, 0x01020304, 0)
		plain := bytes.Repeat([]byte("stub+pad"), 6) // 48 bytes
		data := bytes.Clone(plain)
		tok := acc.WrapDCE(nil, data, nil)
		if len(tok) != 76 || acc.WrapDCESize() != 76 {
			t.Fatalf("token size %d, want 76", len(tok))
		}
		if bytes.Equal(data, plain) {
			t.Fatal("data not encrypted in place")
		}
		hdr := tok[:16]
		want := []byte{0x05, 0x04, cfxSentByAcceptor | cfxSealed | cfxAcceptorSubkey, 0xff, 0, 16, 0, 28, 0, 0, 0, 0, 1, 2, 3, 4}
		if !bytes.Equal(hdr, want) {
			t.Fatalf("header %x, want %x", hdr, want)
		}
		// Unrotate: {Efiller | Eheader | HMAC | Econf} | data →
		// Econf | data | Efiller | Eheader | HMAC.
		ct := concat(tok[60:76], data, tok[16:48], tok[48:60])
		e, _ := crypto.GetEtype(et)
		pt, err := e.DecryptMessage(key.KeyValue, ct, kgUsageAcceptorSeal)
		if err != nil {
			t.Fatalf("etype %d: gokrb5 cannot decrypt: %v", et, err)
		}
		hdr0 := bytes.Clone(want)
		hdr0[6], hdr0[7] = 0, 0 // RRC 0 in the encrypted copy
		if !bytes.Equal(pt, concat(plain, bytes.Repeat([]byte{0xff}, 16), hdr0)) {
			t.Errorf("etype %d: plaintext %x", et, pt)
		}
	}
}

// TestCFXWrapDCE: round trips with signed-only buffers, and what the
// receiver refuses.
func TestCFXWrapDCE(t *testing.T) {
	for _, et := range cfxEtypes {
		key := cfxKey(t, et)
		mk := func() (*CFX, *CFX) {
			ini, _ := NewCFX(key, true, true, 100, 200)
			acc, _ := NewCFX(key, false, true, 200, 100)
			return ini, acc
		}
		pre, post := []byte("0123456789abcdef01234567"), []byte{9, 6, 0, 0, 1, 0, 0, 0}
		plain := bytes.Repeat([]byte{0xa5}, 40)
		ini, acc := mk()
		data := bytes.Clone(plain)
		tok := ini.WrapDCE(pre, data, post)
		if tok[2] != cfxSealed|cfxAcceptorSubkey {
			t.Errorf("initiator flags %#x", tok[2])
		}
		if err := acc.UnwrapDCE(pre, data, post, tok); err != nil || !bytes.Equal(data, plain) {
			t.Fatalf("etype %d: unwrap: %v", et, err)
		}
		// The reply goes the other way, with the acceptor's usage.
		data = bytes.Clone(plain)
		tok = acc.WrapDCE(pre, data, post)
		if err := ini.UnwrapDCE(pre, data, post, tok); err != nil || !bytes.Equal(data, plain) {
			t.Fatalf("etype %d: reply: %v", et, err)
		}
		for name, change := range map[string]func(pre, data, post, tok []byte) []byte{
			"signed-only header":  func(pre, data, post, tok []byte) []byte { pre[3] ^= 1; return tok },
			"signed-only trailer": func(pre, data, post, tok []byte) []byte { post[0] ^= 1; return tok },
			"data":                func(pre, data, post, tok []byte) []byte { data[5] ^= 1; return tok },
			"checksum":            func(pre, data, post, tok []byte) []byte { tok[50] ^= 1; return tok },
			"sequence":            func(pre, data, post, tok []byte) []byte { tok[15]++; return tok },
			"RRC":                 func(pre, data, post, tok []byte) []byte { binary.BigEndian.PutUint16(tok[6:], 44); return tok },
			"direction":           func(pre, data, post, tok []byte) []byte { tok[2] |= cfxSentByAcceptor; return tok },
			"truncated":           func(pre, data, post, tok []byte) []byte { return tok[:60] },
		} {
			ini, acc := mk()
			p, q, d := bytes.Clone(pre), bytes.Clone(post), bytes.Clone(plain)
			tok := ini.WrapDCE(p, d, q)
			tok = change(p, d, q, tok)
			if err := acc.UnwrapDCE(p, d, q, tok); err == nil {
				t.Errorf("etype %d: modified %s accepted", et, name)
			}
		}
		// A token accepted once is not accepted again.
		ini, acc = mk()
		d := bytes.Clone(plain)
		tok = ini.WrapDCE(pre, d, post)
		d2 := bytes.Clone(d)
		if err := acc.UnwrapDCE(pre, d, post, tok); err != nil {
			t.Fatal(err)
		}
		if err := acc.UnwrapDCE(pre, d2, post, tok); err == nil {
			t.Errorf("etype %d: replayed token accepted", et)
		}
	}
	if _, err := NewCFX(types.EncryptionKey{KeyType: etypeID.RC4_HMAC, KeyValue: make([]byte, 16)}, false, true, 0, 0); err == nil {
		t.Error("RC4 key accepted for CFX tokens")
	}
}

// Known-answer vectors computed with Impacket's independent RFC 3961
// implementation (impacket.krb5.crypto, with a fixed confounder c0..cf):
// an initiator's DCE-style Wrap token (flags sealed | acceptor subkey,
// EC 16 of 0xff filler, RRC 28, sequence number 0x05060708) and MIC token
// over 32 bytes of data, with the key 00 01 02 ... of each enctype.
var cfxVectors = []struct {
	etype          int32
	wrap, enc, mic string
}{
	{etypeID.AES256_CTS_HMAC_SHA1_96,
		"050406ff0010001c000000000506070845b926e4f60f69b98ca4e11b0bcb52563c26d8816da3b4617a7924a40d00d7b5fea8ec1f3dfdc2002853b98ccdb13cd304dccc12bbbdbd02a7f3f85a",
		"cbd94ede30adee68a929e0862a91f86c122241232c98cefbe24c2365c18fbc1c",
		"040404ffffffffff0000000005060708c26229bbfb682300844ecfac"},
	{etypeID.AES128_CTS_HMAC_SHA1_96,
		"050406ff0010001c0000000005060708f1b9d12c733f235927c35de186a28728608ca32a460742b8c982b82b438e97f0cb431377c041e5e955ae58d024d510a6d6aac752c830c34d4bb74045",
		"90961f307ddc4cb1bcfa129814976abf8b9660a34d2caf696de2b5f63ea0f7b3",
		"040404ffffffffff0000000005060708638f73bd193472d7188ddda9"},
}

func TestCFXVectors(t *testing.T) {
	plain := []byte("DCE/RPC stub data, 32 bytes.....")
	conf := make([]byte, 16)
	for i := range conf {
		conf[i] = 0xc0 + byte(i)
	}
	defer func(r io.Reader) { cfxRand = r }(cfxRand)
	for _, v := range cfxVectors {
		e, _ := crypto.GetEtype(v.etype)
		key := types.EncryptionKey{KeyType: v.etype, KeyValue: make([]byte, e.GetKeyByteSize())}
		for i := range key.KeyValue {
			key.KeyValue[i] = byte(i)
		}
		wrap, _ := hex.DecodeString(v.wrap)
		enc, _ := hex.DecodeString(v.enc)
		mic, _ := hex.DecodeString(v.mic)
		// Ours, as the initiator, with the same confounder: the same bytes.
		ini, _ := NewCFX(key, true, true, 0x05060708, 0)
		cfxRand = bytes.NewReader(conf)
		data := bytes.Clone(plain)
		if got := ini.WrapDCE(nil, data, nil); !bytes.Equal(got, wrap) || !bytes.Equal(data, enc) {
			t.Errorf("etype %d: wrap %x / %x, want %x / %x", v.etype, got, data, wrap, enc)
		}
		ini, _ = NewCFX(key, true, true, 0x05060708, 0)
		if got := ini.MIC(plain); !bytes.Equal(got, mic) {
			t.Errorf("etype %d: MIC %x, want %x", v.etype, got, mic)
		}
		// The acceptor reads them.
		acc, _ := NewCFX(key, false, true, 0, 0x05060708)
		data = bytes.Clone(enc)
		if err := acc.UnwrapDCE(nil, data, nil, wrap); err != nil || !bytes.Equal(data, plain) {
			t.Errorf("etype %d: unwrap: %v, %q", v.etype, err, data)
		}
		acc, _ = NewCFX(key, false, true, 0, 0x05060708)
		if err := acc.VerifyMIC(plain, mic); err != nil {
			t.Errorf("etype %d: MIC: %v", v.etype, err)
		}
	}
}
