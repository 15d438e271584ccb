package share

import (
	"testing"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
)

func TestStreams(t *testing.T) {
	d := infoDisk(t)
	infoOpen(t, d, "f", false, 0)
	s := infoOpen(t, d, "F:Zone.Identifier:$DATA", false, 0) // created, case-folded base
	if _, err := writeOpen(s, &smb2.WriteRequest{Data: []byte("zone")}); err != nil {
		t.Fatal(err)
	}
	if n, _ := queryFile(t, s, fscc.FileNameInformation, 1024); string(n[4:]) != string(utf16(`\f:Zone.Identifier`)) {
		t.Fatalf("normalized name %q", n)
	}
	b, err := queryFile(t, s, fscc.FileStreamInformation, 4096)
	wantStatus(t, err, 0)
	var l fscc.StreamInformation
	if err := l.Decode(b); err != nil || len(l) != 2 || l[0].Name != "::$DATA" || l[1].Name != ":Zone.Identifier:$DATA" || l[1].Size != 4 {
		t.Fatalf("streams %+v, %v", l, err)
	}
	// Stream names fold case; the stored spelling is kept.
	s2 := infoOpen(t, d, "f:ZONE.IDENTIFIER", false, 0)
	if s2.currentStream() != "Zone.Identifier" {
		t.Fatalf("stream %q", s2.currentStream())
	}
	wantStatus(t, s2.setDisposition(true), 0)
	s2.Close(false)
	// The stream goes when its last open closes ([MS-FSA] 2.1.5.4);
	// meanwhile it cannot be opened again.
	b, _ = queryFile(t, s, fscc.FileStreamInformation, 4096)
	if l.Decode(b); len(l) != 2 {
		t.Fatalf("delete pending: %+v", l)
	}
	_, _, err = d.Create(&server.Request{}, &smb2.CreateRequest{ImpersonationLevel: 2, DesiredAccess: smb2.MaximumAllowed,
		ShareAccess: 7, CreateDisposition: smb2.FileOpen, Name: `f:Zone.Identifier`})
	wantStatus(t, err, smb2.StatusDeletePending)
	s.Close(false)
	b, _ = queryFile(t, infoOpen(t, d, "f", false, 0), fscc.FileStreamInformation, 4096)
	if l.Decode(b); len(l) != 1 {
		t.Fatalf("after delete: %+v", l)
	}
	// A directory has no default data stream.
	infoOpen(t, d, "d", true, 0)
	_, _, err = d.Create(&server.Request{}, &smb2.CreateRequest{ImpersonationLevel: 2, DesiredAccess: smb2.MaximumAllowed,
		CreateDisposition: smb2.FileOpen, Name: `d::$DATA`})
	wantStatus(t, err, smb2.StatusFileIsADirectory)
	_, _, err = d.Create(&server.Request{}, &smb2.CreateRequest{ImpersonationLevel: 2, DesiredAccess: smb2.MaximumAllowed,
		CreateDisposition: smb2.FileOpen, Name: `f:nostream`})
	wantStatus(t, err, smb2.StatusObjectNameNotFound)
}

func utf16(s string) []byte {
	b := make([]byte, 0, 2*len(s))
	for _, r := range s {
		b = append(b, byte(r), byte(r>>8))
	}
	return b
}

func TestCaseInsensitiveNames(t *testing.T) {
	d := infoDisk(t)
	infoOpen(t, d, "Dir", true, smb2.FileListDirectory)
	infoOpen(t, d, `Dir\File.TXT`, false, 0)
	o := infoOpen(t, d, `dIR\file.txt`, false, 0)
	if o.currentName() != "Dir/File.TXT" {
		t.Fatalf("name %q", o.currentName())
	}
	// A change of case only is a rename.
	wantStatus(t, o.rename(`Dir\FILE.txt`, 0, false), 0)
	if o.currentName() != "Dir/FILE.txt" {
		t.Fatalf("renamed to %q", o.currentName())
	}
	_, _, err := d.Create(&server.Request{}, &smb2.CreateRequest{ImpersonationLevel: 2, DesiredAccess: smb2.MaximumAllowed,
		CreateDisposition: smb2.FileCreate, Name: `DIR\file.TXT`})
	wantStatus(t, err, smb2.StatusObjectNameCollision)
}

func TestStoredSecurityDescriptor(t *testing.T) {
	d := infoDisk(t)
	f := infoOpen(t, d, "f", false, 0)
	resp, _ := querySD(f, 7, 4096)
	var sd fscc.SecurityDescriptor
	if err := sd.Decode(infoBuf(resp)); err != nil {
		t.Fatal(err)
	}
	sd.DACL.ACEs = sd.DACL.ACEs[:1]
	set := &smb2.SetInfoRequest{InfoType: smb2.InfoSecurity, AdditionalInformation: fscc.DACLSecurityInformation, Buffer: sd.Bytes()}
	wantStatus(t, f.SetInfo(&server.Request{}, set), 0)
	resp, _ = querySD(f, 7, 4096)
	var got fscc.SecurityDescriptor
	if err := got.Decode(infoBuf(resp)); err != nil || got.DACL == nil || len(got.DACL.ACEs) != 1 || got.Owner == nil {
		t.Fatalf("stored descriptor %+v, %v", got, err)
	}
}

func TestExtendedAttributes(t *testing.T) {
	d := infoDisk(t)
	f := infoOpen(t, d, "f", false, 0)
	_, err := queryFile(t, f, fscc.FileFullEaInformation, 4096)
	wantStatus(t, err, smb2.StatusNoEasOnFile)
	l := fscc.FullEaInformation{{Name: "eaone", Value: []byte("VALUE1")}, {Name: "SECONDEA", Value: []byte("ValueTwo")}}
	b := make([]byte, l.Size())
	l.Encode(b)
	wantStatus(t, f.SetInfo(&server.Request{}, &smb2.SetInfoRequest{InfoType: smb2.InfoFile, FileInfoClass: fscc.FileFullEaInformation, Buffer: b}), 0)
	out, err := queryFile(t, f, fscc.FileFullEaInformation, 4096)
	wantStatus(t, err, 0)
	var got fscc.FullEaInformation
	if err := got.Decode(out); err != nil || len(got) != 2 || got[0].Name != "EAONE" || string(got[1].Value) != "ValueTwo" {
		t.Fatalf("EAs %+v, %v", got, err)
	}
	_, err = queryFile(t, f, fscc.FileFullEaInformation, 20)
	wantStatus(t, err, smb2.StatusBufferOverflow)
	_, err = queryFile(t, f, fscc.FileFullEaInformation, 4)
	wantStatus(t, err, smb2.StatusBufferTooSmall)
}

func TestShortNamesAgree(t *testing.T) {
	for _, n := range []string{"torture_search.txt", "a.b.c", "x", "FILE.TXT"} {
		s, ds := shortName(n), dirShortName(n)
		if ds != "" && ds != s {
			t.Errorf("%q: directory %q, alternate %q", n, ds, s)
		}
		if (ds == "") != is83(n) {
			t.Errorf("%q: directory short name %q", n, ds)
		}
	}
}

// FuzzCreateName drives CREATE with arbitrary names, streams and SecD/ExtA
// contexts: no panics, and an open's file exists.
func FuzzCreateName(f *testing.F) {
	f.Add("f:s:$DATA", uint32(smb2.FileOpenIf), []byte{}, []byte{})
	f.Add(`D\F::$DATA`, uint32(smb2.FileCreate), []byte{1, 0, 4, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, []byte{})
	f.Add("f", uint32(smb2.FileOverwriteIf), []byte{}, []byte{0, 0, 0, 0, 0, 1, 1, 0, 'A', 0, 'v'})
	f.Fuzz(func(t *testing.T, name string, disp uint32, secd, exta []byte) {
		d := infoDisk(t)
		infoOpen(t, d, "F", false, 0)
		req := &smb2.CreateRequest{ImpersonationLevel: 2, DesiredAccess: smb2.MaximumAllowed,
			CreateDisposition: disp % 6, Name: name, Contexts: []smb2.CreateContext{
				{Name: smb2.CreateCtxSecurityDescriptor, Data: secd}, {Name: smb2.CreateCtxEABuffer, Data: exta}}}
		h, _, err := d.Create(&server.Request{}, req)
		if err != nil {
			return
		}
		o := h.(*open)
		defer o.Close(false)
		if _, err := d.fs.Stat(o.currentName()); err != nil {
			t.Fatalf("open's file %q: %v", o.currentName(), err)
		}
		queryFile(t, o, fscc.FileStreamInformation, 4096)
		queryFile(t, o, fscc.FileFullEaInformation, 4096)
	})
}

// writeOpen writes req.Data through o as the engine does for a
// server.FileWriter, and returns the count written.
func writeOpen(o *open, req *smb2.WriteRequest) (int, error) {
	req.Length = uint32(len(req.Data))
	wr, err := o.WriteRange(&server.Request{}, req)
	if err != nil || wr.N == 0 {
		return 0, err
	}
	n, err := wr.File.WriteAt(req.Data, wr.Off)
	if err != nil {
		return n, err
	}
	return n, o.WriteDone(req, wr.Off, n)
}
