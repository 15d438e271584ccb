package share

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
	"github.com/smbcluster/smbcluster/node/vfs/memfs"
)

// The harness drives the handlers directly: a Disk over memfs and opens
// made by Disk.Create.

var infoEpoch = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

func infoDisk(t testing.TB) *Disk {
	t.Helper()
	return NewDisk("data", memfs.NewWithClock(func() time.Time { return infoEpoch }), false, nil)
}

// infoOpen creates or opens name with the access given (0 means
// MAXIMUM_ALLOWED); dir asks for a directory.
func infoOpen(t testing.TB, d *Disk, name string, dir bool, access uint32) *open {
	t.Helper()
	if access == 0 {
		access = smb2.MaximumAllowed
	}
	req := &smb2.CreateRequest{
		ImpersonationLevel: 2, DesiredAccess: access, ShareAccess: 7,
		CreateDisposition: smb2.FileOpenIf, Name: name,
	}
	if dir {
		req.CreateOptions = smb2.FileDirectoryFile
	} else if name != "" {
		req.CreateOptions = smb2.FileNonDirectoryFile
	}
	h, _, err := d.Create(&server.Request{}, req)
	if err != nil {
		t.Fatalf("create %q: %v", name, err)
	}
	o := h.(*open)
	t.Cleanup(func() { o.Close(false) })
	return o
}

func queryFile(t testing.TB, o *open, class uint8, max uint32) ([]byte, error) {
	t.Helper()
	resp, err := o.QueryInfo(&server.Request{}, &smb2.QueryInfoRequest{InfoType: smb2.InfoFile, FileInfoClass: class, OutputBufferLength: max})
	return infoBuf(resp), err
}

func infoBuf(resp server.Response) []byte {
	if r, ok := resp.(*smb2.QueryInfoResponse); ok {
		return r.Buffer
	}
	return nil
}

func wantStatus(t testing.TB, err error, want smb2.Status) {
	t.Helper()
	var st smb2.Status
	if want == smb2.StatusSuccess {
		if err != nil {
			t.Fatalf("err = %v, want success", err)
		}
		return
	}
	if !errors.As(err, &st) || st != want {
		t.Fatalf("err = %v, want %v", err, want)
	}
}

func TestQueryFileLayouts(t *testing.T) {
	d := infoDisk(t)
	infoOpen(t, d, "dir", true, 0)
	o := infoOpen(t, d, `dir\f.txt`, false, 0)
	if _, err := o.f.WriteAt(make([]byte, 1000), 0); err != nil {
		t.Fatal(err)
	}

	b, err := queryFile(t, o, fscc.FileBasicInformation, 1024)
	wantStatus(t, err, 0)
	var bi fscc.BasicInformation
	if err := bi.Decode(b); err != nil || len(b) != 40 || bi.LastWriteTime != fscc.Filetime(infoEpoch) || bi.FileAttributes == 0 {
		t.Fatalf("basic %x: %+v %v", b, bi, err)
	}

	b, err = queryFile(t, o, fscc.FileStandardInformation, 1024)
	wantStatus(t, err, 0)
	var si fscc.StandardInformation
	if err := si.Decode(b); err != nil || si.EndOfFile != 1000 || si.Directory || si.DeletePending || si.NumberOfLinks != 1 {
		t.Fatalf("standard %+v %v", si, err)
	}
	wantStatus(t, o.setDisposition(true), 0)
	b, _ = queryFile(t, o, fscc.FileStandardInformation, 1024)
	si.Decode(b)
	if !si.DeletePending || si.NumberOfLinks != 0 {
		t.Fatalf("standard after disposition %+v", si)
	}
	wantStatus(t, o.setDisposition(false), 0)

	b, err = queryFile(t, o, fscc.FileAllInformation, 1024)
	wantStatus(t, err, 0)
	var ai fscc.AllInformation
	if err := ai.Decode(b); err != nil || ai.Name.FileName != `\dir\f.txt` || ai.Standard.EndOfFile != 1000 || ai.Access.AccessFlags != o.access {
		t.Fatalf("all %+v %v", ai, err)
	}

	b, err = queryFile(t, o, fscc.FileNameInformation, 1024)
	wantStatus(t, err, 0)
	var ni fscc.NameInformation
	if err := ni.Decode(b); err != nil || ni.FileName != `\dir\f.txt` {
		t.Fatalf("name %+v %v", ni, err)
	}

	b, err = queryFile(t, o, fscc.FileStreamInformation, 1024)
	wantStatus(t, err, 0)
	var sl fscc.StreamInformation
	if err := sl.Decode(b); err != nil || len(sl) != 1 || sl[0].Name != "::$DATA" || sl[0].Size != 1000 {
		t.Fatalf("stream %+v %v", sl, err)
	}

	b, err = queryFile(t, o, fscc.FileNetworkOpenInformation, 1024)
	wantStatus(t, err, 0)
	if len(b) != 56 || binary.LittleEndian.Uint64(b[40:]) != 1000 {
		t.Fatalf("network open %x", b)
	}

	b, err = queryFile(t, o, fscc.FileInternalInformation, 1024)
	fi, _ := o.f.Stat()
	if err != nil || binary.LittleEndian.Uint64(b) != fi.FileID {
		t.Fatalf("internal %x %v", b, err)
	}

	b, err = queryFile(t, o, fscc.FileAlternateNameInformation, 1024)
	if ni.Decode(b); err != nil || ni.FileName != "F.TXT" {
		t.Fatalf("alt name %q %v", ni.FileName, err)
	}
}

func TestQueryDirectoryHandleInfo(t *testing.T) {
	d := infoDisk(t)
	o := infoOpen(t, d, "sub", true, 0)
	b, err := queryFile(t, o, fscc.FileStandardInformation, 1024)
	wantStatus(t, err, 0)
	var si fscc.StandardInformation
	if si.Decode(b); !si.Directory {
		t.Fatalf("standard %+v", si)
	}
	b, err = queryFile(t, o, fscc.FileStreamInformation, 1024)
	wantStatus(t, err, 0)
	if len(b) != 0 { // no default data stream, no named streams (smb2.streams.dir)
		t.Fatalf("directory streams: %x", b)
	}
	root := infoOpen(t, d, "", true, 0)
	b, _ = queryFile(t, root, fscc.FileNameInformation, 1024)
	var ni fscc.NameInformation
	if ni.Decode(b); ni.FileName != `\` {
		t.Fatalf("root name %q", ni.FileName)
	}
}

// TestQueryFileBufferCheck follows smbtorture smb2.getinfo.qfile_buffercheck:
// below the structure size STATUS_INFO_LENGTH_MISMATCH, then
// STATUS_BUFFER_OVERFLOW with what fits, then success.
func TestQueryFileBufferCheck(t *testing.T) {
	d := infoDisk(t)
	o := infoOpen(t, d, "bufsize.txt", false, 0)
	levels := map[uint8]int{4: 40, 5: 24, 6: 8, 7: 4, 8: 4, 9: 8, 14: 8, 16: 4, 17: 4, 18: 104, 21: 8, 22: 32, 28: 16, 34: 56, 35: 8, 59: 24}
	for class, fixed := range levels {
		full, err := queryFile(t, o, class, 65535)
		wantStatus(t, err, 0)
		for i := 0; i <= len(full); i++ {
			b, err := queryFile(t, o, class, uint32(i))
			switch {
			case i < fixed:
				wantStatus(t, err, smb2.StatusInfoLengthMismatch)
			case i < len(full):
				wantStatus(t, err, smb2.StatusBufferOverflow)
				if string(b) != string(full[:i]) {
					t.Fatalf("class %d len %d: truncated output differs", class, i)
				}
			default:
				wantStatus(t, err, 0)
			}
		}
	}
}

func TestQueryFSBufferCheck(t *testing.T) {
	d := infoDisk(t)
	o := infoOpen(t, d, "", true, 0)
	levels := map[uint8]int{1: 24, 3: 24, 4: 8, 5: 16, 6: 48, 7: 32, 8: 64, 11: 28}
	for class, fixed := range levels {
		q := func(n uint32) ([]byte, error) {
			resp, err := o.QueryInfo(&server.Request{}, &smb2.QueryInfoRequest{InfoType: smb2.InfoFilesystem, FileInfoClass: class, OutputBufferLength: n})
			return infoBuf(resp), err
		}
		full, err := q(65535)
		wantStatus(t, err, 0)
		for i := 0; i <= len(full); i++ {
			_, err := q(uint32(i))
			switch {
			case i < fixed:
				wantStatus(t, err, smb2.StatusInfoLengthMismatch)
			case i < len(full):
				wantStatus(t, err, smb2.StatusBufferOverflow)
			default:
				wantStatus(t, err, 0)
			}
		}
	}
}

func TestQueryFSLayouts(t *testing.T) {
	d := infoDisk(t)
	o := infoOpen(t, d, "", true, 0)
	q := func(class uint8) []byte {
		resp, err := o.QueryInfo(&server.Request{}, &smb2.QueryInfoRequest{InfoType: smb2.InfoFilesystem, FileInfoClass: class, OutputBufferLength: 1024})
		wantStatus(t, err, 0)
		return infoBuf(resp)
	}
	var vi fscc.FsVolumeInformation
	if err := vi.Decode(q(fscc.FileFsVolumeInformation)); err != nil || vi.VolumeLabel != "data" || vi.VolumeSerialNumber != 0x4d454d46 {
		t.Fatalf("volume %+v %v", vi, err)
	}
	var ai fscc.FsAttributeInformation
	if err := ai.Decode(q(fscc.FileFsAttributeInformation)); err != nil || ai.FileSystemName != "NTFS" ||
		ai.MaximumComponentNameLength != 255 || ai.FileSystemAttributes&fscc.FileCasePreservedNames == 0 {
		t.Fatalf("attribute %+v %v", ai, err)
	}
	b := q(fscc.FileFsSizeInformation)
	le := binary.LittleEndian
	if le.Uint64(b) != 1<<40/4096 || le.Uint64(b[8:]) != 1<<39/4096 || le.Uint32(b[16:]) != 8 || le.Uint32(b[20:]) != 512 {
		t.Fatalf("size %x", b)
	}
	if b := q(fscc.FileFsDeviceInformation); le.Uint32(b) != fscc.FileDeviceDisk {
		t.Fatalf("device %x", b)
	}
	_, err := o.QueryInfo(&server.Request{}, &smb2.QueryInfoRequest{InfoType: smb2.InfoFilesystem, FileInfoClass: fscc.FileFsLabelInformation, OutputBufferLength: 1024})
	wantStatus(t, err, smb2.StatusInvalidInfoClass)
}

func TestQueryInfoErrors(t *testing.T) {
	d := infoDisk(t)
	infoOpen(t, d, "f", false, 0)
	o := infoOpen(t, d, "f", false, smb2.FileReadData)
	for _, c := range []uint8{fscc.FileBasicInformation, fscc.FileAllInformation, fscc.FileNetworkOpenInformation, fscc.FileAttributeTagInformation} {
		_, err := queryFile(t, o, c, 1024)
		wantStatus(t, err, smb2.StatusAccessDenied)
	}
	_, err := queryFile(t, o, fscc.FileStandardInformation, 1024)
	wantStatus(t, err, 0)
	_, err = queryFile(t, o, 99, 1024)
	wantStatus(t, err, smb2.StatusInvalidInfoClass)
	_, err = queryFile(t, o, fscc.FilePipeInformation, 1024)
	wantStatus(t, err, smb2.StatusInvalidInfoClass)
	_, err = o.QueryInfo(&server.Request{}, &smb2.QueryInfoRequest{InfoType: 9})
	wantStatus(t, err, smb2.StatusInvalidParameter)
	_, err = o.QueryInfo(&server.Request{}, &smb2.QueryInfoRequest{InfoType: smb2.InfoQuota, OutputBufferLength: 1024})
	wantStatus(t, err, smb2.StatusNotSupported)
}

func TestShortName(t *testing.T) {
	for in, want := range map[string]string{"f.txt": "F.TXT", "ABCDEFGH.TXT": "ABCDEFGH.TXT", "x": "X"} {
		if got := shortName(in); got != want {
			t.Errorf("shortName(%q) = %q, want %q", in, got, want)
		}
	}
	for _, in := range []string{"testsmb2_file.dat", "a long name.text", "a.b.c", ".profile", "äöü.txt"} {
		got := shortName(in)
		base, ext, _ := cutLast(got)
		if len(base) > 8 || len(ext) > 3 || !valid83(base) || ext != "" && !valid83(ext) {
			t.Errorf("shortName(%q) = %q: not 8.3", in, got)
		}
	}
}

func cutLast(s string) (string, string, bool) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '.' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
