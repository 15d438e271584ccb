package fscc

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"
)

// decoder is implemented by every type with a Decode method.
type decoder interface{ Decode([]byte) error }

// noPrefixDecodes checks that no strict prefix of a valid encoding
// decodes.
func noPrefixDecodes(t *testing.T, name string, b []byte, d decoder) {
	t.Helper()
	for n := range len(b) {
		if d.Decode(b[:n]) == nil {
			t.Errorf("%s: prefix of %d/%d bytes decoded", name, n, len(b))
		}
	}
}

func TestRenameInformation(t *testing.T) {
	in := RenameInformation{ReplaceIfExists: true, FileName: `dir\new.txt`}
	b := bytes.Repeat([]byte{0xCC}, in.Size())
	in.Encode(b)
	want := "01" + "00000000000000" + "0000000000000000" + "16000000" +
		hex.EncodeToString([]byte("d\x00i\x00r\x00\\\x00n\x00e\x00w\x00.\x00t\x00x\x00t\x00"))
	if hex.EncodeToString(b) != want {
		t.Fatalf("got  %x\nwant %s", b, want)
	}
	var out RenameInformation
	if err := out.Decode(b); err != nil || out != in {
		t.Fatalf("%v %+v", err, out)
	}
	noPrefixDecodes(t, "rename", b, &out)
	// FileNameLength beyond the buffer, and odd.
	bad := append([]byte(nil), b...)
	bad[16] = 0xFF
	if !errors.Is(out.Decode(bad), ErrShortBuffer) {
		t.Error("long FileNameLength accepted")
	}
	bad[16] = 3
	if out.Decode(bad) == nil {
		t.Error("odd FileNameLength accepted")
	}

	ex := RenameInformationEx{Flags: FileRenameReplaceIfExists | FileRenamePosixSemantics, FileName: "x"}
	b = make([]byte, ex.Size())
	ex.Encode(b)
	if hex.EncodeToString(b) != "03000000"+"00000000"+"0000000000000000"+"02000000"+"7800" {
		t.Fatalf("ex %x", b)
	}
	var exo RenameInformationEx
	if err := exo.Decode(b); err != nil || exo != ex {
		t.Fatal(err)
	}
	noPrefixDecodes(t, "renameEx", b, &exo)
}

func TestSmallSetInfo(t *testing.T) {
	var d DispositionInformation
	if d.Decode([]byte{1}) != nil || !d.DeletePending || d.Decode(nil) == nil {
		t.Fatal("disposition")
	}
	var dx DispositionInformationEx
	if dx.Decode([]byte{0x13, 0, 0, 0}) != nil || dx.Flags != 0x13 || dx.Decode([]byte{1, 0, 0}) == nil {
		t.Fatal("dispositionEx")
	}
	eight := []byte{0, 0x10, 0, 0, 0, 0, 0, 0}
	neg := []byte{0, 0, 0, 0, 0, 0, 0, 0x80}
	for name, d := range map[string]decoder{"eof": &EndOfFileInformation{}, "alloc": &AllocationInformation{}, "vdl": &ValidDataLengthInformation{}} {
		if d.Decode(eight) != nil || d.Decode(neg) == nil {
			t.Errorf("%s", name)
		}
		noPrefixDecodes(t, name, eight, d)
	}
	e := EndOfFileInformation{}
	_ = e.Decode(eight)
	if e.EndOfFile != 4096 {
		t.Fatal(e)
	}
}

func TestFullEaInformation(t *testing.T) {
	in := FullEaInformation{
		{Flags: 0, Name: "user.a", Value: []byte("hello")},
		{Flags: FileNeedEA, Name: "B", Value: nil},
		{Name: "CC", Value: []byte{1, 2, 3}},
	}
	b := bytes.Repeat([]byte{0xCC}, in.Size())
	in.Encode(b)
	// entry 1: 8+6+1+5 = 20 (aligned), entry 2: 8+1+1 = 10 -> 12, entry 3: 8+2+1+3 = 14.
	want := "14000000" + "00" + "06" + "0500" + hex.EncodeToString([]byte("user.a\x00hello")) +
		"0c000000" + "80" + "01" + "0000" + "4200" + "0000" +
		"00000000" + "00" + "02" + "0300" + "434300" + "010203"
	if hex.EncodeToString(b) != want {
		t.Fatalf("got  %x\nwant %s", b, want)
	}
	var out FullEaInformation
	if err := out.Decode(b); err != nil {
		t.Fatal(err)
	}
	if len(out) != 3 || out[0].Name != "user.a" || string(out[0].Value) != "hello" || out[1].Flags != FileNeedEA || len(out[1].Value) != 0 || out[2].Name != "CC" {
		t.Fatalf("%+v", out)
	}
	noPrefixDecodes(t, "ea", b, &out)
	bad := append([]byte(nil), b...)
	bad[14] = 'x' // NUL after the first name
	if !errors.Is(out.Decode(bad), ErrInvalid) {
		t.Error("missing NUL accepted")
	}
	bad = append([]byte(nil), b...)
	bad[0] = 0xF0
	if out.Decode(bad) == nil {
		t.Error("NextEntryOffset beyond buffer accepted")
	}
	bad = append([]byte(nil), b...)
	bad[0] = 8 // entry larger than its span
	if out.Decode(bad) == nil {
		t.Error("overlapping entry accepted")
	}
	if !(&EA{Name: "a"}).Valid() || (&EA{}).Valid() || (&EA{Name: "a\x00b"}).Valid() || (&EA{Name: "a", Value: make([]byte, 70000)}).Valid() {
		t.Error("EA.Valid")
	}
}

func TestGetEaList(t *testing.T) {
	b, _ := hex.DecodeString("08000000" + "02" + "414200" + "00000000" + "01" + "4300")
	names, err := DecodeGetEaList(b)
	if err != nil || !reflect.DeepEqual(names, []string{"AB", "C"}) {
		t.Fatalf("%v %q", err, names)
	}
	for n := range len(b) {
		if _, err := DecodeGetEaList(b[:n]); err == nil {
			t.Fatalf("prefix %d decoded", n)
		}
	}
}

func TestStreamInformation(t *testing.T) {
	in := StreamInformation{{"::$DATA", 10, 4096}, {":s:$DATA", 3, 8}}
	b := bytes.Repeat([]byte{0xCC}, in.Size())
	in.Encode(b)
	want := "28000000" + "0e000000" + "0a00000000000000" + "0010000000000000" +
		hex.EncodeToString([]byte(":\x00:\x00$\x00D\x00A\x00T\x00A\x00")) + "0000" +
		"00000000" + "10000000" + "0300000000000000" + "0800000000000000" +
		hex.EncodeToString([]byte(":\x00s\x00:\x00$\x00D\x00A\x00T\x00A\x00"))
	if hex.EncodeToString(b) != want {
		t.Fatalf("got  %x\nwant %s", b, want)
	}
	var out StreamInformation
	if err := out.Decode(b); err != nil || !reflect.DeepEqual(out, in) {
		t.Fatalf("%v %+v", err, out)
	}
	noPrefixDecodes(t, "stream", b, &out)
	if (StreamInformation{}).Size() != 0 {
		t.Error("empty list size")
	}
}

func FuzzSetInfo(f *testing.F) {
	f.Add(uint8(0), []byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 'a', 0})
	f.Add(uint8(2), []byte("\x00\x00\x00\x00\x00\x01\x01\x00A\x00x"))
	f.Add(uint8(3), make([]byte, 30))
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		ds := []decoder{&RenameInformation{}, &RenameInformationEx{}, &FullEaInformation{},
			&StreamInformation{}, &BasicInformation{}, &StandardInformation{}, &AllInformation{},
			&NameInformation{}, &PositionInformation{}, &ModeInformation{}, &PipeInformation{},
			&DispositionInformation{}, &DispositionInformationEx{}, &EndOfFileInformation{},
			&AllocationInformation{}, &ValidDataLengthInformation{}, &FsVolumeInformation{},
			&FsAttributeInformation{}, &FsObjectIdInformation{}, &FsControlInformation{}}
		d := ds[int(which)%len(ds)]
		if d.Decode(b) != nil {
			return
		}
		// Whatever decodes re-encodes to something that decodes the same.
		if e, ok := d.(interface {
			Size() int
			Encode([]byte)
		}); ok {
			out := make([]byte, e.Size())
			e.Encode(out)
			d2 := reflect.New(reflect.TypeOf(d).Elem()).Interface().(decoder)
			if err := d2.Decode(out); err != nil {
				t.Fatalf("%T: re-decode: %v", d, err)
			}
			if !reflect.DeepEqual(normalize(d), normalize(d2)) {
				t.Fatalf("%T: %+v != %+v", d, d, d2)
			}
		}
		_, _ = DecodeGetEaList(b)
	})
}

// normalize maps empty and nil slices alike for comparisons.
func normalize(d decoder) any {
	if l, ok := d.(*FullEaInformation); ok {
		var out []EA
		for _, e := range *l {
			if len(e.Value) == 0 {
				e.Value = nil
			}
			out = append(out, e)
		}
		return out
	}
	return d
}
