package smb2

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The SMB2 NEGOTIATE request example on wiki.wireshark.org/SMB2/NegotiateProtocol
// (an early client offering the single dialect 0x0000).
func TestDecodeWiresharkNegotiate(t *testing.T) {
	msg := unhex(t, `
		FE 53 4D 42 40 00 00 00 00 00 00 00 00 00 3F 00
		00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
		FF FE 00 00 00 00 00 00 00 00 00 00 00 00 00 00
		00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
		24 00 01 00 00 00 00 00 00 00 00 00 00 00 00 00
		00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
		00 00 00 00 00 00`)
	var h Header
	if err := h.Decode(msg); err != nil || h.Command != CmdNegotiate || h.Credits != 0x3F {
		t.Fatalf("header %+v, %v", h, err)
	}
	var r NegotiateRequest
	if err := r.Decode(msg); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.Dialects, []uint16{0}) || r.Has311() || r.Contexts != nil {
		t.Fatalf("got %+v", r)
	}
}

// A captured SMB1 NEGOTIATE offering only "NT LM 0.12" (Linkbit CIFS trace
// sample), and one built the way smbclient and Windows offer SMB2.
func TestDecodeSMB1Negotiate(t *testing.T) {
	msg := unhex(t, `FF 53 4D 42 72 00 00 00 00 18 53 C0 00 00 00 00 00 00 00 00 00 00 00 00
		00 00 FF FE 00 00 00 00 00 0C 00 02 4E 54 20 4C 4D 20 30 2E 31 32 00`)
	d, err := DecodeSMB1Negotiate(msg)
	if err != nil || !reflect.DeepEqual(d, []string{"NT LM 0.12"}) {
		t.Fatalf("got %q, %v", d, err)
	}
	want := []string{"NT LM 0.12", "SMB 2.002", "SMB 2.???"}
	msg = EncodeSMB1Negotiate(want)
	if d, err = DecodeSMB1Negotiate(msg); err != nil || !reflect.DeepEqual(d, want) {
		t.Fatalf("got %q, %v", d, err)
	}
	for n := range msg {
		if _, err := DecodeSMB1Negotiate(msg[:n]); err == nil {
			t.Fatalf("prefix %d decoded", n)
		}
	}
}

func TestReadResponse(t *testing.T) {
	r := ReadResponse{DataOffset: ReadResponseDataOffset, DataLength: 5, DataRemaining: 0}
	msg := make([]byte, HeaderSize+r.Size())
	(&Header{Command: CmdRead, Flags: FlagServerToRedir}).Encode(msg)
	r.Encode(msg[HeaderSize:])
	msg = append(msg, "hello"...)
	var got ReadResponse
	if err := got.Decode(msg); err != nil {
		t.Fatal(err)
	}
	if string(got.Data) != "hello" || got.DataOffset != 0x50 || got.DataLength != 5 {
		t.Fatalf("got %+v", got)
	}
	if err := got.Decode(msg[:len(msg)-1]); err == nil {
		t.Fatal("short data decoded")
	}
}

func TestDecodeWriteHeader(t *testing.T) {
	w := WriteRequest{Offset: 4096, FileID: fid, Data: bytes.Repeat([]byte{1}, 1000), Flags: WriteFlagWriteUnbuffered}
	msg := pdu(CmdWrite, &w, 0)
	hdr, err := DecodeWriteHeader(msg[HeaderSize : HeaderSize+WriteRequestFixedSize])
	if err != nil {
		t.Fatal(err)
	}
	if hdr.DataOffset != 0x70 || hdr.Length != 1000 || hdr.Offset != 4096 || hdr.FileID != fid || hdr.Data != nil {
		t.Fatalf("got %+v", hdr)
	}
	le.PutUint16(msg[HeaderSize+2:], 0x60) // data overlapping the fixed part
	if _, err := DecodeWriteHeader(msg[HeaderSize:]); !errors.Is(err, ErrBadOffset) {
		t.Fatalf("overlapping DataOffset: %v", err)
	}
}

func TestSplitCompound(t *testing.T) {
	a := pdu(CmdCreate, &CreateRequest{Name: "a"}, 0)
	b := pdu(CmdClose, &CloseRequest{FileID: AnyFileID}, 0)
	pad := align8(len(a)) - len(a)
	le.PutUint32(a[20:], uint32(len(a)+pad))
	msg := append(append(bytes.Clone(a), make([]byte, pad)...), b...)
	pdus, err := SplitCompound(msg)
	if err != nil || len(pdus) != 2 {
		t.Fatalf("got %d pdus, %v", len(pdus), err)
	}
	if !bytes.Equal(pdus[1], b) || len(pdus[0]) != len(a)+pad {
		t.Fatal("wrong split")
	}
	if p, err := SplitCompound(b); err != nil || len(p) != 1 {
		t.Fatalf("single: %v", err)
	}
	bad := func(name string, mutate func(m []byte) []byte) {
		m := mutate(bytes.Clone(msg))
		if _, err := SplitCompound(m); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	bad("unaligned", func(m []byte) []byte { le.PutUint32(m[20:], uint32(len(a)+pad-1)); return m })
	bad("short next", func(m []byte) []byte { le.PutUint32(m[20:], 32); return m })
	bad("past end", func(m []byte) []byte { le.PutUint32(m[20:], uint32(len(m)+8)); return m })
	bad("to end", func(m []byte) []byte { le.PutUint32(m[20:], uint32(align8(len(m)))); return m[:align8(len(m))] })
	bad("second protocol id", func(m []byte) []byte { m[len(a)+pad] = 0xFD; return m })
	bad("truncated second", func(m []byte) []byte { return m[:len(a)+pad+10] })
}

func TestDecodeOplockBreak(t *testing.T) {
	lease, err := DecodeOplockBreak(pdu(CmdOplockBreak, &LeaseBreakAck{}, 0))
	if err != nil || !lease {
		t.Fatal(lease, err)
	}
	lease, err = DecodeOplockBreak(pdu(CmdOplockBreak, &OplockBreakAck{}, 0))
	if err != nil || lease {
		t.Fatal(lease, err)
	}
	if _, err = DecodeOplockBreak(pdu(CmdOplockBreak, &LeaseBreakNotification{}, 0)); err == nil {
		t.Fatal("44-byte body accepted as an acknowledgment")
	}
}

func TestErrorResponseIsNineBytes(t *testing.T) {
	msg := pdu(CmdRead, &ErrorResponse{}, 0xFF)
	if want := []byte{9, 0, 0, 0, 0, 0, 0, 0, 0}; !bytes.Equal(msg[HeaderSize:], want) {
		t.Fatalf("body % x", msg[HeaderSize:])
	}
}

func TestNegotiateContextPayloads(t *testing.T) {
	check := func(name string, in, out interface {
		Append([]byte) []byte
		Decode([]byte) error
	}) {
		data := in.Append(nil)
		if err := out.Decode(data); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(in, out) {
			t.Fatalf("%s: got %+v want %+v", name, out, in)
		}
		for n := 0; n < len(data); n++ {
			if out.Decode(data[:n]) == nil && name != "netname" {
				t.Fatalf("%s: prefix %d decoded", name, n)
			}
		}
	}
	check("preauth", &PreauthIntegrity{HashAlgorithms: []uint16{HashSHA512}, Salt: []byte{1, 2, 3}}, &PreauthIntegrity{})
	check("encryption", &EncryptionCaps{Ciphers: []uint16{CipherAES256GCM, CipherAES128GCM}}, &EncryptionCaps{})
	check("signing", &SigningCaps{Algorithms: []uint16{SigningAESGMAC, SigningAESCMAC}}, &SigningCaps{})
	check("compression", &CompressionCaps{Flags: CompressionCapabilitiesFlagChained, Algorithms: []uint16{CompressionLZ4}}, &CompressionCaps{})
	check("transport", &TransportCaps{Flags: TransportCapsAcceptTransportLevelSecurity}, &TransportCaps{})
	check("netname", &Netname{Name: "fileserver.example"}, &Netname{})
}

func TestCreateContextPayloads(t *testing.T) {
	check := func(name string, in, out interface {
		Append([]byte) []byte
		Decode([]byte) error
	}, size int) {
		data := in.Append(nil)
		if len(data) != size {
			t.Fatalf("%s: %d bytes, want %d", name, len(data), size)
		}
		if err := out.Decode(data); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(in, out) {
			t.Fatalf("%s: got %+v want %+v", name, out, in)
		}
	}
	check("MxAc req", &MxAcRequest{Timestamp: 5, HasTimestamp: true}, &MxAcRequest{}, 8)
	check("MxAc req empty", &MxAcRequest{}, &MxAcRequest{}, 0)
	check("MxAc resp", &MxAcResponse{QueryStatus: uint32(StatusAccessDenied), MaximalAccess: 1}, &MxAcResponse{}, 8)
	check("QFid", &QFidResponse{DiskFileID: 1, VolumeID: 2}, &QFidResponse{}, 32)
	check("AlSi", &AllocationSizeRequest{AllocationSize: 1 << 20}, &AllocationSizeRequest{}, 8)
	check("TWrp", &TimewarpRequest{Timestamp: 1234}, &TimewarpRequest{}, 8)
	check("RqLs v1", &LeaseRequest{Key: key2, State: LeaseRead, Version: 1}, &LeaseRequest{}, 32)
	check("RqLs v2", &LeaseRequest{Key: key2, State: LeaseRead | LeaseWrite, Flags: LeaseFlagParentLeaseKeySet, ParentKey: guid, Epoch: 9, Version: 2}, &LeaseRequest{}, 52)
	check("RqLs resp v2", &LeaseResponse{Key: key2, State: LeaseRead, Flags: LeaseFlagBreakInProgress, Epoch: 2, Version: 2}, &LeaseResponse{}, 52)
	check("DHnQ", &DurableRequest{}, &DurableRequest{}, 16)
	check("DHnQ resp", &DurableResponse{}, &DurableResponse{}, 8)
	check("DHnC", &DurableReconnect{FileID: fid}, &DurableReconnect{}, 16)
	check("DH2Q", &DurableRequestV2{Timeout: 60000, Flags: DurableHandleFlagPersistent, CreateGUID: guid}, &DurableRequestV2{}, 32)
	check("DH2Q resp", &DurableResponseV2{Timeout: 60000}, &DurableResponseV2{}, 8)
	check("DH2C", &DurableReconnectV2{FileID: fid, CreateGUID: guid, Flags: DurableHandleFlagPersistent}, &DurableReconnectV2{}, 36)
}

func TestCreateContextChain(t *testing.T) {
	cs := []CreateContext{{Name: "MxAc"}, {Name: "RqLs", Data: make([]byte, 52)}, {Name: CreateCtxAppInstanceID, Data: make([]byte, 20)}, {Name: "QFid"}}
	b := make([]byte, CreateContextsSize(cs))
	if n := EncodeCreateContexts(b, cs); n != len(b) {
		t.Fatalf("wrote %d of %d", n, len(b))
	}
	got, err := DecodeCreateContexts(b)
	if err != nil || !reflect.DeepEqual(got, cs) {
		t.Fatalf("got %+v, %v", got, err)
	}
	if d, ok := FindCreateContext(got, "RqLs"); !ok || len(d) != 52 {
		t.Fatal("FindCreateContext")
	}
	le.PutUint32(b, 20) // Next not 8-aligned
	if _, err := DecodeCreateContexts(b); err == nil {
		t.Fatal("unaligned Next accepted")
	}
}

func TestStatus(t *testing.T) {
	if StatusAccessDenied.Error() != "STATUS_ACCESS_DENIED" || StatusIOTimeout.String() != "STATUS_IO_TIMEOUT" {
		t.Fatal(StatusAccessDenied.Error(), StatusIOTimeout.String())
	}
	if got := Status(0xC0DEC0DE).String(); got != "STATUS_0xC0DEC0DE" {
		t.Fatal(got)
	}
	var err error = StatusObjectNameNotFound
	var s Status
	if !errors.As(err, &s) || s != 0xC0000034 {
		t.Fatal("errors.As")
	}
	if !StatusLogonFailure.IsError() || StatusLogonFailure.IsWarning() ||
		!StatusBufferOverflow.IsWarning() || StatusBufferOverflow.IsError() ||
		StatusPending.IsError() || !StatusPending.IsSuccess() || !StatusObjectNameExists.IsSuccess() {
		t.Fatal("severity")
	}
	if statusCount < 150 {
		t.Fatalf("only %d statuses", statusCount)
	}
	// Values cross-checked against [MS-ERREF] 2.3.1.
	for s, v := range map[Status]uint32{
		StatusSuccess: 0, StatusPending: 0x103, StatusMoreProcessingRequired: 0xC0000016,
		StatusBufferOverflow: 0x80000005, StatusNoMoreFiles: 0x80000006, StatusNotifyEnumDir: 0x10C,
		StatusInvalidParameter: 0xC000000D, StatusObjectNameCollision: 0xC0000035, StatusSharingViolation: 0xC0000043,
		StatusUserSessionDeleted: 0xC0000203, StatusNetworkSessionExpired: 0xC000035C, StatusBadNetworkName: 0xC00000CC,
		StatusFileClosed: 0xC0000128, StatusNotSupported: 0xC00000BB, StatusCancelled: 0xC0000120,
		StatusLockNotGranted: 0xC0000055, StatusRangeNotLocked: 0xC000007E, StatusDirectoryNotEmpty: 0xC0000101,
		StatusNotADirectory: 0xC0000103, StatusFileIsADirectory: 0xC00000BA, StatusDeletePending: 0xC0000056,
		StatusPathNotCovered: 0xC0000257, StatusInsufficientResources: 0xC000009A, StatusPipeEmpty: 0xC00000D9,
	} {
		if uint32(s) != v {
			t.Errorf("%s = 0x%08X, want 0x%08X", s, uint32(s), v)
		}
	}
}

// TestStatusTableFresh checks status_table.go was generated from status.txt.
func TestStatusTableFresh(t *testing.T) {
	var n int
	for _, line := range strings.Split(string(mustRead(t, "status.txt")), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		n++
		if !strings.Contains(string(mustRead(t, "status_table.go")), "return \""+f[1]+"\"") {
			t.Errorf("%s missing from status_table.go: run go generate", f[1])
		}
	}
	if n != statusCount {
		t.Errorf("status.txt has %d entries, table %d: run go generate", n, statusCount)
	}
}

// A 3.1.1 TREE_CONNECT with the extension present: the path follows the
// 16-byte extension, with PathOffset relative to the header (88) or to the
// extension (16).
func TestTreeConnectExtension(t *testing.T) {
	path := "\\\\srv\\share"
	for _, off := range []uint16{88, 16} {
		body := make([]byte, 8+16)
		le.PutUint16(body, 9)
		le.PutUint16(body[2:], TreeConnectFlagExtensionPresent)
		le.PutUint16(body[4:], off)
		le.PutUint16(body[6:], uint16(2*len(path)))
		for _, c := range path {
			body = append(body, byte(c), 0)
		}
		msg := make([]byte, HeaderSize)
		(&Header{Command: CmdTreeConnect}).Encode(msg)
		msg = append(msg, body...)
		var r TreeConnectRequest
		if err := r.Decode(msg); err != nil || r.Path != path {
			t.Fatalf("offset %d: %q, %v", off, r.Path, err)
		}
	}
}

// The READ/WRITE path decodes and encodes without allocating.
func TestHotPathAllocs(t *testing.T) {
	rd := pdu(CmdRead, &ReadRequest{Length: 65536, FileID: fid}, 0)
	wr := pdu(CmdWrite, &WriteRequest{FileID: fid, Data: make([]byte, 4096)}, 0)
	out := make([]byte, 64)
	var r ReadRequest
	var w WriteRequest
	allocs := testing.AllocsPerRun(100, func() {
		_ = r.Decode(rd)
		_ = w.Decode(wr)
		_, _ = DecodeWriteHeader(wr[HeaderSize:])
		(&ReadResponse{DataOffset: ReadResponseDataOffset, DataLength: 4096}).Encode(out)
		(&WriteResponse{Count: 4096}).Encode(out)
		(&CloseRequest{}).Decode(rd)
		_, _ = SplitCompound(rd)
	})
	if allocs > 1 { // SplitCompound's slice of one PDU
		t.Fatalf("%v allocations per run", allocs)
	}
}
