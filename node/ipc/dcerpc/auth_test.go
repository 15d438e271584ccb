package dcerpc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// fakeAuth completes in one step; its "signature" is 16 copies of the
// message length's low byte, and sealing flips every bit.
type fakeAuth struct{}

func (fakeAuth) Step(in []byte) ([]byte, bool, error) {
	if bytes.Equal(in, []byte("bad")) {
		return nil, false, errors.New("bad token")
	}
	return []byte("ok"), true, nil
}
func (fakeAuth) SignatureSize() int { return 16 }
func (fakeAuth) Sign(msg []byte) []byte {
	return bytes.Repeat([]byte{byte(len(msg))}, 16)
}
func (f fakeAuth) Verify(msg, sig []byte) error {
	if !bytes.Equal(sig, f.Sign(msg)) {
		return ErrAuth
	}
	return nil
}
func (f fakeAuth) Seal(data, msg []byte) []byte {
	sig := f.Sign(msg)
	for i := range data {
		data[i] ^= 0xff
	}
	return sig
}
func (f fakeAuth) Unseal(data, msg, sig []byte) error {
	for i := range data {
		data[i] ^= 0xff
	}
	return f.Verify(msg, sig)
}

var fakeSecurity = &Security{New: func(typ uint8) Authenticator {
	if typ != AuthTypeNTLMSSP {
		return nil
	}
	return fakeAuth{}
}}

func authed(pdu []byte, level uint8, token []byte) []byte {
	pdu = append(bytes.Clone(pdu), AuthTypeNTLMSSP, level, 0, 0, 0, 0, 0, 0)
	pdu = append(pdu, token...)
	binary.LittleEndian.PutUint16(pdu[8:], uint16(len(pdu)))
	binary.LittleEndian.PutUint16(pdu[10:], uint16(len(token)))
	return pdu
}

func sealedRequest(level uint8, callID uint32, opnum uint16, stub []byte) []byte {
	r := Request{Header: Header{Flags: FlagFirstFrag | FlagLastFrag, CallID: callID}, Opnum: opnum, Stub: stub}
	pdu := make([]byte, r.Size())
	r.Encode(pdu)
	pdu = append(pdu, AuthTypeNTLMSSP, level, 0, 0, 0, 0, 0, 0)
	binary.LittleEndian.PutUint16(pdu[8:], uint16(len(pdu)+16))
	binary.LittleEndian.PutUint16(pdu[10:], 16)
	var sig []byte
	if level == AuthLevelPrivacy {
		sig = fakeAuth{}.Seal(pdu[requestFixed:len(pdu)-SecTrailerSize], pdu)
	} else {
		sig = fakeAuth{}.Sign(pdu)
	}
	return append(pdu, sig...)
}

func TestAuthenticatedCall(t *testing.T) {
	for _, level := range []uint8{AuthLevelIntegrity, AuthLevelPrivacy} {
		c := NewConn("135", &Interface{Syntax: srvsvc, Call: echo, MinLevel: AuthLevelIntegrity})
		c.SetSecurity(fakeSecurity)
		var out [][]byte
		emit := func(p []byte) { out = append(out, p) }
		c.Handle(authed(mustHex(t, bindPDU), level, []byte("hello")), emit)
		var ack BindAck
		if len(out) != 1 || ack.Decode(out[0]) != nil || ack.Type != TypeBindAck || ack.AuthLength != 2 {
			t.Fatalf("bind: %x", out)
		}
		out = nil
		c.Handle(sealedRequest(level, 2, 2, []byte("abcd")), emit)
		var resp Response
		if len(out) != 1 || resp.Decode(out[0]) != nil || resp.Type != TypeResponse {
			t.Fatalf("level %d: answer %x", level, out)
		}
		// The stub is padded to 16 and, for privacy, sealed.
		if level == AuthLevelIntegrity && !bytes.HasPrefix(resp.Stub, []byte("abcdabcd")) {
			t.Errorf("stub %q", resp.Stub)
		}
		out = nil
		bad := sealedRequest(level, 3, 2, []byte("abcd"))
		bad[len(bad)-1] ^= 1
		c.Handle(bad, emit)
		var f Fault
		if len(out) != 1 || f.Decode(out[0]) != nil || f.Type != TypeFault || f.Status != StatusAccessDenied {
			t.Errorf("bad signature: %x", out)
		}
	}
}

func TestVerificationTrailer(t *testing.T) {
	c := NewConn("135", &Interface{Syntax: srvsvc, Call: echo})
	var out [][]byte
	emit := func(p []byte) { out = append(out, p) }
	c.Handle(mustHex(t, bindPDU), emit)
	trailer := func(opnum uint16) []byte {
		b := append([]byte("args"), vtSignature...)
		b = binary.LittleEndian.AppendUint16(b, vtCommandPContext)
		b = binary.LittleEndian.AppendUint16(b, vtPContextSize)
		var s [syntaxSize]byte
		srvsvc.encode(s[:])
		b = append(b, s[:]...)
		NDR.encode(s[:])
		b = append(b, s[:]...)
		b = binary.LittleEndian.AppendUint16(b, vtCommandHeader2|vtCommandEnd)
		b = binary.LittleEndian.AppendUint16(b, vtHeader2Size)
		b = append(b, TypeRequest, 0, 0, 0)
		b = append(b, dataRep[:]...)
		b = binary.LittleEndian.AppendUint32(b, 5)
		b = binary.LittleEndian.AppendUint16(b, 0)
		return binary.LittleEndian.AppendUint16(b, opnum)
	}
	for _, tc := range []struct {
		opnum, claimed uint16
		fault          bool
	}{{2, 2, false}, {2, 3, true}} {
		out = nil
		r := Request{Header: Header{Flags: 3, CallID: 5}, Opnum: tc.opnum, Stub: trailer(tc.claimed)}
		b := make([]byte, r.Size())
		r.Encode(b)
		c.Handle(b, emit)
		if got := len(out) == 1 && out[0][2] == TypeFault; got != tc.fault {
			t.Errorf("opnum %d, trailer says %d: fault %v", tc.opnum, tc.claimed, got)
		}
	}
}

// FuzzAuthConn feeds arbitrary PDU streams, after an authenticated bind,
// to a Conn and checks that what it emits is well-formed.
func FuzzAuthConn(f *testing.F) {
	bind := authed(mustHex(f, bindPDU), AuthLevelPrivacy, []byte("hello"))
	f.Add(append(bind, sealedRequest(AuthLevelPrivacy, 2, 3, []byte("abcdefgh"))...))
	f.Add(append(authed(mustHex(f, bindPDU), AuthLevelIntegrity, []byte("bad")), sealedRequest(AuthLevelIntegrity, 2, 0, nil)...))
	f.Fuzz(func(t *testing.T, stream []byte) {
		c := NewConn("135", &Interface{Syntax: srvsvc, Call: echo, MinLevel: AuthLevelIntegrity})
		c.SetSecurity(fakeSecurity)
		emit := func(pdu []byte) {
			var h Header
			if err := h.Decode(pdu); err != nil || int(h.FragLength) != len(pdu) || len(pdu) > MaxFrag {
				t.Fatalf("emitted bad PDU %x: %v", pdu, err)
			}
		}
		for len(stream) >= HeaderSize {
			n := FragLength(stream)
			if n < HeaderSize || n > len(stream) {
				return
			}
			if c.Handle(stream[:n], emit) != nil {
				return
			}
			stream = stream[n:]
		}
	})
}
