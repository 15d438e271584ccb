package ipc

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/smbcluster/smbcluster/node/ipc/dcerpc"
	"github.com/smbcluster/smbcluster/node/ipc/ndr"
	"github.com/smbcluster/smbcluster/node/smb2/utf16le"
)

// unhex decodes hex with spaces, newlines and // comments allowed.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	var clean strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		clean.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(clean.String())
	if err != nil {
		t.Fatalf("bad hex: %v", err)
	}
	return b
}

func testEnv() *Env {
	return &Env{
		ServerName: "SMBCLUSTER",
		Domain:     "WORKGROUP",
		Comment:    "smbcluster node",
		Shares: func() []ShareInfo {
			return []ShareInfo{
				{Name: "IPC$", Type: ShareTypeIPC | ShareTypeSpecial, Comment: "IPC"},
				{Name: "data", Type: ShareTypeDisk, Comment: "Data", Path: `C:\data`, CurrentUses: 2, Flags: 0x30},
			}
		},
	}
}

func open(t testing.TB, name string, env *Env) Pipe {
	t.Helper()
	p, err := Open(name, env)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// readAll collects the next message, reading at most chunk bytes at a time.
func readAll(t testing.TB, p Pipe, chunk int) []byte {
	t.Helper()
	var msg []byte
	for {
		b, more, err := p.Read(chunk)
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		msg = append(msg, b...)
		if !more {
			return msg
		}
	}
}

// A bind like Windows sends: NDR, NDR64 and bind time feature negotiation
// for srvsvc 3.0, in three presentation contexts.
const windowsBind = `
05 00 0b 03 10 00 00 00 a0 00 00 00 01 00 00 00 // bind, call_id 1, frag 160
b8 10 b8 10 00 00 00 00                         // max xmit/recv 4280, assoc 0
03 00 00 00                                     // 3 context items
00 00 01 00 c8 4f 32 4b 70 16 d3 01 12 78 5a 47 bf 6e e1 88 03 00 00 00
            04 5d 88 8a eb 1c c9 11 9f e8 08 00 2b 10 48 60 02 00 00 00
01 00 01 00 c8 4f 32 4b 70 16 d3 01 12 78 5a 47 bf 6e e1 88 03 00 00 00
            33 05 71 71 ba be 37 49 83 19 b5 db ef 9c cc 36 01 00 00 00
02 00 01 00 c8 4f 32 4b 70 16 d3 01 12 78 5a 47 bf 6e e1 88 03 00 00 00
            2c 1c b7 6c 12 98 40 45 03 00 00 00 00 00 00 00 01 00 00 00
`

const windowsBindAck = `
05 00 0c 03 10 00 00 00 74 00 00 00 01 00 00 00 // bind_ack, frag 116
b8 10 b8 10 f0 53 00 00                         // 4280/4280, new assoc group
0d 00 5c 50 49 50 45 5c 73 72 76 73 76 63 00    // "\PIPE\srvsvc"
00                                              // pad to 4
03 00 00 00                                     // 3 results
00 00 00 00 04 5d 88 8a eb 1c c9 11 9f e8 08 00 2b 10 48 60 02 00 00 00 // acceptance, NDR
02 00 02 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 // provider rejection: transfer syntaxes
03 00 03 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 // negotiate_ack, features 0x03
`

func TestBindAckBytes(t *testing.T) {
	p := open(t, "SRVSVC", testEnv())
	out, more, err := p.Transceive(unhex(t, windowsBind), 4280)
	if err != nil || more {
		t.Fatalf("Transceive: more=%v err=%v", more, err)
	}
	if want := unhex(t, windowsBindAck); !bytes.Equal(out, want) {
		t.Fatalf("bind_ack\n got %x\nwant %x", out, want)
	}
}

// shareEnumStub hand-encodes the [in] parameters of NetrShareEnum
// ([MS-SRVS] 3.1.4.8) with ServerName `\\SMBCLUSTER`, a NULL container buffer
// and a resume handle of 0.
func shareEnumStub(level uint32) []byte {
	var b []byte
	u32 := func(v uint32) { b = binary.LittleEndian.AppendUint32(b, v) }
	u32(0x00020000) // ServerName referent
	name := `\\SMBCLUSTER`
	n := uint32(len(name) + 1)
	u32(n)
	u32(0)
	u32(n)
	b = utf16le.Append(b, name)
	b = append(b, 0, 0)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	u32(level) // InfoStruct.Level
	u32(level) // union discriminant
	u32(0x00020004)
	u32(0)          // EntriesRead
	u32(0)          // Buffer: NULL
	u32(0xffffffff) // PreferedMaximumLength
	u32(0x00020008) // ResumeHandle referent
	u32(0)
	return b
}

// requestPDU wraps a stub in a single-fragment request PDU.
func requestPDU(callID uint32, ctx, opnum uint16, stub []byte) []byte {
	r := dcerpc.Request{
		Header:    dcerpc.Header{Flags: dcerpc.FlagFirstFrag | dcerpc.FlagLastFrag, CallID: callID},
		AllocHint: uint32(len(stub)), ContextID: ctx, Opnum: opnum, Stub: stub,
	}
	b := make([]byte, r.Size())
	r.Encode(b)
	return b
}

const shareEnum1Response = `
05 00 02 03 10 00 00 00 b4 00 00 00 02 00 00 00 // response, frag 180, call 2
9c 00 00 00 00 00 00 00                         // alloc hint 156, ctx 0
01 00 00 00 01 00 00 00                         // Level 1, union tag 1
00 00 02 00 02 00 00 00 04 00 02 00             // container ptr, EntriesRead 2, Buffer ptr
02 00 00 00                                     // array max count
08 00 02 00 03 00 00 80 0c 00 02 00             // IPC$: name ptr, STYPE_IPC|STYPE_SPECIAL, remark ptr
10 00 02 00 00 00 00 00 14 00 02 00             // data: name ptr, STYPE_DISKTREE, remark ptr
05 00 00 00 00 00 00 00 05 00 00 00 49 00 50 00 43 00 24 00 00 00 00 00 // "IPC$"
04 00 00 00 00 00 00 00 04 00 00 00 49 00 50 00 43 00 00 00             // "IPC"
05 00 00 00 00 00 00 00 05 00 00 00 64 00 61 00 74 00 61 00 00 00 00 00 // "data"
05 00 00 00 00 00 00 00 05 00 00 00 44 00 61 00 74 00 61 00 00 00 00 00 // "Data"
02 00 00 00                                     // TotalEntries
18 00 02 00 00 00 00 00                         // ResumeHandle ptr, 0
00 00 00 00                                     // NERR_Success
`

func bindSrvsvc(t testing.TB, p Pipe) {
	t.Helper()
	if _, err := p.Write(unhex(t, windowsBind)); err != nil {
		t.Fatal(err)
	}
	ack := readAll(t, p, 4280)
	if ack[2] != dcerpc.TypeBindAck {
		t.Fatalf("bind answered with PDU type %d", ack[2])
	}
}

func TestShareEnumLevel1Bytes(t *testing.T) {
	p := open(t, "srvsvc", testEnv())
	bindSrvsvc(t, p)
	out, more, err := p.Transceive(requestPDU(2, 0, 15, shareEnumStub(1)), 4280)
	if err != nil || more {
		t.Fatalf("Transceive: more=%v err=%v", more, err)
	}
	if want := unhex(t, shareEnum1Response); !bytes.Equal(out, want) {
		t.Fatalf("NetrShareEnum response\n got %x\nwant %x", out, want)
	}
}

// call sends one request and returns the reassembled response stub, or the
// fault status.
func call(t testing.TB, p Pipe, callID uint32, ctx, opnum uint16, stub []byte) ([]byte, uint32) {
	t.Helper()
	if _, err := p.Write(requestPDU(callID, ctx, opnum, stub)); err != nil {
		t.Fatal(err)
	}
	var out []byte
	for {
		pdu := readAll(t, p, 1000)
		var h dcerpc.Header
		if err := h.Decode(pdu); err != nil || h.CallID != callID {
			t.Fatalf("bad PDU %x: %v", pdu, err)
		}
		if h.Type == dcerpc.TypeFault {
			var f dcerpc.Fault
			if err := f.Decode(pdu); err != nil {
				t.Fatal(err)
			}
			return nil, f.Status
		}
		var r dcerpc.Response
		if err := r.Decode(pdu); err != nil || len(pdu) > dcerpc.MaxFrag {
			t.Fatalf("bad response fragment (%d bytes): %v", len(pdu), err)
		}
		if (len(out) == 0) != (r.Flags&dcerpc.FlagFirstFrag != 0) {
			t.Fatalf("PFC_FIRST_FRAG wrong on fragment at %d", len(out))
		}
		out = append(out, r.Stub...)
		if r.Flags&dcerpc.FlagLastFrag != 0 {
			return out, 0
		}
		if len(r.Stub)%8 != 0 {
			t.Fatalf("non-final fragment carries %d stub bytes", len(r.Stub))
		}
	}
}

func TestFaults(t *testing.T) {
	p := open(t, "srvsvc", testEnv())
	bindSrvsvc(t, p)
	if _, st := call(t, p, 5, 0, 999, nil); st != dcerpc.StatusOpRangeError {
		t.Errorf("unknown opnum: status %#x", st)
	}
	if _, st := call(t, p, 6, 7, 15, shareEnumStub(1)); st != dcerpc.StatusUnknownIf {
		t.Errorf("unknown context: status %#x", st)
	}
	if _, st := call(t, p, 7, 1, 15, shareEnumStub(1)); st != dcerpc.StatusUnknownIf {
		t.Errorf("rejected context: status %#x", st)
	}
	if _, st := call(t, p, 8, 0, 15, shareEnumStub(1)[:30]); st != dcerpc.StatusBadStubData {
		t.Errorf("truncated stub: status %#x", st)
	}
	// After all that the association still works.
	if _, st := call(t, p, 9, 0, 15, shareEnumStub(1)); st != 0 {
		t.Errorf("status %#x", st)
	}
}

func TestRequestBeforeBind(t *testing.T) {
	p := open(t, "srvsvc", testEnv())
	if _, st := call(t, p, 1, 0, 15, shareEnumStub(1)); st != dcerpc.StatusProtoError {
		t.Errorf("status %#x", st)
	}
}

func TestSecondBindIsNaked(t *testing.T) {
	p := open(t, "srvsvc", testEnv())
	bindSrvsvc(t, p)
	out, _, err := p.Transceive(unhex(t, windowsBind), 4280)
	if err != nil || out[2] != dcerpc.TypeBindNak {
		t.Fatalf("second bind: %x %v", out, err)
	}
}

func TestManySharesFragmentAndPartialReads(t *testing.T) {
	env := testEnv()
	var shares []ShareInfo
	for i := range 300 {
		shares = append(shares, ShareInfo{Name: fmt.Sprintf("share%03d", i), Comment: strings.Repeat("c", i%40)})
	}
	env.Shares = func() []ShareInfo { return shares }
	p := open(t, "srvsvc", env)
	bindSrvsvc(t, p)
	stub, st := call(t, p, 2, 0, 15, shareEnumStub(1))
	if st != 0 || len(stub) < 3*dcerpc.MaxFrag {
		t.Fatalf("status %#x, %d bytes", st, len(stub))
	}
	got := decodeShareEnum1(t, stub)
	if len(got) != len(shares) {
		t.Fatalf("%d shares, want %d", len(got), len(shares))
	}
	for i := range got {
		if got[i] != shares[i] {
			t.Fatalf("share %d: %+v, want %+v", i, got[i], shares[i])
		}
	}
}

func TestFragmentedRequestAndByteWrites(t *testing.T) {
	p := open(t, "srvsvc", testEnv())
	for _, c := range unhex(t, windowsBind) { // one byte per write
		if _, err := p.Write([]byte{c}); err != nil {
			t.Fatal(err)
		}
	}
	readAll(t, p, 7)
	stub := shareEnumStub(1)
	var all []byte
	for off := 0; off < len(stub); off += 8 {
		r := dcerpc.Request{Header: dcerpc.Header{CallID: 3}, AllocHint: uint32(len(stub) - off), Opnum: 15,
			Stub: stub[off:min(off+8, len(stub))]}
		if off == 0 {
			r.Flags |= dcerpc.FlagFirstFrag
		}
		if off+8 >= len(stub) {
			r.Flags |= dcerpc.FlagLastFrag
		}
		b := make([]byte, r.Size())
		r.Encode(b)
		all = append(all, b...)
	}
	if _, err := p.Write(all); err != nil { // all fragments in one write
		t.Fatal(err)
	}
	out := readAll(t, p, 4280)
	if want := unhex(t, shareEnum1Response); !bytes.Equal(out[24:], want[24:]) || binary.LittleEndian.Uint32(out[12:]) != 3 {
		t.Fatalf("reassembled call answered %x", out)
	}
}

func TestPipeStates(t *testing.T) {
	if _, err := Open("lanman", nil); !errors.Is(err, ErrNoSuchPipe) {
		t.Errorf("Open(lanman): %v", err)
	}
	for _, n := range []string{"srvsvc", "SrvSvc", `\PIPE\srvsvc`, "wkssvc"} {
		if !Known(n) {
			t.Errorf("Known(%q) = false", n)
		}
	}
	p := open(t, "srvsvc", nil)
	if _, _, err := p.Read(100); !errors.Is(err, ErrPipeEmpty) {
		t.Errorf("Read of empty pipe: %v", err)
	}
	p.Write(unhex(t, windowsBind))
	if _, _, err := p.Transceive(requestPDU(2, 0, 15, shareEnumStub(1)), 100); !errors.Is(err, ErrPipeBusy) {
		t.Errorf("Transceive with unread output: %v", err)
	}
	b, more, err := p.Read(0)
	if len(b) != 0 || !more || err != nil {
		t.Errorf("Read(0) = %d bytes, %v, %v", len(b), more, err)
	}
	if _, err := p.Write([]byte{5, 0, 0, 3, 0x10, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0}); !errors.Is(err, ErrProtocol) {
		t.Errorf("frag_length 8: %v", err)
	}
	if _, err := p.Write(unhex(t, windowsBind)); !errors.Is(err, ErrProtocol) {
		t.Errorf("write after protocol error: %v", err)
	}
	p.Close()
	if _, _, err := p.Read(10); !errors.Is(err, ErrClosed) {
		t.Errorf("Read after Close: %v", err)
	}
}

// decodeShareEnum1 decodes the [out] parameters of NetrShareEnum level 1.
func decodeShareEnum1(t testing.TB, stub []byte) []ShareInfo {
	t.Helper()
	r := ndr.NewReader(stub)
	if r.Uint32() != 1 || r.Uint32() != 1 || !r.Pointer() {
		t.Fatal("bad level or container")
	}
	n := r.Uint32()
	r.Pointer()
	if r.Uint32() != n {
		t.Fatal("array count differs from EntriesRead")
	}
	shares := make([]ShareInfo, n)
	for i := range shares {
		r.Pointer()
		shares[i].Type = r.Uint32()
		r.Pointer()
	}
	for i := range shares {
		shares[i].Name = r.String()
		shares[i].Comment = r.String()
	}
	total := r.Uint32()
	if r.Pointer() {
		r.Uint32()
	}
	if status := r.Uint32(); r.Err() != nil || total != n || status != 0 || r.Offset() != len(stub) {
		t.Fatalf("tail: total %d status %d err %v, %d of %d bytes", total, status, r.Err(), r.Offset(), len(stub))
	}
	return shares
}

// getInfoStub hand-encodes NetrShareGetInfo's [in] parameters with a NULL
// ServerName.
func getInfoStub(share string, level uint32) []byte {
	b := make([]byte, 4)
	n := uint32(utf16le.Len(share)/2 + 1)
	b = binary.LittleEndian.AppendUint32(b, n)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint32(b, n)
	b = utf16le.Append(b, share)
	b = append(b, 0, 0)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return binary.LittleEndian.AppendUint32(b, level)
}

func TestShareGetInfo(t *testing.T) {
	p := open(t, "srvsvc", testEnv())
	bindSrvsvc(t, p)
	cases := []struct {
		share string
		level uint32
		want  string
	}{
		{"nosuch", 1, "01000000 00000000 06090000"},           // tag, NULL arm, NERR_NetNameNotFound
		{"data", 7, "07000000 7c000000"},                      // tag, [default] arm, ERROR_INVALID_LEVEL
		{"data", 503, "f7010000 00000000 7c000000"},           // tag, NULL arm, ERROR_INVALID_LEVEL
		{"DATA", 1005, "ed030000 00000200 30000000 00000000"}, // shi1005_flags
		{"IPC$", 0, "00000000 00000200 04000200 05000000 00000000 05000000 49005000 43002400 0000 0000 00000000"},
	}
	for i, c := range cases {
		out, st := call(t, p, uint32(10+i), 0, 16, getInfoStub(c.share, c.level))
		if want := unhex(t, c.want); st != 0 || !bytes.Equal(out, want) {
			t.Errorf("NetrShareGetInfo(%q, %d) = %x (fault %#x), want %x", c.share, c.level, out, st, want)
		}
	}
}

// TestOutputBound pipelines requests whose answers exceed maxPendingOutput:
// the pipe stops processing, refuses further writes while output is unread,
// and resumes as the client reads.
func TestOutputBound(t *testing.T) {
	env := testEnv()
	var shares []ShareInfo
	for i := range 500 {
		shares = append(shares, ShareInfo{Name: fmt.Sprintf("share%03d", i), Comment: strings.Repeat("c", 30)})
	}
	env.Shares = func() []ShareInfo { return shares }
	p := open(t, "srvsvc", env)
	bindSrvsvc(t, p)
	const calls = 60
	var reqs []byte
	for i := range calls {
		reqs = append(reqs, requestPDU(uint32(100+i), 0, 15, shareEnumStub(1))...)
	}
	if _, err := p.Write(reqs); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Write(requestPDU(99, 0, 15, shareEnumStub(1))); !errors.Is(err, ErrPipeBusy) {
		t.Errorf("write with %d bytes unread: %v", p.(*pipe).outLen, err)
	}
	done := 0
	for done < calls {
		pdu := readAll(t, p, 4280)
		var r dcerpc.Response
		if err := r.Decode(pdu); err != nil || r.CallID != uint32(100+done) {
			t.Fatalf("response %d: call %d, %v", done, r.CallID, err)
		}
		if r.Flags&dcerpc.FlagLastFrag != 0 {
			done++
		}
	}
	if _, _, err := p.Read(10); !errors.Is(err, ErrPipeEmpty) {
		t.Errorf("after draining: %v", err)
	}
}
