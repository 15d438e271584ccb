package share

import (
	"encoding/binary"
	"errors"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
	"github.com/smbcluster/smbcluster/node/vfs"
)

// Security information bits that need READ_CONTROL to query and WRITE_DAC
// (or WRITE_OWNER for owner and group) to set ([MS-DTYP] 2.4.7).
const (
	secOwnerGroup = fscc.OwnerSecurityInformation | fscc.GroupSecurityInformation
	secReadable   = secOwnerGroup | fscc.DACLSecurityInformation | fscc.LabelSecurityInformation |
		fscc.AttributeSecurityInformation | fscc.ScopeSecurityInformation | fscc.BackupSecurityInformation
)

// The vfs reports no POSIX owner or mode, so a file without a stored
// descriptor is described as owned by the user who opened it (access.go),
// group gid 0, with mode 0755 (directories) or 0644 (files).
// FILE_ATTRIBUTE_READONLY leaves the descriptor alone, as on Windows
// (smbtorture smb2.winattr: the ACL is the same whatever the attributes).
const (
	defaultDirMode  = 0o755
	defaultFileMode = 0o644
)

// securityDescriptor is the default descriptor of a file owned by owner
// (uid 0 when owner is the zero SID).
func securityDescriptor(fi vfs.FileInfo, owner fscc.SID) fscc.SecurityDescriptor {
	if owner.Revision == 0 {
		owner = fscc.UnixUserSID(0)
	}
	mode := uint32(defaultFileMode)
	if fi.IsDir {
		mode = defaultDirMode
	}
	return fscc.DefaultSD(owner, fscc.UnixGroupSID(0), mode, fi.IsDir)
}

// querySecurity serves InfoType SMB2_0_INFO_SECURITY ([MS-SMB2]
// 3.3.5.20.3): a self-relative descriptor with the parts
// AdditionalInformation asks for. A buffer too small for it fails with
// STATUS_BUFFER_TOO_SMALL and the 4-byte size needed as ErrorData, as
// Windows answers.
func (o *open) querySecurity(req *smb2.QueryInfoRequest) (server.Response, error) {
	si := req.AdditionalInformation
	if si&secReadable != 0 && o.access&smb2.ReadControl == 0 {
		return nil, smb2.StatusAccessDenied
	}
	if si&fscc.SACLSecurityInformation != 0 && o.access&smb2.AccessSystemSecurity == 0 {
		return nil, smb2.StatusAccessDenied
	}
	fi, err := o.f.Stat()
	if err != nil {
		return nil, err
	}
	sd := o.fileSD(fi)
	b := sd.EncodeFiltered(si)
	if uint64(len(b)) > uint64(req.OutputBufferLength) {
		need := make([]byte, 4)
		binary.LittleEndian.PutUint32(need, uint32(len(b)))
		return &smb2.ErrorResponse{Data: need}, smb2.StatusBufferTooSmall
	}
	return &smb2.QueryInfoResponse{Buffer: b}, nil
}

// fileSD is the open's file descriptor: the stored one when the backend
// keeps one (vfs.SecurityFile) and it decodes, else the default.
func (o *open) fileSD(fi vfs.FileInfo) fscc.SecurityDescriptor {
	if sf, ok := o.f.(vfs.SecurityFile); ok {
		if b, err := sf.Security(); err == nil && b != nil {
			var sd fscc.SecurityDescriptor
			if sd.Decode(b) == nil {
				return sd
			}
		}
	}
	return securityDescriptor(fi, o.owner)
}

// setSecurity serves SET_INFO with InfoType SMB2_0_INFO_SECURITY
// ([MS-SMB2] 3.3.5.21.3). The descriptor is checked, the access needed for
// each part enforced, and the parts AdditionalInformation names replace
// those of the file's descriptor, which the backend stores. Opens made
// after it are checked against it (access.go); this one keeps its access.
func (o *open) setSecurity(t *token, req *smb2.SetInfoRequest) error {
	si := req.AdditionalInformation
	if si&secOwnerGroup != 0 && o.access&smb2.WriteOwner == 0 {
		return smb2.StatusAccessDenied
	}
	if si&fscc.DACLSecurityInformation != 0 && o.access&smb2.WriteDAC == 0 {
		return smb2.StatusAccessDenied
	}
	if si&fscc.SACLSecurityInformation != 0 && o.access&(smb2.AccessSystemSecurity|smb2.WriteDAC) != smb2.AccessSystemSecurity|smb2.WriteDAC {
		return smb2.StatusAccessDenied // a SACL needs WRITE_DAC too, as Windows checks
	}
	var sd fscc.SecurityDescriptor
	if err := sd.Decode(req.Buffer); err != nil {
		return smb2.StatusInvalidSecurityDescr
	}
	if si&fscc.OwnerSecurityInformation != 0 && sd.Owner == nil {
		return smb2.StatusInvalidOwner
	}
	sf, ok := o.f.(vfs.SecurityFile)
	if !ok {
		return nil // nothing is stored: the default descriptor stays
	}
	fi, err := o.f.Stat()
	if err != nil {
		return err
	}
	cur := o.fileSD(fi)
	if si&fscc.OwnerSecurityInformation != 0 && !mayOwn(t, &cur, sd.Owner) {
		return smb2.StatusInvalidOwner
	}
	mergeSD(&cur, &sd, si)
	return storeSD(sf, &cur)
}

// mayOwn reports whether the user of token t may make owner the owner of
// a file whose descriptor is cur: itself or a group of its token, or the
// owner the file has already. Another SID would need a privilege
// (SeRestorePrivilege, SeTakeOwnershipPrivilege) that no user has here;
// Windows refuses a user without it with STATUS_INVALID_OWNER ([MS-DTYP]
// 2.5.3.4.1 checks the owner against the token). smbtorture
// smb2.acls.SDFLAGSVSCHOWN gives a file to Everyone and back.
func mayOwn(t *token, cur *fscc.SecurityDescriptor, owner *fscc.SID) bool {
	return t.has(*owner) || cur.Owner != nil && owner.Equal(*cur.Owner)
}

// storeSD stores sd; a backend that cannot store is not an error.
func storeSD(sf vfs.SecurityFile, sd *fscc.SecurityDescriptor) error {
	if err := sf.SetSecurity(sd.Bytes()); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return err
	}
	return nil
}

// Control bits that belong to the DACL and the SACL ([MS-DTYP] 2.4.6).
const (
	daclControl = fscc.SEDACLPresent | fscc.SEDACLDefaulted | fscc.SEDACLAutoInheritReq |
		fscc.SEDACLAutoInherited | fscc.SEDACLProtected | fscc.SEDACLTrusted
	saclControl = fscc.SESACLPresent | fscc.SESACLDefaulted | fscc.SESACLAutoInheritReq |
		fscc.SESACLAutoInherited | fscc.SESACLProtected
)

// mergeSD replaces the parts of cur that si names with those of sd.
func mergeSD(cur, sd *fscc.SecurityDescriptor, si uint32) {
	if si&fscc.OwnerSecurityInformation != 0 {
		cur.Owner = sd.Owner
		cur.Control = cur.Control&^fscc.SEOwnerDefaulted | sd.Control&fscc.SEOwnerDefaulted
	}
	if si&fscc.GroupSecurityInformation != 0 && sd.Group != nil {
		cur.Group = sd.Group
		cur.Control = cur.Control&^fscc.SEGroupDefaulted | sd.Control&fscc.SEGroupDefaulted
	}
	if si&fscc.DACLSecurityInformation != 0 {
		// A DACL that is absent or not marked present is the NULL DACL
		// (everyone has every access), which is still "present".
		cur.DACL = mapACLGeneric(sd.DACL)
		if sd.Control&fscc.SEDACLPresent == 0 {
			cur.DACL = nil
		}
		// SE_DACL_AUTO_INHERIT_REQ asks for auto-inheritance and is never
		// stored; SE_DACL_AUTO_INHERITED is kept only with it, as Windows
		// keeps them (smbtorture smb2.acls.INHERITFLAGS).
		ctl := sd.Control & daclControl &^ fscc.SEDACLAutoInheritReq
		if sd.Control&fscc.SEDACLAutoInheritReq == 0 {
			ctl &^= fscc.SEDACLAutoInherited
		}
		cur.Control = cur.Control&^daclControl | ctl | fscc.SEDACLPresent
	}
	if si&fscc.SACLSecurityInformation != 0 {
		cur.SACL = mapACLGeneric(sd.SACL)
		cur.Control = cur.Control&^saclControl | sd.Control&saclControl
	}
}

// mapACLGeneric maps the generic rights of every ACE of acl to the file
// rights they stand for, as Windows stores a DACL or SACL that is set
// (the file GenericMapping, [MS-DTYP] 2.5.3.2 and 2.5.3.4.1; smbtorture
// smb2.acls.GENERIC and CREATOR read them back mapped).
func mapACLGeneric(acl *fscc.ACL) *fscc.ACL {
	if acl == nil {
		return nil
	}
	for i := range acl.ACEs {
		acl.ACEs[i].Mask = mapFileGeneric(acl.ACEs[i].Mask)
	}
	return acl
}

// applySecD stores the descriptor of an SMB2_CREATE_SD_BUFFER create
// context ("SecD", [MS-SMB2] 2.2.13.2.1) on a file the CREATE made: its
// parts replace those of the default descriptor.
func (o *open) applySecD(req *smb2.CreateRequest) error {
	k := req.Known()
	if !k.Present(smb2.CtxSecurityDescriptor) {
		return nil
	}
	var sd fscc.SecurityDescriptor
	if err := sd.Decode(k.SecurityDescriptor); err != nil {
		return smb2.StatusInvalidSecurityDescr
	}
	sf, ok := o.f.(vfs.SecurityFile)
	if !ok {
		return nil
	}
	fi, err := o.f.Stat()
	if err != nil {
		return err
	}
	cur := o.fileSD(fi) // the inherited descriptor, or the default
	si := uint32(fscc.DACLSecurityInformation)
	if sd.Owner != nil {
		si |= fscc.OwnerSecurityInformation
	}
	if sd.Group != nil {
		si |= fscc.GroupSecurityInformation
	}
	if sd.SACL != nil {
		si |= fscc.SACLSecurityInformation
	}
	if sd.DACL == nil && sd.Control&fscc.SEDACLPresent == 0 {
		si &^= fscc.DACLSecurityInformation // no DACL given: keep the default
	}
	mergeSD(&cur, &sd, si)
	return storeSD(sf, &cur)
}
