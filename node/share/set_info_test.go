package share

import (
	"testing"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
	"github.com/smbcluster/smbcluster/node/vfs"
)

func setFileInfo(o *open, class uint8, e encoder) error {
	b := make([]byte, e.Size())
	e.Encode(b)
	return o.SetInfo(&server.Request{}, &smb2.SetInfoRequest{InfoType: smb2.InfoFile, FileInfoClass: class, Buffer: b})
}

func TestSetBasic(t *testing.T) {
	d := infoDisk(t)
	o := infoOpen(t, d, "f", false, 0)
	before, _ := o.f.Stat()
	wt := fscc.Filetime(infoEpoch.Add(-48 * 3600e9))
	err := setFileInfo(o, fscc.FileBasicInformation, &fscc.BasicInformation{
		LastWriteTime: wt, CreationTime: fscc.FiletimeStopUpdating,
		FileAttributes: fscc.FileAttributeHidden | fscc.FileAttributeArchive,
	})
	wantStatus(t, err, 0)
	fi, _ := o.f.Stat()
	if fscc.Filetime(fi.LastWriteTime) != wt || !fi.CreationTime.Equal(before.CreationTime) || fi.Attributes&vfs.AttrHidden == 0 {
		t.Fatalf("after set: %+v", fi)
	}
	// All zero: nothing changes.
	wantStatus(t, setFileInfo(o, fscc.FileBasicInformation, &fscc.BasicInformation{}), 0)
	if fi2, _ := o.f.Stat(); fi2.Attributes != fi.Attributes {
		t.Fatalf("zero attributes changed them: %#x", fi2.Attributes)
	}
	err = setFileInfo(o, fscc.FileBasicInformation, &fscc.BasicInformation{FileAttributes: fscc.FileAttributeDirectory})
	wantStatus(t, err, smb2.StatusInvalidParameter)
	err = o.SetInfo(&server.Request{}, &smb2.SetInfoRequest{InfoType: smb2.InfoFile, FileInfoClass: fscc.FileBasicInformation, Buffer: make([]byte, 20)})
	wantStatus(t, err, smb2.StatusInfoLengthMismatch)

	ro := infoOpen(t, d, "f", false, smb2.FileReadAttributes)
	wantStatus(t, setFileInfo(ro, fscc.FileBasicInformation, &fscc.BasicInformation{}), smb2.StatusAccessDenied)

	dir := infoOpen(t, d, "dir", true, 0)
	err = setFileInfo(dir, fscc.FileBasicInformation, &fscc.BasicInformation{FileAttributes: fscc.FileAttributeTemporary})
	wantStatus(t, err, smb2.StatusInvalidParameter)
}

func TestSetRename(t *testing.T) {
	d := infoDisk(t)
	infoOpen(t, d, "dir", true, smb2.FileListDirectory) // a DELETE-access open of the parent would block renames in it
	o := infoOpen(t, d, "a", false, 0)
	ob := infoOpen(t, d, "b", false, 0)

	ren := func(o *open, to string, replace bool) error {
		return setFileInfo(o, fscc.FileRenameInformation, &fscc.RenameInformation{FileName: to, ReplaceIfExists: replace})
	}
	wantStatus(t, ren(o, "b", false), smb2.StatusObjectNameCollision)
	wantStatus(t, ren(o, `dir\c`, false), 0)
	if o.currentName() != "dir/c" {
		t.Fatalf("name after rename %q", o.currentName())
	}
	b, _ := queryFile(t, o, fscc.FileNameInformation, 1024)
	var ni fscc.NameInformation
	if ni.Decode(b); ni.FileName != `\dir\c` {
		t.Fatalf("queried name %q", ni.FileName)
	}
	// Not over a file another open has open ([MS-FSCC] 2.4.42); an open
	// of attributes only does not count.
	wantStatus(t, ren(o, "b", true), smb2.StatusAccessDenied)
	ob.Close(false)
	attrs := infoOpen(t, d, "b", false, smb2.FileReadAttributes)
	wantStatus(t, ren(o, "b", true), 0)
	attrs.Close(false)
	if _, err := d.fs.Stat("dir/c"); err == nil {
		t.Fatal("old name still exists")
	}
	wantStatus(t, ren(o, `nodir\x`, false), smb2.StatusObjectPathNotFound)
	wantStatus(t, ren(o, `\b`, false), smb2.StatusObjectNameInvalid)
	wantStatus(t, ren(o, "dir", true), smb2.StatusAccessDenied) // onto a directory
	wantStatus(t, ren(o, ":s", false), smb2.StatusNotSupported)
	err := setFileInfo(o, fscc.FileRenameInformation, &fscc.RenameInformation{FileName: "z", RootDirectory: 1})
	wantStatus(t, err, smb2.StatusInvalidParameter)

	noDel := infoOpen(t, d, "b", false, smb2.FileReadData)
	wantStatus(t, ren(noDel, "q", false), smb2.StatusAccessDenied)
	// A file is deleted when its last open closes ([MS-FSA] 2.1.5.4):
	// close the second open of o's file before o's delete-on-close.
	noDel.Close(false)

	// Delete-on-close removes the file under its new name.
	wantStatus(t, o.setDisposition(true), 0)
	wantStatus(t, ren(o, "q", false), smb2.StatusDeletePending)
	wantStatus(t, o.setDisposition(false), 0)
	wantStatus(t, ren(o, "q", false), 0)
	wantStatus(t, o.setDisposition(true), 0)
	if _, err := o.Close(false); err != nil {
		t.Fatal(err)
	}
	if _, err := d.fs.Stat("q"); err == nil {
		t.Fatal("delete on close after rename left the file")
	}
}

func TestSetDisposition(t *testing.T) {
	d := infoDisk(t)
	dir := infoOpen(t, d, "dir", true, 0)
	infoOpen(t, d, `dir\f`, false, 0)
	wantStatus(t, setFileInfo(dir, fscc.FileDispositionInformation, &fscc.DispositionInformation{DeletePending: true}), smb2.StatusDirectoryNotEmpty)

	ro := infoOpen(t, d, "ro", false, 0)
	wantStatus(t, setFileInfo(ro, fscc.FileBasicInformation, &fscc.BasicInformation{FileAttributes: fscc.FileAttributeReadonly}), 0)
	wantStatus(t, setFileInfo(ro, fscc.FileDispositionInformationEx, &fscc.DispositionInformationEx{Flags: fscc.FileDispositionDelete}), smb2.StatusCannotDelete)

	nd := infoOpen(t, d, "nd", false, smb2.FileReadData|smb2.FileWriteData)
	wantStatus(t, setFileInfo(nd, fscc.FileDispositionInformation, &fscc.DispositionInformation{DeletePending: true}), smb2.StatusAccessDenied)

	f := infoOpen(t, d, "f", false, 0)
	wantStatus(t, setFileInfo(f, fscc.FileDispositionInformationEx, &fscc.DispositionInformationEx{Flags: fscc.FileDispositionDelete | fscc.FileDispositionPosixSemantics}), 0)
	f.mu.Lock()
	del := f.deleteOnClose
	f.mu.Unlock()
	if !del {
		t.Fatal("DispositionEx did not set delete pending")
	}
	err := f.SetInfo(&server.Request{}, &smb2.SetInfoRequest{InfoType: smb2.InfoFile, FileInfoClass: fscc.FileDispositionInformation})
	wantStatus(t, err, smb2.StatusInfoLengthMismatch)
}

func TestSetSizes(t *testing.T) {
	d := infoDisk(t)
	f := infoOpen(t, d, "f", false, 0)
	wantStatus(t, setFileInfo(f, fscc.FileEndOfFileInformation, &fscc.EndOfFileInformation{EndOfFile: 5000}), 0)
	if fi, _ := f.f.Stat(); fi.Size != 5000 {
		t.Fatalf("size %d", fi.Size)
	}
	wantStatus(t, setFileInfo(f, fscc.FileAllocationInformation, &fscc.AllocationInformation{AllocationSize: 1 << 20}), 0)
	if fi, _ := f.f.Stat(); fi.Size != 5000 {
		t.Fatalf("allocation changed size: %d", fi.Size)
	}
	wantStatus(t, setFileInfo(f, fscc.FileAllocationInformation, &fscc.AllocationInformation{AllocationSize: 100}), 0)
	if fi, _ := f.f.Stat(); fi.Size != 100 {
		t.Fatalf("allocation below EOF did not truncate: %d", fi.Size)
	}
	wantStatus(t, setFileInfo(f, fscc.FileValidDataLengthInformation, &fscc.ValidDataLengthInformation{ValidDataLength: 50}), 0)
	wantStatus(t, setFileInfo(f, fscc.FileValidDataLengthInformation, &fscc.ValidDataLengthInformation{ValidDataLength: 500}), smb2.StatusInvalidParameter)
	wantStatus(t, setFileInfo(f, fscc.FileEndOfFileInformation, &fscc.EndOfFileInformation{EndOfFile: -1}), smb2.StatusInvalidParameter)

	dir := infoOpen(t, d, "dir", true, 0)
	wantStatus(t, setFileInfo(dir, fscc.FileEndOfFileInformation, &fscc.EndOfFileInformation{EndOfFile: 1}), smb2.StatusInvalidParameter)
	ro := infoOpen(t, d, "f", false, smb2.FileReadData)
	wantStatus(t, setFileInfo(ro, fscc.FileEndOfFileInformation, &fscc.EndOfFileInformation{EndOfFile: 1}), smb2.StatusAccessDenied)
}

func TestSetMisc(t *testing.T) {
	d := infoDisk(t)
	f := infoOpen(t, d, "f", false, 0)
	wantStatus(t, setFileInfo(f, fscc.FilePositionInformation, &fscc.PositionInformation{CurrentByteOffset: 4096}), 0)
	b, _ := queryFile(t, f, fscc.FilePositionInformation, 8)
	if len(b) != 8 || b[1] != 0x10 {
		t.Fatalf("position %x", b)
	}
	wantStatus(t, setFileInfo(f, fscc.FileModeInformation, &fscc.ModeInformation{Mode: fscc.FileWriteThrough}), 0)
	b, _ = queryFile(t, f, fscc.FileModeInformation, 4)
	if b[0] != 2 {
		t.Fatalf("mode %x", b)
	}
	b, _ = queryFile(t, f, fscc.FileAllInformation, 1024)
	var ai fscc.AllInformation
	if ai.Decode(b); ai.Mode.Mode != 2 || ai.Position.CurrentByteOffset != 4096 {
		t.Fatalf("all: %+v", ai)
	}
	wantStatus(t, setFileInfo(f, fscc.FileModeInformation, &fscc.ModeInformation{Mode: 1}), smb2.StatusInvalidParameter)
	wantStatus(t, setFileInfo(f, fscc.FileLinkInformation, &fscc.LinkInformation{FileName: "l"}), smb2.StatusNotSupported)
	err := f.SetInfo(&server.Request{}, &smb2.SetInfoRequest{InfoType: smb2.InfoFile, FileInfoClass: 99, Buffer: make([]byte, 8)})
	wantStatus(t, err, smb2.StatusInvalidInfoClass)
	err = f.SetInfo(&server.Request{}, &smb2.SetInfoRequest{InfoType: smb2.InfoFilesystem, FileInfoClass: fscc.FileFsLabelInformation, Buffer: make([]byte, 8)})
	wantStatus(t, err, smb2.StatusNotSupported)
}

// FuzzSetInfo feeds arbitrary classes and buffers to SET_INFO: no panics,
// and the file system stays usable.
func FuzzSetInfo(f *testing.F) {
	f.Add(uint8(smb2.InfoFile), fscc.FileRenameInformation, []byte("\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00x\x00y\x00"))
	f.Add(uint8(smb2.InfoFile), fscc.FileBasicInformation, make([]byte, 40))
	f.Add(uint8(smb2.InfoSecurity), uint8(0), make([]byte, 20))
	f.Add(uint8(smb2.InfoFile), fscc.FileEndOfFileInformation, []byte{1, 0, 0, 0, 0, 0, 0, 0})
	f.Add(uint8(smb2.InfoFile), fscc.FileFullEaInformation, []byte{0, 0, 0, 0, 0, 1, 1, 0, 'A', 0, 'v'})
	f.Fuzz(func(t *testing.T, typ, class uint8, buf []byte) {
		d := infoDisk(t)
		o := infoOpen(t, d, "f", false, 0)
		if class == fscc.FileEndOfFileInformation || class == fscc.FileAllocationInformation {
			return // sizes up to 2^63 would allocate in memfs
		}
		o.SetInfo(&server.Request{}, &smb2.SetInfoRequest{InfoType: typ, FileInfoClass: class, Buffer: buf, AdditionalInformation: 7})
		if _, err := d.fs.Stat(o.currentName()); err != nil {
			t.Fatalf("open's name %q does not exist: %v", o.currentName(), err)
		}
	})
}
