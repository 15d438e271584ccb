package share

import (
	"encoding/binary"

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

// The vfs reports no POSIX owner or mode, so every file is described as
// owned by uid 0 and gid 0 with mode 0755 (directories) or 0644 (files),
// write bits removed for FILE_ATTRIBUTE_READONLY.
const (
	defaultDirMode  = 0o755
	defaultFileMode = 0o644
)

// securityDescriptor is the descriptor of a file: built from its POSIX
// identity, as no descriptors are stored.
func securityDescriptor(fi vfs.FileInfo) fscc.SecurityDescriptor {
	mode := uint32(defaultFileMode)
	if fi.IsDir {
		mode = defaultDirMode
	}
	if fi.Attributes&vfs.AttrReadOnly != 0 {
		mode &^= 0o222
	}
	return fscc.DefaultSD(fscc.UnixUserSID(0), fscc.UnixGroupSID(0), mode, fi.IsDir)
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
	sd := securityDescriptor(fi)
	b := sd.EncodeFiltered(si)
	if uint64(len(b)) > uint64(req.OutputBufferLength) {
		need := make([]byte, 4)
		binary.LittleEndian.PutUint32(need, uint32(len(b)))
		return &smb2.ErrorResponse{Data: need}, smb2.StatusBufferTooSmall
	}
	return &smb2.QueryInfoResponse{Buffer: b}, nil
}

// setSecurity serves SET_INFO with InfoType SMB2_0_INFO_SECURITY
// ([MS-SMB2] 3.3.5.21.3). The descriptor is checked and the access needed
// for each part enforced, but nothing is stored: files keep the
// descriptor derived from their POSIX identity.
func (o *open) setSecurity(req *smb2.SetInfoRequest) error {
	si := req.AdditionalInformation
	if si&secOwnerGroup != 0 && o.access&smb2.WriteOwner == 0 {
		return smb2.StatusAccessDenied
	}
	if si&fscc.DACLSecurityInformation != 0 && o.access&smb2.WriteDAC == 0 {
		return smb2.StatusAccessDenied
	}
	if si&fscc.SACLSecurityInformation != 0 && o.access&smb2.AccessSystemSecurity == 0 {
		return smb2.StatusAccessDenied
	}
	var sd fscc.SecurityDescriptor
	if err := sd.Decode(req.Buffer); err != nil {
		return smb2.StatusInvalidSecurityDescr
	}
	if si&fscc.OwnerSecurityInformation != 0 && sd.Owner == nil {
		return smb2.StatusInvalidOwner
	}
	return nil
}
