package dcerpc

import (
	"bytes"
	"encoding/hex"
	"testing"
)

var srvsvc = SyntaxID{UUID: MustParseUUID("4b324fc8-1670-01d3-1278-5a47bf6ee188"), Major: 3}

// bindPDU is impacket's srvsvc bind (testdata of package ipc).
const bindPDU = "05000b03100000004800000001000000b810b810000000000100000000000100c84f324b7016d30112785a47bf6ee18803000000045d888aeb1cc9119fe808002b10486002000000"

func mustHex(t testing.TB, s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestUUID(t *testing.T) {
	const s = "8a885d04-1ceb-11c9-9fe8-08002b104860"
	u := MustParseUUID(s)
	if got := hex.EncodeToString(u[:]); got != "045d888aeb1cc9119fe808002b104860" {
		t.Errorf("wire form %s", got)
	}
	if u.String() != s {
		t.Errorf("String() = %s", u)
	}
	for _, bad := range []string{"", "8a885d04-1ceb-11c9-9fe8-08002b10486", "8a885d04x1ceb-11c9-9fe8-08002b104860", "zz885d04-1ceb-11c9-9fe8-08002b104860"} {
		if _, err := ParseUUID(bad); err == nil {
			t.Errorf("ParseUUID(%q) succeeded", bad)
		}
	}
}

func TestBindDecode(t *testing.T) {
	msg := mustHex(t, bindPDU)
	var b Bind
	if err := b.Decode(msg); err != nil {
		t.Fatal(err)
	}
	if b.CallID != 1 || b.MaxXmitFrag != 4280 || b.MaxRecvFrag != 4280 || len(b.Contexts) != 1 ||
		b.Contexts[0].Abstract != srvsvc || len(b.Contexts[0].Transfer) != 1 || b.Contexts[0].Transfer[0] != NDR {
		t.Errorf("decoded %+v", b)
	}
	for n := range len(msg) {
		if err := b.Decode(msg[:n]); err == nil {
			t.Errorf("truncated bind of %d bytes decoded", n)
		}
	}
}

func TestBindAckRoundTrip(t *testing.T) {
	a := BindAck{
		Header:      Header{Type: TypeBindAck, Flags: FlagFirstFrag | FlagLastFrag, CallID: 9},
		MaxXmitFrag: 4280, MaxRecvFrag: 4280, AssocGroupID: 77, SecAddr: `\PIPE\wkssvc`,
		Results: []ContextResult{{Result: ResultAcceptance, Transfer: NDR}, {Result: ResultProviderRejection, Reason: ReasonAbstractSyntax}},
	}
	b := make([]byte, a.Size())
	a.Encode(b)
	var got BindAck
	if err := got.Decode(b); err != nil {
		t.Fatal(err)
	}
	got.FragLength = 0
	if got.SecAddr != a.SecAddr || got.CallID != 9 || got.AssocGroupID != 77 || len(got.Results) != 2 || got.Results[0] != a.Results[0] || got.Results[1] != a.Results[1] {
		t.Errorf("round trip %+v", got)
	}
	// An alter_context_resp has an empty secondary address: 2 bytes of
	// length, then 2 of padding.
	a.SecAddr = ""
	if a.Size() != HeaderSize+8+4+4+2*contextResultSize {
		t.Errorf("size %d", a.Size())
	}
}

func TestRequestRoundTrip(t *testing.T) {
	r := Request{Header: Header{Flags: FlagFirstFrag | FlagLastFrag | FlagObjectUUID, CallID: 3},
		AllocHint: 5, ContextID: 1, Opnum: 16, Object: srvsvc.UUID, Stub: []byte{1, 2, 3, 4, 5}}
	b := make([]byte, r.Size())
	r.Encode(b)
	var got Request
	if err := got.Decode(b); err != nil {
		t.Fatal(err)
	}
	if got.Object != r.Object || got.Opnum != 16 || got.ContextID != 1 || !bytes.Equal(got.Stub, r.Stub) {
		t.Errorf("round trip %+v", got)
	}
	for n := range len(b) {
		if err := got.Decode(b[:n]); err == nil {
			t.Errorf("truncated request of %d bytes decoded", n)
		}
	}
}

func TestHeaderRejects(t *testing.T) {
	msg := mustHex(t, bindPDU)
	var h Header
	for i, mut := range []func(b []byte){
		func(b []byte) { b[0] = 4 },           // rpc_vers
		func(b []byte) { b[1] = 2 },           // rpc_vers_minor
		func(b []byte) { b[4] = 0x00 },        // big-endian integers
		func(b []byte) { b[4] = 0x11 },        // EBCDIC
		func(b []byte) { b[8], b[9] = 15, 0 }, // frag_length < 16
	} {
		b := bytes.Clone(msg)
		mut(b)
		if err := h.Decode(b); err == nil {
			t.Errorf("mutation %d accepted", i)
		}
	}
}

func echo(opnum uint16, in []byte) ([]byte, uint32) {
	if opnum == 1 {
		return nil, StatusOpRangeError
	}
	return bytes.Repeat(in, int(opnum)), 0
}

// FuzzDecode runs every decoder on arbitrary input.
func FuzzDecode(f *testing.F) {
	f.Add(mustHex(f, bindPDU))
	r := Request{Header: Header{Flags: 3, CallID: 2}, Stub: []byte("stub")}
	b := make([]byte, r.Size())
	r.Encode(b)
	f.Add(b)
	f.Fuzz(func(t *testing.T, msg []byte) {
		var (
			bind Bind
			ack  BindAck
			req  Request
			resp Response
			flt  Fault
		)
		bind.Decode(msg)
		ack.Decode(msg)
		flt.Decode(msg)
		resp.Decode(msg)
		if req.Decode(msg) == nil && len(req.Stub) > len(msg) {
			t.Fatal("stub beyond message")
		}
	})
}

// FuzzConn feeds arbitrary PDU streams to a bound Conn and checks that
// everything it emits is a well-formed PDU within the negotiated size.
func FuzzConn(f *testing.F) {
	f.Add(mustHex(f, bindPDU))
	r := Request{Header: Header{Flags: 1, CallID: 2}, Opnum: 3, Stub: bytes.Repeat([]byte("x"), 3000)}
	b := make([]byte, r.Size())
	r.Encode(b)
	f.Add(append(mustHex(f, bindPDU), b...))
	f.Fuzz(func(t *testing.T, stream []byte) {
		c := NewConn(`\PIPE\srvsvc`, &Interface{Syntax: srvsvc, Call: echo})
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
