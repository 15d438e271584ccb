package share

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
	"github.com/smbcluster/smbcluster/node/smb2/utf16le"
	"github.com/smbcluster/smbcluster/node/vfs"
)

// dirNames decodes the names of a QUERY_DIRECTORY buffer of class
// FileIdBothDirectoryInformation or FileNamesInformation, checking the
// entry chain ([MS-FSCC] 2.4: 8-byte aligned, last NextEntryOffset 0).
func dirNames(t testing.TB, class uint8, b []byte) []string {
	t.Helper()
	lenOff, nameOff := 60, 104
	if class == fscc.FileNamesInformation {
		lenOff, nameOff = 8, 12
	}
	var names []string
	for off := 0; ; {
		e := b[off:]
		n := int(binary.LittleEndian.Uint32(e[lenOff:]))
		name, err := utf16le.Decode(e[nameOff : nameOff+n])
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
		next := int(binary.LittleEndian.Uint32(e))
		if next == 0 {
			if off+nameOff+n != len(b) {
				t.Fatalf("trailing bytes after the last entry")
			}
			return names
		}
		if next%8 != 0 || next < nameOff+n {
			t.Fatalf("bad NextEntryOffset %d", next)
		}
		off += next
	}
}

func queryDir(o *open, class, flags uint8, pattern string, max uint32) ([]byte, error) {
	resp, err := o.QueryDirectory(&server.Request{}, &smb2.QueryDirectoryRequest{
		FileInformationClass: class, Flags: flags, FileName: pattern, OutputBufferLength: max})
	if r, ok := resp.(*smb2.QueryDirectoryResponse); ok {
		return r.Buffer, err
	}
	return nil, err
}

// listAll pages through the directory until STATUS_NO_MORE_FILES.
func listAll(t testing.TB, o *open, class uint8, pattern string, max uint32) []string {
	t.Helper()
	var all []string
	flags := smb2.RestartScans
	for {
		b, err := queryDir(o, class, flags, pattern, max)
		if err == smb2.StatusNoMoreFiles || err == smb2.StatusNoSuchFile && flags != 0 {
			return all
		}
		wantStatus(t, err, 0)
		if len(b) > int(max) {
			t.Fatalf("%d bytes for a %d-byte buffer", len(b), max)
		}
		all = append(all, dirNames(t, class, b)...)
		flags = 0
	}
}

func TestQueryDirectoryPaging(t *testing.T) {
	d := infoDisk(t)
	dir := infoOpen(t, d, "big", true, 0)
	const n = 10000
	var want []string
	for i := range n {
		name := fmt.Sprintf("file%05d.txt", i)
		want = append(want, name)
		f, _, err := d.fs.Open("big/"+name, vfsCreate)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	got := listAll(t, dir, fscc.FileIdBothDirectoryInformation, "*", 4096)
	if got[0] != "." || got[1] != ".." {
		t.Fatalf("first entries %q", got[:2])
	}
	got = got[2:]
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("got %d names, want %d", len(got), n)
	}
	// The same, one entry per call, as smbtorture smb2.dir.one does.
	if got := listAll(t, dir, fscc.FileNamesInformation, "file0000?.txt", 40); len(got) != 10 {
		t.Fatalf("single-ish paging got %q", got)
	}
}

func TestQueryDirectoryPatterns(t *testing.T) {
	d := infoDisk(t)
	dir := infoOpen(t, d, "d", true, 0)
	for _, n := range []string{"a.txt", "B.TXT", "c.dat", "readme"} {
		infoOpen(t, d, `d\`+n, false, 0)
	}
	for pattern, want := range map[string][]string{
		"*":       {".", "..", "B.TXT", "a.txt", "c.dat", "readme"},
		"*.txt":   {"B.TXT", "a.txt"},
		"?.TXT":   {"B.TXT", "a.txt"},
		"README":  {"readme"},
		"readme":  {"readme"},
		"<.dat":   {"c.dat"},
		"":        {".", "..", "B.TXT", "a.txt", "c.dat", "readme"},
		"..":      {".."},
		"nothing": nil,
	} {
		got := listAll(t, dir, fscc.FileNamesInformation, pattern, 65536)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("pattern %q: got %q, want %q", pattern, got, want)
		}
	}
}

func TestQueryDirectoryStatuses(t *testing.T) {
	d := infoDisk(t)
	dir := infoOpen(t, d, "d", true, 0)
	infoOpen(t, d, `d\one`, false, 0)

	_, err := queryDir(dir, fscc.FileNamesInformation, 0, "zz*", 1024)
	wantStatus(t, err, smb2.StatusNoSuchFile)
	_, err = queryDir(dir, fscc.FileNamesInformation, 0, "*", 1024)
	wantStatus(t, err, smb2.StatusNoMoreFiles) // the first pattern stays
	b, err := queryDir(dir, fscc.FileNamesInformation, smb2.RestartScans|smb2.ReturnSingleEntry, "*", 1024)
	wantStatus(t, err, 0)
	if got := dirNames(t, fscc.FileNamesInformation, b); !slices.Equal(got, []string{"."}) {
		t.Fatalf("single entry: %q", got)
	}
	_, err = queryDir(dir, fscc.FileIdBothDirectoryInformation, 0, "*", 50)
	wantStatus(t, err, smb2.StatusInfoLengthMismatch)
	b, err = queryDir(dir, fscc.FileNamesInformation, smb2.Reopen, "o*", 1024)
	wantStatus(t, err, 0)
	if got := dirNames(t, fscc.FileNamesInformation, b); !slices.Equal(got, []string{"one"}) {
		t.Fatalf("reopen: %q", got)
	}
	_, err = queryDir(dir, fscc.FileNamesInformation, 0, "", 1024)
	wantStatus(t, err, smb2.StatusNoMoreFiles)

	_, err = queryDir(dir, fscc.FileBasicInformation, 0, "*", 1024)
	wantStatus(t, err, smb2.StatusInvalidInfoClass)
	_, err = queryDir(dir, fscc.FileNamesInformation, 0, `a\b`, 1024)
	wantStatus(t, err, smb2.StatusObjectNameInvalid)
	file := infoOpen(t, d, `d\one`, false, 0)
	_, err = queryDir(file, fscc.FileNamesInformation, 0, "*", 1024)
	wantStatus(t, err, smb2.StatusInvalidParameter)
	noList := infoOpen(t, d, "d", true, smb2.FileReadAttributes)
	_, err = queryDir(noList, fscc.FileNamesInformation, 0, "*", 1024)
	wantStatus(t, err, smb2.StatusAccessDenied)
}

// TestQueryDirectoryDeletedDuringScan follows smbtorture smb2.dir.fixed:
// files deleted after the scan started are not returned afterwards.
func TestQueryDirectoryDeletedDuringScan(t *testing.T) {
	d := infoDisk(t)
	dir := infoOpen(t, d, "d", true, 0)
	for i := range 20 {
		infoOpen(t, d, fmt.Sprintf(`d\f%02d`, i), false, 0)
	}
	b, err := queryDir(dir, fscc.FileNamesInformation, smb2.ReturnSingleEntry, "*", 256)
	wantStatus(t, err, 0)
	if got := dirNames(t, fscc.FileNamesInformation, b); got[0] != "." {
		t.Fatalf("first %q", got)
	}
	for i := range 20 {
		if err := d.fs.Remove(fmt.Sprintf("d/f%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	var rest []string
	for {
		b, err := queryDir(dir, fscc.FileNamesInformation, 0, "*", 4096)
		if err == smb2.StatusNoMoreFiles {
			break
		}
		wantStatus(t, err, 0)
		rest = append(rest, dirNames(t, fscc.FileNamesInformation, b)...)
	}
	if !slices.Equal(rest, []string{".."}) {
		t.Fatalf("after deletion got %q", rest)
	}
}

func TestQueryDirectoryLayout(t *testing.T) {
	d := infoDisk(t)
	dir := infoOpen(t, d, "d", true, 0)
	f := infoOpen(t, d, `d\x.bin`, false, 0)
	f.f.WriteAt(make([]byte, 777), 0)
	fi, _ := f.f.Stat()
	b, err := queryDir(dir, fscc.FileIdBothDirectoryInformation, 0, "x.bin", 1024)
	wantStatus(t, err, 0)
	le := binary.LittleEndian
	if le.Uint32(b) != 0 || le.Uint64(b[40:]) != 777 || le.Uint64(b[24:]) != fscc.Filetime(infoEpoch) ||
		le.Uint32(b[56:])&fscc.FileAttributeDirectory != 0 || le.Uint64(b[96:]) != fi.FileID || b[68] != 0 {
		t.Fatalf("entry %x", b)
	}
	b, _ = queryDir(dir, fscc.FileIdBothDirectoryInformation, smb2.RestartScans, ".", 1024)
	if le.Uint32(b[56:])&fscc.FileAttributeDirectory == 0 {
		t.Fatalf(". is not a directory: %x", b)
	}
}

var vfsCreate = vfs.OpenOptions{Create: vfs.CreateExclusive, Write: true}

// FuzzQueryDirectory feeds arbitrary patterns, flags, classes and buffer
// sizes: no panics, and never more output than asked for.
func FuzzQueryDirectory(f *testing.F) {
	f.Add("*", uint8(smb2.RestartScans), fscc.FileIdBothDirectoryInformation, uint32(200))
	f.Add("<.txt", uint8(0), fscc.FileNamesInformation, uint32(20))
	f.Add("a\"b>", uint8(smb2.ReturnSingleEntry), fscc.FileBothDirectoryInformation, uint32(1000))
	f.Fuzz(func(t *testing.T, pattern string, flags, class uint8, max uint32) {
		d := infoDisk(t)
		dir := infoOpen(t, d, "d", true, 0)
		for _, n := range []string{"a.txt", "b", "long name.dat"} {
			infoOpen(t, d, `d\`+n, false, 0)
		}
		max %= 1 << 16
		for range 3 {
			b, _ := queryDir(dir, class, flags, pattern, max)
			if len(b) > int(max) {
				t.Fatalf("%d bytes for %d", len(b), max)
			}
		}
	})
}
