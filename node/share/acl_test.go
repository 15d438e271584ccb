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
