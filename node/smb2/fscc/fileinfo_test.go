package fscc

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"
	"time"
)

func TestFiletime(t *testing.T) {
	if Filetime(time.Time{}) != 0 || !TimeOf(0).IsZero() {
		t.Fatal("zero time must map to 0")
	}
	unix := time.Unix(0, 0)
	if got := Filetime(unix); got != 116444736000000000 {
		t.Fatalf("Unix epoch = %d", got)
	}
	if Filetime(time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC)) != 0 || Filetime(time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC)) != 0 {
		t.Fatal("times at or before 1601 must map to 0")
	}
	// 2000-01-01T00:00:00Z is FILETIME 0x01BF53EB256D4000.
	y2k := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := Filetime(y2k); got != 0x01BF53EB256D4000 {
		t.Fatalf("Y2K = %#x", got)
	}
	ts := time.Date(2024, 2, 29, 13, 14, 15, 123456700, time.UTC)
	if got := TimeOf(Filetime(ts)); !got.Equal(ts) {
		t.Fatalf("round trip %v != %v", got, ts)
	}
	_ = TimeOf(0xFFFFFFFFFFFFFFFF) // must not panic
}

func TestBasicInformation(t *testing.T) {
	in := BasicInformation{1, 2, 3, 4, FileAttributeArchive}
	b := make([]byte, in.Size())
	in.Encode(b)
	want := "0100000000000000" + "0200000000000000" + "0300000000000000" +
		"0400000000000000" + "20000000" + "00000000"
	if hex.EncodeToString(b) != want {
		t.Fatalf("encode %x", b)
	}
	var out BasicInformation
	if err := out.Decode(b); err != nil || out != in {
		t.Fatalf("decode 40: %v %+v", err, out)
	}
	if err := out.Decode(b[:36]); err != nil || out != in {
		t.Fatalf("decode 36: %v %+v", err, out)
	}
	if err := out.Decode(b[:35]); !errors.Is(err, ErrShortBuffer) {
		t.Fatalf("decode 35: %v", err)
	}
	for _, v := range []uint64{FiletimeStopUpdating, FiletimeResumeUpdating} {
		in := BasicInformation{LastWriteTime: v}
		in.Encode(b)
		if err := out.Decode(b); err != nil || out.LastWriteTime != v {
			t.Fatalf("special %#x: %v", v, err)
		}
	}
	in = BasicInformation{ChangeTime: 0xFFFFFFFFFFFFFFFD} // -3
	in.Encode(b)
	if err := out.Decode(b); !errors.Is(err, ErrInvalid) {
		t.Fatalf("-3 accepted: %v", err)
	}
}

func TestStandardInformation(t *testing.T) {
	in := StandardInformation{AllocationSize: 4096, EndOfFile: 10, NumberOfLinks: 1, DeletePending: true, Directory: false}
	b := bytes.Repeat([]byte{0xFF}, in.Size())
	in.Encode(b)
	want := "0010000000000000" + "0a00000000000000" + "01000000" + "01" + "00" + "0000"
	if hex.EncodeToString(b) != want {
		t.Fatalf("encode %x", b)
	}
	var out StandardInformation
	if err := out.Decode(b); err != nil || out != in {
		t.Fatalf("decode %v %+v", err, out)
	}
}

func TestAllInformationLayout(t *testing.T) {
	in := AllInformation{
		Basic:     BasicInformation{1, 2, 3, 4, 0x10},
		Standard:  StandardInformation{8, 9, 1, false, true},
		Internal:  InternalInformation{0xABCD},
		Ea:        EaInformation{5},
		Access:    AccessInformation{0x1F01FF},
		Position:  PositionInformation{77},
		Mode:      ModeInformation{FileSynchronousIONonalert},
		Alignment: AlignmentInformation{0},
		Name:      NameInformation{`\dir\f`},
	}
	if in.Size() != 100+12 {
		t.Fatalf("size %d", in.Size())
	}
	b := make([]byte, in.Size())
	in.Encode(b)
	// [MS-FSCC] 2.4: Basic 0..40, Standard 40..64, Internal 64, Ea 72,
	// Access 76, Position 80, Mode 88, Alignment 92, NameLength 96, name 100.
	checks := map[int]string{
		0: "0100000000000000", 32: "10000000", 40: "0800000000000000", 48: "0900000000000000",
		56: "01000000000100", 64: "cdab000000000000", 72: "05000000", 76: "ff011f00",
		80: "4d00000000000000", 88: "20000000", 92: "00000000", 96: "0c000000",
		100: "5c006400690072005c006600",
	}
	for off, h := range checks {
		if got := hex.EncodeToString(b[off : off+len(h)/2]); got != h {
			t.Errorf("offset %d: %s, want %s", off, got, h)
		}
	}
	var out AllInformation
	if err := out.Decode(b); err != nil || out != in {
		t.Fatalf("decode %v\n%+v\n%+v", err, out, in)
	}
	for n := range len(b) {
		if out.Decode(b[:n]) == nil {
			t.Fatalf("truncated prefix of %d bytes decoded", n)
		}
	}
}

func TestNameInformation(t *testing.T) {
	in := NameInformation{"é€𝄞"}
	b := make([]byte, in.Size())
	in.Encode(b)
	var out NameInformation
	if err := out.Decode(b); err != nil || out != in {
		t.Fatalf("%v %q", err, out.FileName)
	}
	for n := range len(b) {
		if out.Decode(b[:n]) == nil {
			t.Fatalf("prefix %d decoded", n)
		}
	}
	if out.Decode([]byte{1, 0, 0, 0, 'a'}) == nil {
		t.Fatal("odd length decoded")
	}
	if out.Decode([]byte{0xff, 0xff, 0xff, 0xff, 'a', 0}) == nil {
		t.Fatal("huge length decoded")
	}
}

func TestFixedEncodings(t *testing.T) {
	cases := []struct {
		enc interface {
			Size() int
			Encode([]byte)
		}
		want string
	}{
		{&NetworkOpenInformation{1, 2, 3, 4, 4096, 5, 0x20}, "0100000000000000" + "0200000000000000" +
			"0300000000000000" + "0400000000000000" + "0010000000000000" + "0500000000000000" + "20000000" + "00000000"},
		{&AttributeTagInformation{0x400, IOReparseTagSymlink}, "000400000c0000a0"},
		{&CompressionInformation{CompressedFileSize: 16}, "1000000000000000" + "0000" + "000000" + "000000"},
		{&IdInformation{VolumeSerialNumber: 1, FileID: [16]byte{2}}, "0100000000000000" + "02000000000000000000000000000000"},
		{&PipeInformation{1, 0}, "0100000000000000"},
		{&PipeLocalInformation{NamedPipeType: 1, NamedPipeConfiguration: 2, MaximumInstances: 0xFFFFFFFF,
			CurrentInstances: 1, InboundQuota: 4096, OutboundQuota: 4096, NamedPipeState: 3, NamedPipeEnd: 1},
			"01000000020000" + "00ffffffff01000000" + "00100000" + "00000000" + "00100000" + "00000000" + "03000000" + "01000000"},
		{&InternalInformation{0x0102}, "0201000000000000"},
		{&EaInformation{0}, "00000000"},
		{&AccessInformation{0x12019F}, "9f011200"},
		{&AlignmentInformation{1}, "01000000"},
	}
	for _, c := range cases {
		b := bytes.Repeat([]byte{0xEE}, c.enc.Size())
		c.enc.Encode(b)
		if got := hex.EncodeToString(b); got != c.want {
			t.Errorf("%T: %s\nwant %s", c.enc, got, c.want)
		}
	}
}

func TestSmallDecoders(t *testing.T) {
	var p PositionInformation
	if p.Decode([]byte{1, 0, 0, 0, 0, 0, 0, 0}) != nil || p.CurrentByteOffset != 1 {
		t.Fatal("position")
	}
	if p.Decode([]byte{0, 0, 0, 0, 0, 0, 0, 0x80}) == nil || p.Decode(nil) == nil {
		t.Fatal("bad position accepted")
	}
	var m ModeInformation
	if m.Decode([]byte{0x20, 0, 0, 0}) != nil || m.Mode != FileSynchronousIONonalert {
		t.Fatal("mode")
	}
	if m.Decode([]byte{0x30, 0, 0, 0}) == nil || m.Decode([]byte{1, 0, 0, 0}) == nil || m.Decode([]byte{0}) == nil {
		t.Fatal("bad mode accepted")
	}
	var pi PipeInformation
	if pi.Decode([]byte{1, 0, 0, 0, 1, 0, 0, 0}) != nil || pi.Decode([]byte{2, 0, 0, 0, 0, 0, 0, 0}) == nil {
		t.Fatal("pipe")
	}
}
