package share

import (
	"encoding/binary"
	"testing"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
)

func querySD(o *open, secinfo, max uint32) (server.Response, error) {
	return o.QueryInfo(&server.Request{}, &smb2.QueryInfoRequest{InfoType: smb2.InfoSecurity, AdditionalInformation: secinfo, OutputBufferLength: max})
}

func TestQuerySecurity(t *testing.T) {
	d := infoDisk(t)
	dir := infoOpen(t, d, "d", true, 0)
	resp, err := querySD(dir, 7, 4096)
	wantStatus(t, err, 0)
	var sd fscc.SecurityDescriptor
	if err := sd.Decode(infoBuf(resp)); err != nil {
		t.Fatal(err)
	}
	// A file without a stored descriptor is owned by whoever opened it.
	if sd.Owner == nil || !sd.Owner.Equal(UserSID("")) || sd.Group == nil || !sd.Group.Equal(fscc.UnixGroupSID(0)) ||
		sd.DACL == nil || len(sd.DACL.ACEs) != 3 || sd.Control&fscc.SESelfRelative == 0 {
		t.Fatalf("descriptor %+v", sd)
	}
	if ace := sd.DACL.ACEs[0]; ace.Mask != fscc.FileAllAccess || ace.Flags&fscc.ContainerInheritACE == 0 {
		t.Fatalf("owner ACE %+v", ace)
	}

	// Only the owner.
	resp, err = querySD(dir, fscc.OwnerSecurityInformation, 4096)
	wantStatus(t, err, 0)
	sd.Decode(infoBuf(resp))
	if sd.Owner == nil || sd.Group != nil || sd.DACL != nil {
		t.Fatalf("owner only: %+v", sd)
	}

	// Too small: STATUS_BUFFER_TOO_SMALL with the size needed
	// (smbtorture smb2.getinfo.qsec_buffercheck).
	full, _ := querySD(dir, 7, 4096)
	for _, max := range []uint32{0, 1, uint32(len(infoBuf(full)) - 1)} {
		resp, err := querySD(dir, 7, max)
		wantStatus(t, err, smb2.StatusBufferTooSmall)
		er, ok := resp.(*smb2.ErrorResponse)
		if !ok || len(er.Data) != 4 || binary.LittleEndian.Uint32(er.Data) != uint32(len(infoBuf(full))) {
			t.Fatalf("max %d: %#v", max, resp)
		}
	}
	resp, err = querySD(dir, 0, 0)
	wantStatus(t, err, smb2.StatusBufferTooSmall)

	f := infoOpen(t, d, "f", false, 0)
	resp, _ = querySD(f, 7, 4096)
	sd.Decode(infoBuf(resp))
	if sd.DACL.ACEs[0].Flags != 0 || sd.DACL.ACEs[2].Mask != fscc.FileGenericRead {
		t.Fatalf("file DACL %+v", sd.DACL)
	}

	noRC := infoOpen(t, d, "f", false, smb2.FileReadAttributes)
	_, err = querySD(noRC, fscc.DACLSecurityInformation, 4096)
	wantStatus(t, err, smb2.StatusAccessDenied)
	_, err = querySD(f, fscc.SACLSecurityInformation, 4096)
	wantStatus(t, err, smb2.StatusAccessDenied)
}

func TestSetSecurity(t *testing.T) {
	d := infoDisk(t)
	f := infoOpen(t, d, "f", false, 0)
	fi, _ := f.f.Stat()
	sd := securityDescriptor(fi, f.owner)
	set := func(o *open, si uint32, b []byte) error {
		return o.SetInfo(&server.Request{}, &smb2.SetInfoRequest{InfoType: smb2.InfoSecurity, AdditionalInformation: si, Buffer: b})
	}
	wantStatus(t, set(f, 7, sd.Bytes()), 0)
	// Another user as owner: no privilege allows it (STATUS_INVALID_OWNER,
	// as Windows answers a user without SeRestorePrivilege); the owner
	// the file has already may be set again.
	other := securityDescriptor(fi, UserSID("mallory"))
	wantStatus(t, set(f, fscc.OwnerSecurityInformation, other.Bytes()), smb2.StatusInvalidOwner)
	wantStatus(t, set(f, fscc.OwnerSecurityInformation, sd.Bytes()), 0)
	wantStatus(t, set(f, 7, []byte{1, 2, 3}), smb2.StatusInvalidSecurityDescr)
	noOwner := sd.Filter(fscc.DACLSecurityInformation)
	wantStatus(t, set(f, fscc.OwnerSecurityInformation, noOwner.Bytes()), smb2.StatusInvalidOwner)
	ro := infoOpen(t, d, "f", false, smb2.FileReadData|smb2.ReadControl)
	wantStatus(t, set(ro, fscc.DACLSecurityInformation, sd.Bytes()), smb2.StatusAccessDenied)
}
