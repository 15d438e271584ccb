package fscc

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"testing"
)

func TestDirWriterNamesExact(t *testing.T) {
	w, err := NewDirWriter(FileNamesInformation, 1024, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !w.Add(&DirEntry{Name: "a", FileIndex: 1}) || !w.Add(&DirEntry{Name: "bc"}) {
		t.Fatal("Add failed")
	}
	want := "10000000" + "01000000" + "02000000" + "6100" + "0000" +
		"00000000" + "00000000" + "04000000" + "62006300"
	if got := hex.EncodeToString(w.Bytes()); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// TestDirWriterIdBothLayout checks FILE_ID_BOTH_DIR_INFORMATION field by
// field against the offsets of [MS-FSCC] 2.4.
func TestDirWriterIdBothLayout(t *testing.T) {
	e := &DirEntry{FileIndex: 7, Name: "x.txt", ShortName: "X.TXT",
		CreationTime: 1, LastAccessTime: 2, LastWriteTime: 3, ChangeTime: 4,
		EndOfFile: 5, AllocationSize: 4096, FileAttributes: FileAttributeArchive,
		EaSize: 9, FileID: 0x1122334455667788}
	w, _ := NewDirWriter(FileIdBothDirectoryInformation, 1024, make([]byte, 0, 8))
	w.Add(e)
	b := w.Bytes()
	want := make([]byte, 104+10)
	le := binary.LittleEndian
	le.PutUint32(want[4:], 7)
	for i, v := range []uint64{1, 2, 3, 4, 5, 4096} {
		le.PutUint64(want[8+8*i:], v)
	}
	le.PutUint32(want[56:], 0x20)
	le.PutUint32(want[60:], 10)
	le.PutUint32(want[64:], 9)
	want[68] = 10
	copy(want[70:], []byte{'X', 0, '.', 0, 'T', 0, 'X', 0, 'T', 0})
	le.PutUint64(want[96:], 0x1122334455667788)
	copy(want[104:], []byte{'x', 0, '.', 0, 't', 0, 'x', 0, 't', 0})
	if !bytes.Equal(b, want) {
		t.Fatalf("got  %x\nwant %x", b, want)
	}
}

func TestDirWriterReparseTagInEaSize(t *testing.T) {
	e := &DirEntry{Name: "l", FileAttributes: FileAttributeReparsePoint, EaSize: 3, ReparseTag: IOReparseTagSymlink}
	for class, off := range map[uint8]int{FileFullDirectoryInformation: 64, FileBothDirectoryInformation: 64} {
		w, _ := NewDirWriter(class, 1024, nil)
		w.Add(e)
		if got := binary.LittleEndian.Uint32(w.Bytes()[off:]); got != IOReparseTagSymlink {
			t.Errorf("class %d: EaSize = %#x", class, got)
		}
	}
	w, _ := NewDirWriter(FileIdExtdDirectoryInformation, 1024, nil)
	w.Add(e)
	b := w.Bytes()
	if binary.LittleEndian.Uint32(b[64:]) != 3 || binary.LittleEndian.Uint32(b[68:]) != IOReparseTagSymlink {
		t.Errorf("IdExtd: %x", b[64:72])
	}
}

// TestDirWriterChain fills every class until the buffer is full and walks
// the chain: 8-aligned entries, NextEntryOffset pointing at the next one,
// the last 0, no trailing padding, and stale buffer bytes cleared.
func TestDirWriterChain(t *testing.T) {
	classes := []uint8{FileDirectoryInformation, FileFullDirectoryInformation,
		FileBothDirectoryInformation, FileIdBothDirectoryInformation,
		FileIdFullDirectoryInformation, FileNamesInformation,
		FileIdExtdDirectoryInformation, FileIdExtdBothDirectoryInformation,
		FileId64ExtdDirectoryInformation}
	names := []string{"a", "bcd", "long name with spaces.txt", "日本語", "e", "f", "a much longer name than the others, to overflow.txt"}
	for _, class := range classes {
		fixed := dirFixed(class)
		stale := bytes.Repeat([]byte{0xAA}, 4096)
		w, err := NewDirWriter(class, 250, stale)
		if err != nil {
			t.Fatal(err)
		}
		var added []string
		for _, n := range names {
			if !w.Add(&DirEntry{Name: n}) {
				break
			}
			added = append(added, n)
		}
		if len(added) == 0 || len(added) == len(names) {
			t.Fatalf("class %d: added %d entries; want a partial fill", class, len(added))
		}
		b := w.Bytes()
		if w.Len() != len(b) || len(b) > 250 {
			t.Fatalf("class %d: Len %d, len %d", class, w.Len(), len(b))
		}
		off := 0
		for i, n := range added {
			next := int(binary.LittleEndian.Uint32(b[off:]))
			nameLenOff := 60
			if class == FileNamesInformation {
				nameLenOff = 8
			}
			nl := int(binary.LittleEndian.Uint32(b[off+nameLenOff:]))
			end := off + fixed + nl
			if i == len(added)-1 {
				if next != 0 || end != len(b) {
					t.Fatalf("class %d: last entry next=%d end=%d len=%d", class, next, end, len(b))
				}
				break
			}
			if next%8 != 0 || next < fixed+nl || next > fixed+nl+7 {
				t.Fatalf("class %d entry %q: next %d", class, n, next)
			}
			for _, c := range b[end : off+next] {
				if c != 0 {
					t.Fatalf("class %d: nonzero padding", class)
				}
			}
			off += next
		}
		if bytes.Contains(b, []byte{0xAA}) {
			t.Fatalf("class %d: stale bytes leaked: %x", class, b)
		}
	}
}

func TestDirWriterFit(t *testing.T) {
	w, _ := NewDirWriter(FileDirectoryInformation, 66, nil)
	if !w.Add(&DirEntry{Name: "a"}) {
		t.Fatal("exact fit refused")
	}
	if w.Add(&DirEntry{Name: ""}) || w.Len() != 66 {
		t.Fatal("overflow accepted")
	}
	w, _ = NewDirWriter(FileDirectoryInformation, 65, nil)
	if w.Add(&DirEntry{Name: "a"}) || w.Len() != 0 || !w.Empty() {
		t.Fatal("oversize accepted")
	}
}

func TestDirWriterBadClass(t *testing.T) {
	for _, c := range []uint8{0, FileBasicInformation, FileAllInformation, 200} {
		if _, err := NewDirWriter(c, 100, nil); err != ErrInvalidInfoClass {
			t.Errorf("class %d: err %v", c, err)
		}
	}
}

func BenchmarkDirWriter(b *testing.B) {
	buf := make([]byte, 0, 65536)
	e := &DirEntry{Name: "some file name.txt", ShortName: "SOMEFI~1.TXT"}
	b.ReportAllocs()
	for b.Loop() {
		w, _ := NewDirWriter(FileIdBothDirectoryInformation, 65536, buf)
		for w.Add(e) {
		}
	}
}
