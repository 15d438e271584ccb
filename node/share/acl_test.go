package share

import (
	"errors"
	"testing"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
)

// standardRightsAll is STANDARD_RIGHTS_ALL ([MS-DTYP] 2.4.3).
const standardRightsAll = 0x001f0000

// mxac opens name as s asking for MxAc and returns the maximal access
// reported.
func mxac(t *testing.T, d *Disk, s *server.Session, name string) uint32 {
	t.Helper()
	_, resp := mustCreate(t, d, s, name, smb2.FileOpen, smb2.ReadControl, 0, smb2.CreateContext{Name: "MxAc"})
	for _, c := range resp.Contexts {
		if c.Name == "MxAc" {
			var mx smb2.MxAcResponse
			if err := mx.Decode(c.Data); err != nil {
				t.Fatal(err)
			}
			return mx.MaximalAccess
		}
	}
	t.Fatal("no MxAc in the response")
	return 0
}

// TestMaximalAccessFromDACL: the MxAc a CREATE reports is what the file's
// descriptor grants the user ([MS-SMB2] 3.3.5.9.5, [MS-DTYP] 2.5.3.2): the
// owner's implicit READ_CONTROL and WRITE_DAC unless OWNER RIGHTS ACEs
// replace them, OWNER RIGHTS ACEs adding to the owner's, a DENY counting
// only before the ALLOW it follows (smbtorture smb2.acls.OWNER-RIGHTS,
// OWNER-RIGHTS-DENY, OWNER-RIGHTS-DENY1, DENY1). DELETE comes from the
// share root's FILE_DELETE_CHILD.
func TestMaximalAccessFromDACL(t *testing.T) {
	const allow, deny = fscc.AccessAllowedACEType, fscc.AccessDeniedACEType
	me := UserSID("alice")
	readData, writeData := uint32(fscc.FileReadData), uint32(fscc.FileWriteData)
	for _, tc := range []struct {
		name string
		aces []fscc.ACE
		want uint32
	}{
		{"owner rights add to the owner's", []fscc.ACE{ace(allow, 0, fscc.FileGenericRead, me), ace(allow, 0, writeData, SIDOwnerRights)},
			fscc.FileGenericRead | writeData},
		{"owner rights deny first", []fscc.ACE{ace(deny, 0, readData, SIDOwnerRights), ace(allow, 0, fscc.FileGenericRead, me)},
			fscc.FileGenericRead &^ readData},
		{"owner rights deny last", []fscc.ACE{ace(allow, 0, fscc.FileGenericRead, me), ace(allow, 0, writeData, SIDOwnerRights), ace(deny, 0, writeData|readData, SIDOwnerRights)},
			fscc.FileGenericRead | writeData},
		{"deny after allow, implicit WRITE_DAC", []fscc.ACE{ace(allow, 0, fscc.FileGenericRead|writeData, me), ace(deny, 0, writeData, me)},
			fscc.FileGenericRead | writeData | fscc.WriteDAC},
		{"deny before allow", []fscc.ACE{ace(deny, 0, writeData, me), ace(allow, 0, fscc.FileGenericRead|writeData, me)},
			fscc.FileGenericRead | fscc.WriteDAC},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := infoDisk(t)
			o, _ := mustCreate(t, d, alice, "f", smb2.FileCreate, smb2.ReadControl|smb2.WriteDAC|smb2.WriteOwner, 0)
			setDACL(t, o, true, tc.aces...)
			if got := mxac(t, d, alice, "f") &^ fscc.Delete; got != tc.want {
				t.Errorf("MxAc %#x, want %#x", got, tc.want)
			}
		})
	}
}

// TestOverwriteNeedsWrite: overwriting or superseding an existing file
// needs the access to replace it besides the access asked for
// (FILE_WRITE_DATA, FILE_WRITE_EA, FILE_WRITE_ATTRIBUTES; DELETE for a
// supersede), so a DACL granting only FILE_READ_DATA allows the open and
// refuses the three dispositions (smbtorture
// smb2.acls.OVERWRITE_READ_ONLY_FILE); a DACL granting them allows them.
func TestOverwriteNeedsWrite(t *testing.T) {
	me := UserSID("alice")
	for _, tc := range []struct {
		name  string
		grant uint32
		want  map[uint32]smb2.Status
	}{
		{"read only", fscc.FileReadData, map[uint32]smb2.Status{
			smb2.FileOpen: 0, smb2.FileSupersede: smb2.StatusAccessDenied,
			smb2.FileOverwrite: smb2.StatusAccessDenied, smb2.FileOverwriteIf: smb2.StatusAccessDenied,
		}},
		{"write", fscc.FileReadData | fscc.FileWriteData | fscc.FileWriteEA | fscc.FileWriteAttributes, map[uint32]smb2.Status{
			smb2.FileOpen: 0, smb2.FileSupersede: 0, smb2.FileOverwrite: 0, smb2.FileOverwriteIf: 0,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := infoDisk(t)
			o, _ := mustCreate(t, d, alice, "f", smb2.FileCreate, smb2.ReadControl|smb2.WriteDAC, 0)
			setDACL(t, o, true, ace(fscc.AccessAllowedACEType, 0, tc.grant, me))
			for _, disp := range []uint32{smb2.FileOpen, smb2.FileSupersede, smb2.FileOverwrite, smb2.FileOverwriteIf} {
				h, _, err := userCreate(d, alice, "f", disp, smb2.FileReadData, 0)
				var got smb2.Status
				errors.As(err, &got)
				if got != tc.want[disp] {
					t.Errorf("disposition %d: %v, want %v", disp, got, tc.want[disp])
				}
				if h != nil {
					h.Close(false)
				}
			}
		})
	}
}

// TestSetSecurityMapsGeneric: the generic rights of a DACL set through
// SET_INFO are stored mapped to the file rights (smbtorture
// smb2.acls.GENERIC, CREATOR).
func TestSetSecurityMapsGeneric(t *testing.T) {
	d := infoDisk(t)
	o, _ := mustCreate(t, d, alice, "f", smb2.FileCreate, smb2.ReadControl|smb2.WriteDAC, 0)
	me := UserSID("alice")
	setDACL(t, o, true, ace(fscc.AccessAllowedACEType, 0, smb2.GenericRead|standardRightsAll, me),
		ace(fscc.AccessAllowedACEType, fscc.ObjectInheritACE|fscc.InheritOnlyACE, smb2.GenericAll, fscc.SIDCreatorOwner))
	resp, err := querySD(o, fscc.DACLSecurityInformation, 4096)
	wantStatus(t, err, 0)
	var sd fscc.SecurityDescriptor
	if err := sd.Decode(infoBuf(resp)); err != nil || sd.DACL == nil || len(sd.DACL.ACEs) != 2 {
		t.Fatalf("descriptor %+v, %v", sd, err)
	}
	if got, want := sd.DACL.ACEs[0].Mask, fscc.FileGenericRead|standardRightsAll; got != want {
		t.Errorf("GENERIC_READ|STANDARD_RIGHTS_ALL stored as %#x, want %#x", got, want)
	}
	if got := sd.DACL.ACEs[1].Mask; got != fscc.FileAllAccess {
		t.Errorf("GENERIC_ALL stored as %#x, want %#x", got, fscc.FileAllAccess)
	}
}

// TestInheritFlags is the table of [MS-DTYP] 2.5.3.4 for one parent ACE
// (CREATOR OWNER, FILE_WRITE_DATA, with each combination of the
// inheritance flags) next to an ACE that is not inheritable: what a new
// file and a new directory get, as smbtorture smb2.acls.INHERITANCE
// checks against Windows. CREATOR OWNER becomes the creator in the ACE
// that applies to the new object and stays in the copy a directory keeps
// for its children; no-propagate leaves nothing to propagate; an
// inherit-only parent ACE is inherited all the same. With
// auto-inheritance every inherited ACE carries INHERITED_ACE.
func TestInheritFlags(t *testing.T) {
	const (
		oi, ci, np, io = fscc.ObjectInheritACE, fscc.ContainerInheritACE, fscc.NoPropagateInheritACE, fscc.InheritOnlyACE
		wd             = fscc.FileWriteData
	)
	owner, group := UserSID("alice"), fscc.UnixGroupSID(0)
	co := fscc.SIDCreatorOwner
	type want struct {
		sid   fscc.SID
		flags uint8
	}
	for _, tc := range []struct {
		parent uint8
		file   []want // nil: nothing inherited
		dir    []want
	}{
		{0, nil, nil},
		{oi, []want{{owner, 0}}, []want{{co, oi | io}}},
		{ci, nil, []want{{owner, 0}, {co, ci | io}}},
		{oi | ci, []want{{owner, 0}}, []want{{owner, 0}, {co, oi | ci | io}}},
		{np, nil, nil},
		{np | oi, []want{{owner, 0}}, nil},
		{np | ci, nil, []want{{owner, 0}}},
		{np | ci | oi, []want{{owner, 0}}, []want{{owner, 0}}},
		{io, nil, nil},
		{io | oi, []want{{owner, 0}}, []want{{co, oi | io}}},
		{io | ci, nil, []want{{owner, 0}, {co, ci | io}}},
		{io | ci | oi, []want{{owner, 0}}, []want{{owner, 0}, {co, oi | ci | io}}},
		{io | np, nil, nil},
		{io | np | oi, []want{{owner, 0}}, nil},
		{io | np | ci, nil, []want{{owner, 0}}},
		{io | np | ci | oi, []want{{owner, 0}}, []want{{owner, 0}}},
	} {
		parent := &fscc.ACL{Revision: 2, ACEs: []fscc.ACE{
			ace(fscc.AccessAllowedACEType, tc.parent, wd, co),
			ace(fscc.AccessAllowedACEType, 0, fscc.FileAllAccess, fscc.SIDEveryone),
		}}
		for _, auto := range []bool{false, true} {
			for _, isDir := range []bool{false, true} {
				w := tc.file
				if isDir {
					w = tc.dir
				}
				got := inheritedACL(parent, isDir, owner, group, auto)
				ok := len(got.ACEs) == len(w)
				for i := 0; ok && i < len(w); i++ {
					flags := w[i].flags
					if auto {
						flags |= fscc.InheritedACE
					}
					g := got.ACEs[i]
					ok = g.Mask == wd && g.SID.Equal(w[i].sid) && g.Flags == flags
				}
				if !ok {
					t.Errorf("parent flags %#x, directory %v, auto %v: got %+v, want %+v", tc.parent, isDir, auto, got.ACEs, w)
				}
			}
		}
	}
}

// TestSetSecurityAutoInherit: SE_DACL_AUTO_INHERIT_REQ is never stored,
// SE_DACL_AUTO_INHERITED only when set with it; SE_DACL_PROTECTED is kept;
// a file made in a directory whose DACL is auto-inherited is too, and its
// ACEs carry INHERITED_ACE (smbtorture smb2.acls.INHERITFLAGS).
func TestSetSecurityAutoInherit(t *testing.T) {
	me := UserSID("alice")
	for _, tc := range []struct {
		set, stored uint16
	}{
		{fscc.SEDACLAutoInherited, 0},
		{fscc.SEDACLAutoInheritReq, 0},
		{fscc.SEDACLAutoInherited | fscc.SEDACLAutoInheritReq, fscc.SEDACLAutoInherited},
		{fscc.SEDACLProtected | fscc.SEDACLAutoInheritReq, fscc.SEDACLProtected},
	} {
		d := infoDisk(t)
		dir, _ := mustCreate(t, d, alice, "d", smb2.FileCreate, smb2.ReadControl|smb2.WriteDAC, smb2.FileDirectoryFile)
		sd := fscc.SecurityDescriptor{Control: fscc.SESelfRelative | fscc.SEDACLPresent | tc.set,
			DACL: &fscc.ACL{Revision: fscc.ACLRevision, ACEs: []fscc.ACE{ace(fscc.AccessAllowedACEType, fscc.ObjectInheritACE, fscc.FileAllAccess, me)}}}
		err := dir.SetInfo(&server.Request{}, &smb2.SetInfoRequest{InfoType: smb2.InfoSecurity, AdditionalInformation: fscc.DACLSecurityInformation, Buffer: sd.Bytes()})
		wantStatus(t, err, 0)
		got := readSD(t, dir)
		const bits = fscc.SEDACLAutoInherited | fscc.SEDACLAutoInheritReq | fscc.SEDACLProtected
		if got.Control&bits != tc.stored {
			t.Errorf("set %#x: stored %#x, want %#x", tc.set, got.Control&bits, tc.stored)
		}
		f, _ := mustCreate(t, d, alice, `d\f`, smb2.FileCreate, smb2.ReadControl, 0)
		child := readSD(t, f)
		auto := tc.stored&fscc.SEDACLAutoInherited != 0
		if child.DACL == nil || len(child.DACL.ACEs) != 1 ||
			(child.DACL.ACEs[0].Flags&fscc.InheritedACE != 0) != auto || (child.Control&fscc.SEDACLAutoInherited != 0) != auto {
			t.Errorf("set %#x: child %+v %+v", tc.set, child, child.DACL)
		}
	}
}

func readSD(t *testing.T, o *open) fscc.SecurityDescriptor {
	t.Helper()
	resp, err := querySD(o, fscc.OwnerSecurityInformation|fscc.DACLSecurityInformation, 4096)
	wantStatus(t, err, 0)
	var sd fscc.SecurityDescriptor
	if err := sd.Decode(infoBuf(resp)); err != nil {
		t.Fatal(err)
	}
	return sd
}
