package fscc

import (
	"bytes"
	"encoding/hex"
	"net"
	"reflect"
	"testing"
)

func TestValidateNegotiateInfo(t *testing.T) {
	guid := [16]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	in := ValidateNegotiateInfoRequest{Capabilities: 0x7f, GUID: guid, SecurityMode: 1, Dialects: []uint16{0x202, 0x210, 0x300, 0x302, 0x311}}
	b := make([]byte, in.Size())
	in.Encode(b)
	want := "7f000000" + "000102030405060708090a0b0c0d0e0f" + "0100" + "0500" + "0202100200030203" + "1103"
	if hex.EncodeToString(b) != want {
		t.Fatalf("got  %x\nwant %s", b, want)
	}
	var out ValidateNegotiateInfoRequest
	if err := out.Decode(b); err != nil || !reflect.DeepEqual(out, in) {
		t.Fatalf("%v %+v", err, out)
	}
	noPrefixDecodes(t, "vni", b, &out)
	b[22], b[23] = 0, 0
	if out.Decode(b) == nil {
		t.Error("DialectCount 0 accepted")
	}

	rsp := ValidateNegotiateInfoResponse{Capabilities: 0x2f, GUID: guid, SecurityMode: 2, Dialect: 0x311}
	b = make([]byte, rsp.Size())
	rsp.Encode(b)
	if len(b) != 24 || hex.EncodeToString(b) != "2f000000"+"000102030405060708090a0b0c0d0e0f"+"0200"+"1103" {
		t.Fatalf("rsp %x", b)
	}
	var ro ValidateNegotiateInfoResponse
	if ro.Decode(b) != nil || ro != rsp {
		t.Fatal("rsp round trip")
	}
}

func TestNetworkInterfaces(t *testing.T) {
	ifs := []NetworkInterfaceInfo{
		{IfIndex: 2, Capability: RSSCapable, LinkSpeed: 10_000_000_000, IP: net.ParseIP("192.168.1.10")},
		{IfIndex: 3, LinkSpeed: 1_000_000_000, IP: net.ParseIP("fe80::1")},
	}
	b := EncodeNetworkInterfaces(ifs)
	if len(b) != 2*152 {
		t.Fatalf("len %d", len(b))
	}
	want0 := "98000000" + "02000000" + "01000000" + "00000000" + "00e40b5402000000" +
		"0200" + "0000" + "c0a8010a" + hex.EncodeToString(make([]byte, 120))
	if hex.EncodeToString(b[:152]) != want0 {
		t.Fatalf("entry 0:\n%x\n%s", b[:152], want0)
	}
	want1 := "00000000" + "03000000" + "00000000" + "00000000" + "00ca9a3b00000000" +
		"1700" + "0000" + "00000000" + "fe800000000000000000000000000001" + hex.EncodeToString(make([]byte, 104))
	if hex.EncodeToString(b[152:]) != want1 {
		t.Fatalf("entry 1:\n%x\n%s", b[152:], want1)
	}
	out, err := DecodeNetworkInterfaces(b)
	if err != nil || len(out) != 2 || !out[0].IP.Equal(ifs[0].IP) || !out[1].IP.Equal(ifs[1].IP) || out[0].LinkSpeed != ifs[0].LinkSpeed || out[1].IfIndex != 3 {
		t.Fatalf("%v %+v", err, out)
	}
	for n := range len(b) {
		if _, err := DecodeNetworkInterfaces(b[:n]); err == nil {
			t.Fatalf("prefix %d decoded", n)
		}
	}
	if len(EncodeNetworkInterfaces(nil)) != 0 {
		t.Error("empty")
	}
}

func TestSnapshotArray(t *testing.T) {
	a := SnapshotArray{}
	b := make([]byte, a.Size())
	a.Encode(b)
	if hex.EncodeToString(b) != "00000000"+"00000000"+"02000000"+"0000" {
		t.Fatalf("empty %x", b)
	}
	a = SnapshotArray{SnapShots: []string{"@GMT-2024.01.02-03.04.05"}}
	b = make([]byte, a.Size())
	a.Encode(b)
	if len(b) != 12+48+2+2 || hex.EncodeToString(b[:12]) != "01000000"+"01000000"+"34000000" || !bytes.Equal(b[len(b)-4:], []byte{0, 0, 0, 0}) {
		t.Fatalf("one %x", b)
	}
	a.HeaderOnly = true
	b = make([]byte, a.Size())
	a.Encode(b)
	if hex.EncodeToString(b) != "01000000"+"00000000"+"34000000" {
		t.Fatalf("header only %x", b)
	}
}

func TestResumeKeyAndCopychunk(t *testing.T) {
	var key [24]byte
	for i := range key {
		key[i] = byte(i + 1)
	}
	rk := ResumeKeyResponse{ResumeKey: key}
	b := bytes.Repeat([]byte{0xEE}, rk.Size())
	rk.Encode(b)
	if len(b) != 32 || !bytes.Equal(b[:24], key[:]) || !bytes.Equal(b[24:], make([]byte, 8)) {
		t.Fatalf("resume key %x", b)
	}
	var rko ResumeKeyResponse
	if rko.Decode(b) != nil || rko != rk {
		t.Fatal("resume key round trip")
	}

	cc := CopychunkCopy{SourceKey: key, Chunks: []Chunk{{0, 4096, 1 << 20}, {1 << 20, 0, 5}}}
	b = make([]byte, cc.Size())
	cc.Encode(b)
	want := hex.EncodeToString(key[:]) + "02000000" + "00000000" +
		"0000000000000000" + "0010000000000000" + "00001000" + "00000000" +
		"0000100000000000" + "0000000000000000" + "05000000" + "00000000"
	if hex.EncodeToString(b) != want {
		t.Fatalf("copychunk\n%x\n%s", b, want)
	}
	var cco CopychunkCopy
	if err := cco.Decode(b); err != nil || !reflect.DeepEqual(cco, cc) {
		t.Fatalf("%v %+v", err, cco)
	}
	noPrefixDecodes(t, "copychunk", b, &cco)
	b[24], b[25], b[26], b[27] = 0xff, 0xff, 0xff, 0xff
	if cco.Decode(b) == nil {
		t.Error("huge ChunkCount accepted")
	}

	r := CopychunkResponse{CopychunkMaxChunks, CopychunkMaxChunkSize, CopychunkMaxDataSize}
	b = make([]byte, r.Size())
	r.Encode(b)
	if hex.EncodeToString(b) != "00010000"+"00001000"+"00000001" {
		t.Fatalf("copychunk response %x", b)
	}
	var ro CopychunkResponse
	if ro.Decode(b) != nil || ro != r {
		t.Fatal("response round trip")
	}
}

func TestRangesAndZeroData(t *testing.T) {
	rs := []FileAllocatedRangeBuffer{{0, 4096}, {1 << 20, 8192}}
	b := EncodeAllocatedRanges(rs)
	if hex.EncodeToString(b) != "0000000000000000"+"0010000000000000"+"0000100000000000"+"0020000000000000" {
		t.Fatalf("%x", b)
	}
	out, err := DecodeAllocatedRanges(b)
	if err != nil || !reflect.DeepEqual(out, rs) {
		t.Fatalf("%v %+v", err, out)
	}
	if _, err := DecodeAllocatedRanges(b[:20]); err == nil {
		t.Error("partial range accepted")
	}
	var r FileAllocatedRangeBuffer
	noPrefixDecodes(t, "range", b[:16], &r)
	for _, bad := range []FileAllocatedRangeBuffer{{-1, 0}, {0, -1}, {1<<63 - 1, 1}} {
		bb := make([]byte, 16)
		bad.Encode(bb)
		if r.Decode(bb) == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	var z FileZeroDataInformation
	zb := make([]byte, 16)
	(&FileZeroDataInformation{10, 20}).Encode(zb)
	if z.Decode(zb) != nil || z != (FileZeroDataInformation{10, 20}) {
		t.Fatal("zero data")
	}
	noPrefixDecodes(t, "zero", zb, &z)
	(&FileZeroDataInformation{20, 10}).Encode(zb)
	if z.Decode(zb) == nil {
		t.Error("inverted zero range accepted")
	}
	if !DecodeSetSparse(nil) || !DecodeSetSparse([]byte{1}) || DecodeSetSparse([]byte{0}) {
		t.Error("set sparse")
	}
}

func TestPipeWaitRequest(t *testing.T) {
	b, _ := hex.DecodeString("0000000000000000" + "08000000" + "01" + "00" + "7300720076007300")
	var p PipeWaitRequest
	if err := p.Decode(b); err != nil || p.Name != "srvs" || !p.TimeoutSpecified {
		t.Fatalf("%v %+v", err, p)
	}
	noPrefixDecodes(t, "pipewait", b, &p)
}

func FuzzFsctl(f *testing.F) {
	f.Add(uint8(0), EncodeNetworkInterfaces([]NetworkInterfaceInfo{{IP: net.IPv4(1, 2, 3, 4)}, {IP: net.ParseIP("::1")}}))
	f.Add(uint8(1), make([]byte, 32+24))
	f.Add(uint8(2), []byte("\x7f\x00\x00\x00................\x01\x00\x02\x00\x02\x02\x11\x03"))
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		switch which % 8 {
		case 0:
			if ifs, err := DecodeNetworkInterfaces(b); err == nil {
				if _, err := DecodeNetworkInterfaces(EncodeNetworkInterfaces(ifs)); err != nil {
					t.Fatal(err)
				}
			}
		case 1:
			var c CopychunkCopy
			if c.Decode(b) == nil && c.Size() > len(b) {
				t.Fatal("copychunk larger than input")
			}
		case 2:
			var v ValidateNegotiateInfoRequest
			if v.Decode(b) == nil && v.Size() > len(b) {
				t.Fatal("vni larger than input")
			}
		case 3:
			_, _ = DecodeAllocatedRanges(b)
		case 4:
			var z FileZeroDataInformation
			_ = z.Decode(b)
		case 5:
			var p PipeWaitRequest
			_ = p.Decode(b)
		case 6:
			var r ResumeKeyResponse
			_ = r.Decode(b)
			var c CopychunkResponse
			_ = c.Decode(b)
		case 7:
			var v ValidateNegotiateInfoResponse
			_ = v.Decode(b)
			_ = DecodeSetSparse(b)
		}
	})
}
