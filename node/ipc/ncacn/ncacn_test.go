package ncacn

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/node/auth"
	"github.com/smbcluster/smbcluster/node/ipc/dcerpc"
)

type users map[string][16]byte

func (u users) NTHash(user, _ string) ([16]byte, bool) {
	h, ok := u[strings.ToLower(user)]
	return h, ok
}

var echoSyntax = dcerpc.SyntaxID{UUID: dcerpc.MustParseUUID("12345678-1234-abcd-ef00-0123456789ab"), Major: 1}

// release ends the waiting calls (opnum 2) of start's echo interface.
var release = make(chan struct{})

// start serves an echo interface (opnum 0 echoes, others are out of
// range) needing integrity.
func start(t *testing.T) string {
	t.Helper()
	cfg := &auth.Config{Users: users{"demo": auth.NTHash("demo")}, NetBIOSComputer: "SRV", NetBIOSDomain: "WG"}
	srv := &Server{Security: func() *dcerpc.Security { return NTLMSecurity(cfg) }}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	echo := &dcerpc.Interface{Syntax: echoSyntax, MinLevel: dcerpc.AuthLevelIntegrity, Concurrent: true,
		CallContext: func(ctx context.Context, op uint16, in []byte) ([]byte, uint32) {
			switch op {
			case 0:
				return bytes.Clone(in), 0
			case 2: // waits for release, or its cancellation
				select {
				case <-release:
					return []byte("released"), 0
				case <-ctx.Done():
					return nil, dcerpc.StatusProtoError
				}
			}
			return nil, dcerpc.StatusOpRangeError
		}}
	go srv.Serve(l, func(net.Addr) []*dcerpc.Interface { return []*dcerpc.Interface{echo} })
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return l.Addr().String()
}

// client is a minimal ncacn_ip_tcp client with raw NTLMSSP.
type client struct {
	t     *testing.T
	c     net.Conn
	sec   *auth.Security
	level uint8
	id    uint32
	last  bool
}

func dial(t *testing.T, addr string) *client {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c}
}

func (c *client) send(pdu []byte) {
	if _, err := c.c.Write(pdu); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) recv() []byte {
	pdu, err := readPDU(c.c)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return pdu
}

func withAuth(pdu []byte, typ, level uint8, token []byte) []byte {
	pdu = append(pdu, typ, level, 0, 0, 1, 0, 0, 0)
	pdu = append(pdu, token...)
	binary.LittleEndian.PutUint16(pdu[8:], uint16(len(pdu)))
	binary.LittleEndian.PutUint16(pdu[10:], uint16(len(token)))
	return pdu
}

func bindPDU(typ uint8) []byte {
	b := []byte{5, 0, typ, 3, 0x10, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0}
	b = binary.LittleEndian.AppendUint16(b, 4280)
	b = binary.LittleEndian.AppendUint16(b, 4280)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = append(b, 1, 0, 0, 0, 0, 0, 1, 0)
	b = append(b, echoSyntax.UUID[:]...)
	b = binary.LittleEndian.AppendUint16(b, echoSyntax.Major)
	b = binary.LittleEndian.AppendUint16(b, echoSyntax.Minor)
	b = append(b, dcerpc.NDR.UUID[:]...)
	b = binary.LittleEndian.AppendUint32(b, 2)
	binary.LittleEndian.PutUint16(b[8:], uint16(len(b)))
	return b
}

// bind authenticates with raw NTLMSSP at level (bind, bind_ack, auth3).
func (c *client) bind(level uint8, password string) {
	c.level = level
	c.send(withAuth(bindPDU(dcerpc.TypeBind), dcerpc.AuthTypeNTLMSSP, level, auth.NTLMNegotiate(true)))
	ack := c.recv()
	if ack[2] != dcerpc.TypeBindAck {
		c.t.Fatalf("bind answered with type %d", ack[2])
	}
	var h dcerpc.Header
	h.Decode(ack)
	token := ack[len(ack)-int(h.AuthLength):]
	ch, err := auth.ParseChallenge(token)
	if err != nil {
		c.t.Fatal(err)
	}
	msg, key := auth.NTLMAuthenticate(ch, "demo", "", auth.NTHash(password))
	a3 := []byte{5, 0, dcerpc.TypeAuth3, 3, 0x10, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0}
	c.send(withAuth(a3, dcerpc.AuthTypeNTLMSSP, level, msg))
	c.sec = auth.NewClientSecurity(ch, key)
}

// call sends a request (signed or sealed at the bound level unless
// plain) and returns the answer's type and stub.
func (c *client) call(opnum uint16, stub []byte, plain bool) (uint8, []byte) {
	c.sendCall(opnum, stub, plain)
	return c.recvCall()
}

// sendCall sends a request without waiting for its answer.
func (c *client) sendCall(opnum uint16, stub []byte, plain bool) {
	c.id++
	r := dcerpc.Request{Header: dcerpc.Header{Flags: 3, CallID: c.id}, AllocHint: uint32(len(stub)), Opnum: opnum, Stub: stub}
	pdu := make([]byte, r.Size())
	r.Encode(pdu)
	if !plain {
		pad := (16 - len(stub)%16) % 16
		pdu = append(pdu, make([]byte, pad)...)
		pdu = append(pdu, dcerpc.AuthTypeNTLMSSP, c.level, uint8(pad), 0, 1, 0, 0, 0)
		binary.LittleEndian.PutUint16(pdu[8:], uint16(len(pdu)+16))
		binary.LittleEndian.PutUint16(pdu[10:], 16)
		var sig [16]byte
		if c.level == dcerpc.AuthLevelPrivacy {
			sig = c.sec.Seal(pdu[24:len(pdu)-8], pdu)
		} else {
			sig = c.sec.Sign(pdu)
		}
		pdu = append(pdu, sig[:]...)
	}
	c.send(pdu)
}

// recvCall reads the next answer, all its fragments.
func (c *client) recvCall() (uint8, []byte) {
	var stubOut []byte
	for {
		typ, part := c.recvFragment()
		if typ == dcerpc.TypeFault {
			return typ, part
		}
		stubOut = append(stubOut, part...)
		if c.last {
			return typ, stubOut
		}
	}
}

// recvFragment reads and checks one response fragment.
func (c *client) recvFragment() (uint8, []byte) {
	resp := c.recv()
	c.last = resp[3]&dcerpc.FlagLastFrag != 0
	if resp[2] == dcerpc.TypeFault {
		var f dcerpc.Fault
		f.Decode(resp)
		return dcerpc.TypeFault, binary.LittleEndian.AppendUint32(nil, f.Status)
	}
	var h dcerpc.Header
	h.Decode(resp)
	al := int(h.AuthLength)
	start := len(resp) - al - 8
	pad := int(resp[start+2])
	msg, sig := resp[:start+8], resp[start+8:]
	var err error
	if c.level == dcerpc.AuthLevelPrivacy {
		err = c.sec.Unseal(resp[24:start], msg, sig)
	} else {
		err = c.sec.Verify(msg, sig)
	}
	if err != nil {
		c.t.Fatalf("response signature: %v", err)
	}
	return resp[2], resp[24 : start-pad]
}

func faultStatus(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

func TestSignAndSeal(t *testing.T) {
	addr := start(t)
	for _, level := range []uint8{dcerpc.AuthLevelIntegrity, dcerpc.AuthLevelPrivacy} {
		c := dial(t, addr)
		c.bind(level, "demo")
		for _, n := range []int{0, 5, 100, 5000} { // 5000: fragmented response
			in := bytes.Repeat([]byte{byte(n)}, n)
			typ, out := c.call(0, in, false)
			if typ != dcerpc.TypeResponse || !bytes.Equal(out, in) {
				t.Fatalf("level %d: echo of %d bytes: type %d, %d bytes", level, n, typ, len(out))
			}
		}
		if typ, out := c.call(7, nil, false); typ != dcerpc.TypeFault || faultStatus(out) != dcerpc.StatusOpRangeError {
			t.Errorf("unknown opnum: type %d %x", typ, out)
		}
	}
}

func TestRefusals(t *testing.T) {
	addr := start(t)
	// Unauthenticated: bound, but the interface wants integrity.
	c := dial(t, addr)
	c.send(bindPDU(dcerpc.TypeBind))
	if ack := c.recv(); ack[2] != dcerpc.TypeBindAck {
		t.Fatalf("plain bind: type %d", ack[2])
	}
	if typ, out := c.call(0, []byte("x"), true); typ != dcerpc.TypeFault || faultStatus(out) != dcerpc.StatusAccessDenied {
		t.Errorf("unauthenticated call: %d %x", typ, out)
	}
	// Level connect is below the interface's.
	c = dial(t, addr)
	c.bind(dcerpc.AuthLevelConnect, "demo")
	if typ, out := c.call(0, []byte("x"), true); typ != dcerpc.TypeFault || faultStatus(out) != dcerpc.StatusAccessDenied {
		t.Errorf("level connect: %d %x", typ, out)
	}
	// A wrong password: auth3 fails silently, the call is refused.
	c = dial(t, addr)
	c.bind(dcerpc.AuthLevelIntegrity, "wrong")
	c.id++
	r := dcerpc.Request{Header: dcerpc.Header{Flags: 3, CallID: c.id}}
	pdu := make([]byte, r.Size())
	r.Encode(pdu)
	pdu = withAuth(pdu, dcerpc.AuthTypeNTLMSSP, dcerpc.AuthLevelIntegrity, make([]byte, 16))
	c.send(pdu)
	if f := c.recv(); f[2] != dcerpc.TypeFault {
		t.Errorf("call after a failed logon: type %d", f[2])
	}
	// Unknown provider and bad levels: bind_nak.
	for _, tc := range []struct{ typ, level uint8 }{{99, dcerpc.AuthLevelIntegrity}, {dcerpc.AuthTypeNTLMSSP, 0}, {dcerpc.AuthTypeNTLMSSP, 7}, {dcerpc.AuthTypeKerberos, dcerpc.AuthLevelPrivacy}} {
		c = dial(t, addr)
		c.send(withAuth(bindPDU(dcerpc.TypeBind), tc.typ, tc.level, auth.NTLMNegotiate(true)))
		if nak := c.recv(); nak[2] != dcerpc.TypeBindNak {
			t.Errorf("bind with auth type %d level %d: type %d", tc.typ, tc.level, nak[2])
		}
	}
	// A tampered signature.
	c = dial(t, addr)
	c.bind(dcerpc.AuthLevelIntegrity, "demo")
	c.id++
	r = dcerpc.Request{Header: dcerpc.Header{Flags: 3, CallID: c.id}, Stub: []byte("0123456789abcdef")}
	pdu = make([]byte, r.Size())
	r.Encode(pdu)
	pdu = withAuth(pdu, dcerpc.AuthTypeNTLMSSP, dcerpc.AuthLevelIntegrity, nil)
	binary.LittleEndian.PutUint16(pdu[8:], uint16(len(pdu)+16))
	binary.LittleEndian.PutUint16(pdu[10:], 16)
	sig := c.sec.Sign(pdu)
	pdu = append(pdu, sig[:]...)
	pdu[30] ^= 1
	c.send(pdu)
	if f := c.recv(); f[2] != dcerpc.TypeFault {
		t.Errorf("tampered request: type %d", f[2])
	}
}

// TestBadInput: malformed PDUs close the connection or are answered,
// and the server goes on serving.
func TestBadInput(t *testing.T) {
	addr := start(t)
	for _, junk := range [][]byte{
		{5, 0, 0, 3, 0x10, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0},                            // frag_length < header
		{4, 0, 11, 3, 0x10, 0, 0, 0, 16, 0, 0, 0, 1, 0, 0, 0},                          // version 4
		{5, 0, 99, 3, 0x10, 0, 0, 0, 16, 0, 0, 0, 1, 0, 0, 0},                          // unknown type
		{5, 0, 0, 3, 0x10, 0, 0, 0, 24, 0, 200, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, // auth_length beyond
		{5, 0, 11, 3, 0x10, 0, 0, 0, 24, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},  // a bind cut short
	} {
		c := dial(t, addr)
		c.send(junk)
		// A fault or a bind_nak, or the connection closed.
		if pdu, err := readPDU(c.c); err == nil && pdu[2] != dcerpc.TypeFault && pdu[2] != dcerpc.TypeBindNak {
			t.Errorf("junk %x answered with type %d", junk, pdu[2])
		} else if err != nil && err != io.EOF {
			t.Errorf("junk %x: %v", junk, err)
		}
	}
	// Oversized: a fragmented request beyond the bound gets a fault.
	c := dial(t, addr)
	c.bind(dcerpc.AuthLevelPrivacy, "demo")
	stub := make([]byte, 4000)
	for i := 0; i < 80; i++ {
		c.id = 100
		r := dcerpc.Request{Header: dcerpc.Header{CallID: c.id}, Stub: stub}
		if i == 0 {
			r.Flags = dcerpc.FlagFirstFrag
		}
		pdu := make([]byte, r.Size())
		r.Encode(pdu)
		pdu = append(pdu, dcerpc.AuthTypeNTLMSSP, dcerpc.AuthLevelPrivacy, 0, 0, 1, 0, 0, 0)
		binary.LittleEndian.PutUint16(pdu[8:], uint16(len(pdu)+16))
		binary.LittleEndian.PutUint16(pdu[10:], 16)
		sig := c.sec.Seal(pdu[24:len(pdu)-8], pdu)
		c.send(append(pdu, sig[:]...))
	}
	if f := c.recv(); f[2] != dcerpc.TypeFault {
		t.Errorf("oversized request: type %d", f[2])
	}
	// Still serving.
	c = dial(t, addr)
	c.bind(dcerpc.AuthLevelIntegrity, "demo")
	if typ, _ := c.call(0, []byte("ok"), false); typ != dcerpc.TypeResponse {
		t.Errorf("after bad input: type %d", typ)
	}
}

// TestLimits: connections beyond MaxConnections are closed at once, and
// one that sends nothing is closed after BindTimeout.
func TestLimits(t *testing.T) {
	srv := &Server{MaxConnections: 1, BindTimeout: 100 * time.Millisecond}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l, func(net.Addr) []*dcerpc.Interface { return nil })
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	first := dial(t, l.Addr().String())
	first.send(bindPDU(dcerpc.TypeBind)) // bound: no deadline any more
	if ack := first.recv(); ack[2] != dcerpc.TypeBindAck {
		t.Fatalf("bind: type %d", ack[2])
	}
	second := dial(t, l.Addr().String())
	if _, err := readPDU(second.c); err != io.EOF {
		t.Errorf("a connection past the limit: %v, want EOF", err)
	}
	first.c.Close()
	// The slot frees once the server saw the close; a silent connection
	// then ends at the bind timeout.
	for {
		c := dial(t, l.Addr().String())
		start := time.Now()
		if _, err := readPDU(c.c); err != io.EOF {
			t.Fatalf("silent connection: %v, want EOF", err)
		}
		if time.Since(start) >= 100*time.Millisecond {
			break
		}
	}
}

// TestConcurrentCalls: a call that waits does not hold up the next call
// on its connection; the answers come signed in the order sent.
func TestConcurrentCalls(t *testing.T) {
	addr := start(t)
	c := dial(t, addr)
	c.bind(dcerpc.AuthLevelPrivacy, "demo")
	c.sendCall(2, []byte("wait"), false)
	if typ, out := c.call(0, []byte("meanwhile"), false); typ != dcerpc.TypeResponse || string(out) != "meanwhile" {
		t.Fatalf("second call: %d %q", typ, out)
	}
	close(release)
	if typ, out := c.recvCall(); typ != dcerpc.TypeResponse || string(out) != "released" {
		t.Fatalf("waiting call: %d %q", typ, out)
	}
}
