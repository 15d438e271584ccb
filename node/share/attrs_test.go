package share

import (
	"errors"
	"testing"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
	"github.com/smbcluster/smbcluster/node/vfs"
)

// TestOverwriteAttributes: an overwrite gives the file the attributes the
// CREATE names, with FILE_ATTRIBUTE_ARCHIVE, and is refused when it would
// drop FILE_ATTRIBUTE_HIDDEN or FILE_ATTRIBUTE_SYSTEM ([MS-FSA] 2.1.5.1.2;
// rows of smbtorture smb2.openattr's table, which Windows gave).
func TestOverwriteAttributes(t *testing.T) {
	const (
		n, a, r, h, s = vfs.AttrNormal, vfs.AttrArchive, vfs.AttrReadOnly, vfs.AttrHidden, vfs.AttrSystem
	)
	denied := uint32(0xffffffff)
	for _, tc := range []struct{ init, trunc, want uint32 }{
		{n, n, a},
		{n, r, a | r},
		{a, n, a},
		{h, h, a | h},
		{h, a | r | h, a | r | h},
		{s, a | s, a | s},
		{a | h, h, a | h},
		{a | s | h, r | h | s, a | r | h | s},
		{h, n, denied},
		{s, a, denied},
		{h | s, h, denied},
		{r, n, denied}, // read-only: no overwrite at all
	} {
		d := infoDisk(t)
		req := &smb2.CreateRequest{ImpersonationLevel: 2, DesiredAccess: smb2.FileWriteData, ShareAccess: 7,
			CreateDisposition: smb2.FileOverwriteIf, FileAttributes: tc.init, Name: "f"}
		h, _, err := d.Create(&server.Request{}, req)
		if err != nil {
			t.Fatal(err)
		}
		h.(*open).Close(false)
		req = &smb2.CreateRequest{ImpersonationLevel: 2, DesiredAccess: smb2.FileReadData | smb2.FileWriteData, ShareAccess: 7,
			CreateDisposition: smb2.FileOverwrite, FileAttributes: tc.trunc, Name: "f"}
		h, resp, err := d.Create(&server.Request{}, req)
		if tc.want == denied {
			if !errors.Is(err, smb2.StatusAccessDenied) {
				t.Errorf("%#x overwritten with %#x: %v, want STATUS_ACCESS_DENIED", tc.init, tc.trunc, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%#x overwritten with %#x: %v", tc.init, tc.trunc, err)
			continue
		}
		h.(*open).Close(false)
		fi, _ := d.fs.Stat("f")
		if fi.Attributes != tc.want || resp.FileAttributes != tc.want {
			t.Errorf("%#x overwritten with %#x: attributes %#x (response %#x), want %#x", tc.init, tc.trunc, fi.Attributes, resp.FileAttributes, tc.want)
		}
	}
}

// TestReadOnlyKeepsACL: FILE_ATTRIBUTE_READONLY does not change the
// descriptor a file is described with (smbtorture smb2.winattr).
func TestReadOnlyKeepsACL(t *testing.T) {
	d := infoDisk(t)
	o := infoOpen(t, d, "f", false, 0)
	before := readSD(t, o)
	if err := setFileInfo(o, fscc.FileBasicInformation, &fscc.BasicInformation{FileAttributes: fscc.FileAttributeReadonly}); err != nil {
		t.Fatal(err)
	}
	after := readSD(t, o)
	if string(before.Bytes()) != string(after.Bytes()) {
		t.Fatalf("descriptor changed with FILE_ATTRIBUTE_READONLY:\n%+v\n%+v", before.DACL, after.DACL)
	}
}

// TestMaximumAllowedReadOnly: MAXIMUM_ALLOWED on a file with
// FILE_ATTRIBUTE_READONLY is granted all but FILE_WRITE_DATA,
// FILE_APPEND_DATA and FILE_DELETE_CHILD ([MS-FSA] 2.1.5.1.2.1); it was
// refused. Asking for FILE_WRITE_DATA as well is still refused.
func TestMaximumAllowedReadOnly(t *testing.T) {
	d := infoDisk(t)
	req := &smb2.CreateRequest{ImpersonationLevel: 2, DesiredAccess: smb2.FileWriteData, ShareAccess: 7,
		CreateDisposition: smb2.FileCreate, FileAttributes: vfs.AttrReadOnly, Name: "ro"}
	h, _, err := d.Create(&server.Request{}, req)
	if err != nil {
		t.Fatal(err)
	}
	h.(*open).Close(false)
	o, _ := mustCreate(t, d, alice, "ro", smb2.FileOpen, smb2.MaximumAllowed, 0)
	if o.access&readOnlyCleared != 0 || o.access&fscc.FileReadData == 0 || o.access&fscc.FileWriteAttributes == 0 {
		t.Fatalf("MAXIMUM_ALLOWED on a read-only file: access %#x", o.access)
	}
	_, _, err = userCreate(d, alice, "ro", smb2.FileOpen, smb2.MaximumAllowed|smb2.FileWriteData, 0)
	if !errors.Is(err, smb2.StatusAccessDenied) {
		t.Fatalf("MAXIMUM_ALLOWED|FILE_WRITE_DATA on a read-only file: %v", err)
	}
}
