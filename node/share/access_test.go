package share

import (
	"encoding/binary"
	"testing"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
)

var (
	alice = &server.Session{User: "alice"}
	bob   = &server.Session{User: "bob"}
)

// userCreate runs a CREATE as s and returns the open or the error.
func userCreate(d *Disk, s *server.Session, name string, disp, access, opts uint32, ctxs ...smb2.CreateContext) (*open, *smb2.CreateResponse, error) {
	req := &smb2.CreateRequest{
		ImpersonationLevel: 2, DesiredAccess: access, ShareAccess: 7,
		CreateDisposition: disp, CreateOptions: opts, Name: name, Contexts: ctxs,
	}
	h, resp, err := d.Create(&server.Request{Session: s}, req)
	if err != nil {
		return nil, nil, err
	}
	return h.(*open), resp, nil
}

func mustCreate(t *testing.T, d *Disk, s *server.Session, name string, disp, access, opts uint32, ctxs ...smb2.CreateContext) (*open, *smb2.CreateResponse) {
	t.Helper()
	o, resp, err := userCreate(d, s, name, disp, access, opts, ctxs...)
	if err != nil {
		t.Fatalf("create %q: %v", name, err)
	}
	t.Cleanup(func() { o.Close(false) })
	return o, resp
}

func ace(typ uint8, flags uint8, mask uint32, sid fscc.SID) fscc.ACE {
	return fscc.ACE{Type: typ, Flags: flags, Mask: mask, SID: sid}
}

// setDACL stores a DACL (nil with present false: no DACL) through SET_INFO.
func setDACL(t *testing.T, o *open, present bool, aces ...fscc.ACE) {
	t.Helper()
	sd := fscc.SecurityDescriptor{Control: fscc.SESelfRelative}
	if present {
		sd.Control |= fscc.SEDACLPresent
		if aces != nil {
			sd.DACL = &fscc.ACL{Revision: fscc.ACLRevision, ACEs: aces}
		}
	}
	err := o.SetInfo(&server.Request{}, &smb2.SetInfoRequest{InfoType: smb2.InfoSecurity, AdditionalInformation: fscc.DACLSecurityInformation, Buffer: sd.Bytes()})
	wantStatus(t, err, 0)
}

func TestUserSID(t *testing.T) {
	a, b := UserSID("alice"), UserSID("bob")
	if !a.Equal(UserSID("ALICE")) || a.Equal(b) {
		t.Fatalf("alice %v, ALICE %v, bob %v", a, UserSID("ALICE"), b)
	}
	if s := a.String(); s[:len("S-1-5-21-2843017236-1931480297-3419566741-")] != "S-1-5-21-2843017236-1931480297-3419566741-" {
		t.Fatalf("alice's SID %s is outside the node domain", s)
	}
	if rid := a.SubAuthorities[4]; rid < 1000 {
		t.Fatalf("rid %d < 1000", rid)
	}
}

// TestGrantedBy follows [MS-DTYP] 2.5.3.2: NULL DACL, empty DACL and the
// owner's implicit rights, deny before allow, inherit-only ACEs, CREATOR
// OWNER and OWNER RIGHTS.
func TestGrantedBy(t *testing.T) {
	tok := tokenOf(alice)
	me, other := UserSID("alice"), UserSID("bob")
	sd := func(owner fscc.SID, aces ...fscc.ACE) *fscc.SecurityDescriptor {
		return &fscc.SecurityDescriptor{Owner: &owner, DACL: &fscc.ACL{Revision: 2, ACEs: aces}}
	}
	const allow, deny = fscc.AccessAllowedACEType, fscc.AccessDeniedACEType
	for _, c := range []struct {
		name string
		sd   *fscc.SecurityDescriptor
		want uint32
	}{
		{"null DACL", &fscc.SecurityDescriptor{Owner: &other}, fscc.FileAllAccess},
		{"empty DACL, owner", sd(me), fscc.ReadControl | fscc.WriteDAC},
		{"empty DACL, not owner", sd(other), 0},
		{"allow user", sd(other, ace(allow, 0, fscc.FileGenericRead, me)), fscc.FileGenericRead},
		{"allow Everyone, generic mapped", sd(other, ace(allow, 0, smb2.GenericWrite, fscc.SIDEveryone)), fscc.FileGenericWrite},
		{"deny first", sd(other, ace(deny, 0, fscc.FileWriteData, me), ace(allow, 0, fscc.FileAllAccess, me)), fscc.FileAllAccess &^ fscc.FileWriteData},
		{"allow first", sd(other, ace(allow, 0, fscc.FileAllAccess, me), ace(deny, 0, fscc.FileWriteData, me)), fscc.FileAllAccess},
		{"inherit only", sd(other, ace(allow, fscc.InheritOnlyACE|fscc.ObjectInheritACE, fscc.FileAllAccess, me)), 0},
		{"creator owner matches nobody", sd(me, ace(allow, 0, fscc.FileAllAccess, fscc.SIDCreatorOwner)), fscc.ReadControl | fscc.WriteDAC},
		{"other user", sd(other, ace(allow, 0, fscc.FileAllAccess, other)), 0},
		{"owner rights", sd(me, ace(allow, 0, fscc.FileReadData, SIDOwnerRights)), fscc.FileReadData},
	} {
		if got := grantedBy(c.sd, tok); got != c.want {
			t.Errorf("%s: granted %#x, want %#x", c.name, got, c.want)
		}
	}
	anon := tokenOf(&server.Session{Anonymous: true})
	if anon.has(fscc.SIDAuthenticatedUsers) || !anon.has(fscc.SIDAnonymous) {
		t.Fatalf("anonymous token %v", anon.sids)
	}
}

// TestDACLEnforced: once a descriptor is stored, opens get what its DACL
// grants; the owner keeps READ_CONTROL and WRITE_DAC; DELETE comes from
// the parent's FILE_DELETE_CHILD (smbtorture smb2.create.nulldacl,
// smb2.compound.related4).
func TestDACLEnforced(t *testing.T) {
	d := infoDisk(t)
	h, _ := mustCreate(t, d, alice, "f", smb2.FileCreate, smb2.ReadControl|smb2.WriteDAC, 0)
	me := UserSID("alice")
	setDACL(t, h, true, ace(fscc.AccessAllowedACEType, 0, fscc.FileGenericRead, me))

	_, _, err := userCreate(d, alice, "f", smb2.FileOpen, smb2.FileWriteData, 0)
	wantStatus(t, err, smb2.StatusAccessDenied)
	r, _ := mustCreate(t, d, alice, "f", smb2.FileOpen, smb2.GenericRead, 0)
	if r.access != fscc.FileGenericRead {
		t.Fatalf("GENERIC_READ open has access %#x", r.access)
	}
	m, _ := mustCreate(t, d, alice, "f", smb2.FileOpen, smb2.MaximumAllowed, 0)
	if want := fscc.FileGenericRead | fscc.WriteDAC | fscc.Delete; m.access != want {
		t.Fatalf("MAXIMUM_ALLOWED open has access %#x, want %#x", m.access, want)
	}
	_, _, err = userCreate(d, bob, "f", smb2.FileOpen, smb2.FileReadData, 0)
	wantStatus(t, err, smb2.StatusAccessDenied)
	mustCreate(t, d, bob, "f", smb2.FileOpen, smb2.Delete, 0) // the share root grants FILE_DELETE_CHILD

	// An empty DACL leaves the owner READ_CONTROL and WRITE_DAC only.
	setDACL(t, h, true, []fscc.ACE{}...)
	mustCreate(t, d, alice, "f", smb2.FileOpen, smb2.ReadControl, 0)
	_, _, err = userCreate(d, alice, "f", smb2.FileOpen, smb2.FileReadData, 0)
	wantStatus(t, err, smb2.StatusAccessDenied)

	// No DACL (present or not) is the NULL DACL: everything, and it is
	// reported present.
	setDACL(t, h, false)
	w, _ := mustCreate(t, d, bob, "f", smb2.FileOpen, smb2.GenericWrite, 0)
	if w.access != fscc.FileGenericWrite {
		t.Fatalf("GENERIC_WRITE open has access %#x", w.access)
	}
	resp, err := querySD(h, fscc.DACLSecurityInformation, 4096)
	wantStatus(t, err, 0)
	var sd fscc.SecurityDescriptor
	if err := sd.Decode(infoBuf(resp)); err != nil || sd.DACL != nil || sd.Control&fscc.SEDACLPresent == 0 {
		t.Fatalf("NULL DACL reads back as %+v (%v)", sd, err)
	}
}

// TestInheritance: a directory's inheritable ACEs go to the files made in
// it; without FILE_DELETE_CHILD on the directory an existing file with an
// inherited DACL lacking DELETE cannot be opened for delete
// (smbtorture smb2.delete-on-close-perms "CREATE_IF Existing").
func TestInheritance(t *testing.T) {
	d := infoDisk(t)
	dir, _ := mustCreate(t, d, alice, "d", smb2.FileCreate, smb2.ReadControl|smb2.WriteDAC, smb2.FileDirectoryFile)
	me := UserSID("alice")
	const noDelete = 0x1e01bf
	setDACL(t, dir, true, ace(fscc.AccessAllowedACEType, fscc.ObjectInheritACE, noDelete, me))

	_, _, err := userCreate(d, bob, `d\x`, smb2.FileCreate, smb2.FileReadData, 0)
	wantStatus(t, err, smb2.StatusAccessDenied) // no FILE_ADD_FILE for bob
	if _, err := d.fs.Stat("d/x"); err == nil {
		t.Fatal("a refused new file was left behind")
	}
	// The creator gets what it asks for, DELETE included.
	f, _ := mustCreate(t, d, alice, `d\f`, smb2.FileCreate, noDelete|smb2.Delete, smb2.FileNonDirectoryFile)
	resp, err := querySD(f, fscc.OwnerSecurityInformation|fscc.DACLSecurityInformation, 4096)
	wantStatus(t, err, 0)
	var sd fscc.SecurityDescriptor
	if err := sd.Decode(infoBuf(resp)); err != nil {
		t.Fatal(err)
	}
	if sd.Owner == nil || !sd.Owner.Equal(me) || sd.DACL == nil || len(sd.DACL.ACEs) != 1 ||
		sd.DACL.ACEs[0].Flags != 0 || sd.DACL.ACEs[0].Mask != noDelete { // INHERITED_ACE only with auto-inheritance
		t.Fatalf("inherited descriptor %+v", sd)
	}
	f.Close(false)
	_, _, err = userCreate(d, alice, `d\f`, smb2.FileOpenIf, noDelete|smb2.Delete, smb2.FileDeleteOnClose)
	wantStatus(t, err, smb2.StatusAccessDenied)
	setDACL(t, dir, true, ace(fscc.AccessAllowedACEType, 0, noDelete|fscc.FileDeleteChild, me))
	mustCreate(t, d, alice, `d\f`, smb2.FileOpen, smb2.Delete, 0)
}

func TestInheritedACLForDirectory(t *testing.T) {
	owner, group := UserSID("alice"), fscc.UnixGroupSID(0)
	parent := &fscc.ACL{Revision: 2, ACEs: []fscc.ACE{
		ace(fscc.AccessAllowedACEType, fscc.ObjectInheritACE|fscc.ContainerInheritACE, smb2.GenericAll, fscc.SIDCreatorOwner),
		ace(fscc.AccessAllowedACEType, fscc.ContainerInheritACE, fscc.FileGenericRead, fscc.SIDEveryone),
		ace(fscc.AccessAllowedACEType, fscc.ObjectInheritACE, fscc.FileGenericRead, fscc.SIDUsers),
		ace(fscc.AccessAllowedACEType, fscc.ContainerInheritACE|fscc.NoPropagateInheritACE, fscc.FileGenericWrite, fscc.SIDUsers),
		ace(fscc.AccessAllowedACEType, 0, fscc.FileAllAccess, fscc.SIDSystem), // not inheritable
	}}
	got := inheritedACL(parent, true, owner, group, true)
	want := []fscc.ACE{
		ace(fscc.AccessAllowedACEType, fscc.InheritedACE, fscc.FileAllAccess, owner),
		ace(fscc.AccessAllowedACEType, fscc.ObjectInheritACE|fscc.ContainerInheritACE|fscc.InheritOnlyACE|fscc.InheritedACE, smb2.GenericAll, fscc.SIDCreatorOwner),
		ace(fscc.AccessAllowedACEType, fscc.ContainerInheritACE|fscc.InheritedACE, fscc.FileGenericRead, fscc.SIDEveryone),
		ace(fscc.AccessAllowedACEType, fscc.ObjectInheritACE|fscc.InheritOnlyACE|fscc.InheritedACE, fscc.FileGenericRead, fscc.SIDUsers),
		ace(fscc.AccessAllowedACEType, fscc.InheritedACE, fscc.FileGenericWrite, fscc.SIDUsers),
	}
	if len(got.ACEs) != len(want) {
		t.Fatalf("got %d ACEs %+v, want %d", len(got.ACEs), got.ACEs, len(want))
	}
	for i := range want {
		g, w := got.ACEs[i], want[i]
		if g.Type != w.Type || g.Flags != w.Flags || g.Mask != w.Mask || !g.SID.Equal(w.SID) {
			t.Errorf("ACE %d = %+v, want %+v", i, g, w)
		}
	}
	files := inheritedACL(parent, false, owner, group, true)
	if len(files.ACEs) != 2 || !files.ACEs[0].SID.Equal(owner) || files.ACEs[0].Mask != fscc.FileAllAccess ||
		files.ACEs[0].Flags != fscc.InheritedACE || !files.ACEs[1].SID.Equal(fscc.SIDUsers) {
		t.Fatalf("file ACEs %+v", files.ACEs)
	}
}

// TestCreateChecks: a leading backslash is STATUS_INVALID_PARAMETER
// (smb2.create.leading-slash), as are context names under 4 bytes; a
// timewarp token finds no snapshot (smb2.create.blob); a new read-only
// file with delete-on-close is refused and not left behind
// (smb2.delete-on-close-perms.READONLY).
func TestCreateChecks(t *testing.T) {
	d := infoDisk(t)
	_, _, err := userCreate(d, alice, `\x`, smb2.FileOpenIf, smb2.FileReadData, 0)
	wantStatus(t, err, smb2.StatusInvalidParameter)
	_, _, err = userCreate(d, alice, "x", smb2.FileOpenIf, smb2.FileReadData, 0, smb2.CreateContext{Name: "xyz"})
	wantStatus(t, err, smb2.StatusInvalidParameter)
	mustCreate(t, d, alice, "x", smb2.FileOpenIf, smb2.FileReadData, 0, smb2.CreateContext{Name: "xxxxx"})
	_, _, err = userCreate(d, alice, "x", smb2.FileOpenIf, smb2.FileReadData, 0, smb2.CreateContext{Name: "TWrp", Data: make([]byte, 8)})
	wantStatus(t, err, smb2.StatusObjectNameNotFound)

	req := &smb2.CreateRequest{ImpersonationLevel: 2, DesiredAccess: fscc.FileAllAccess, ShareAccess: 7,
		CreateDisposition: smb2.FileCreate, CreateOptions: smb2.FileDeleteOnClose | smb2.FileNonDirectoryFile,
		FileAttributes: 1, Name: "ro"}
	_, _, err = d.Create(&server.Request{Session: alice}, req)
	wantStatus(t, err, smb2.StatusCannotDelete)
	req.CreateOptions = smb2.FileNonDirectoryFile
	h, _, err := d.Create(&server.Request{Session: alice}, req)
	wantStatus(t, err, 0)
	h.(*open).Close(false)
}

// TestAllocationSize: AlSi and FILE_ALLOCATION_INFORMATION are reported by
// the open that set them; directories report 0 (smb2.create.blob,
// smb2.create.open, smb2.setinfo).
func TestAllocationSize(t *testing.T) {
	d := infoDisk(t)
	alsi := smb2.CreateContext{Name: smb2.CreateCtxAllocationSize, Data: binary.LittleEndian.AppendUint64(nil, 1<<20)}
	o, resp := mustCreate(t, d, alice, "f", smb2.FileOverwriteIf, fscc.FileAllAccess, 0, alsi)
	if resp.AllocationSize != 1<<20 {
		t.Fatalf("create reports allocation %#x", resp.AllocationSize)
	}
	std := func() uint64 {
		t.Helper()
		resp, err := o.QueryInfo(&server.Request{}, &smb2.QueryInfoRequest{InfoType: smb2.InfoFile, FileInfoClass: fscc.FileStandardInformation, OutputBufferLength: 64})
		wantStatus(t, err, 0)
		var si fscc.StandardInformation
		if err := si.Decode(infoBuf(resp)); err != nil {
			t.Fatal(err)
		}
		return uint64(si.AllocationSize)
	}
	if got := std(); got != 1<<20 {
		t.Fatalf("query reports allocation %#x", got)
	}
	wantStatus(t, setFileInfo(o, fscc.FileAllocationInformation, &fscc.AllocationInformation{AllocationSize: 0}), 0)
	if got := std(); got != 0 {
		t.Fatalf("allocation after setting 0: %#x", got)
	}
	wantStatus(t, setFileInfo(o, fscc.FileAllocationInformation, &fscc.AllocationInformation{AllocationSize: 100}), 0)
	if got := std(); got != 4096 {
		t.Fatalf("allocation after setting 100: %#x", got)
	}
	// An open (not overwrite) ignores AlSi; a directory reports 0.
	_, resp = mustCreate(t, d, alice, "f", smb2.FileOpen, smb2.FileReadData, 0, alsi)
	if resp.AllocationSize != 0 {
		t.Fatalf("plain open reports allocation %#x", resp.AllocationSize)
	}
	_, resp = mustCreate(t, d, alice, "dir", smb2.FileCreate, fscc.FileAllAccess, smb2.FileDirectoryFile, alsi)
	if resp.AllocationSize != 0 {
		t.Fatalf("directory reports allocation %#x", resp.AllocationSize)
	}
}

// FuzzAccessCheck: any descriptor a client can store is checked and
// inherited without panicking; what a file inherits applies to it and is
// marked inherited, and a NULL DACL grants everything.
func FuzzAccessCheck(f *testing.F) {
	dacl := &fscc.ACL{Revision: 2, ACEs: []fscc.ACE{
		ace(fscc.AccessDeniedACEType, fscc.ObjectInheritACE, fscc.FileWriteData, fscc.SIDEveryone),
		ace(fscc.AccessAllowedACEType, fscc.ObjectInheritACE|fscc.ContainerInheritACE, smb2.GenericAll, fscc.SIDCreatorOwner),
	}}
	owner := UserSID("alice")
	f.Add((&fscc.SecurityDescriptor{Owner: &owner, DACL: dacl}).Bytes())
	f.Add((&fscc.SecurityDescriptor{Control: fscc.SEDACLPresent}).Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		var sd fscc.SecurityDescriptor
		if sd.Decode(b) != nil {
			return
		}
		g := grantedBy(&sd, tokenOf(alice))
		if sd.DACL == nil {
			if g != fscc.FileAllAccess {
				t.Fatalf("NULL DACL grants %#x", g)
			}
			return
		}
		for _, isDir := range []bool{false, true} {
			acl := inheritedACL(sd.DACL, isDir, owner, fscc.UnixGroupSID(0), true)
			for _, a := range acl.ACEs {
				if a.Flags&fscc.InheritedACE == 0 || !isDir && a.Flags&(fscc.ObjectInheritACE|fscc.ContainerInheritACE|fscc.InheritOnlyACE) != 0 {
					t.Fatalf("inherited ACE %+v (dir %v)", a, isDir)
				}
			}
			out := fscc.SecurityDescriptor{Owner: &owner, DACL: acl}
			var back fscc.SecurityDescriptor
			if err := back.Decode(out.Bytes()); err != nil && acl.Size() <= 0xffff {
				t.Fatalf("inherited descriptor does not decode: %v", err)
			}
		}
	})
}
