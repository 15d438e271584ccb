package fscc

// Security descriptor control flags ([MS-DTYP] 2.4.6).
const (
	SEOwnerDefaulted     uint16 = 0x0001
	SEGroupDefaulted     uint16 = 0x0002
	SEDACLPresent        uint16 = 0x0004
	SEDACLDefaulted      uint16 = 0x0008
	SESACLPresent        uint16 = 0x0010
	SESACLDefaulted      uint16 = 0x0020
	SEDACLTrusted        uint16 = 0x0040
	SEServerSecurity     uint16 = 0x0080
	SEDACLAutoInheritReq uint16 = 0x0100
	SESACLAutoInheritReq uint16 = 0x0200
	SEDACLAutoInherited  uint16 = 0x0400
	SESACLAutoInherited  uint16 = 0x0800
	SEDACLProtected      uint16 = 0x1000
	SESACLProtected      uint16 = 0x2000
	SERMControlValid     uint16 = 0x4000
	SESelfRelative       uint16 = 0x8000
)

const sdHeader = 20

// SecurityDescriptor is a self-relative SECURITY_DESCRIPTOR ([MS-DTYP]
// 2.4.6): Revision(1) Sbz1(1) Control(2) OffsetOwner(4) OffsetGroup(4)
// OffsetSacl(4) OffsetDacl(4), then the parts. Encode lays them out as
// owner, group, SACL, DACL; Decode accepts any order. A DACL of nil with
// SEDACLPresent in Control is the NULL DACL (no protection).
type SecurityDescriptor struct {
	Control uint16
	Owner   *SID
	Group   *SID
	DACL    *ACL
	SACL    *ACL
}

func (sd *SecurityDescriptor) Size() int {
	n := sdHeader
	if sd.Owner != nil {
		n += sd.Owner.Size()
	}
	if sd.Group != nil {
		n += sd.Group.Size()
	}
	if sd.SACL != nil {
		n += sd.SACL.Size()
	}
	if sd.DACL != nil {
		n += sd.DACL.Size()
	}
	return n
}

// control returns Control with SE_SELF_RELATIVE and the PRESENT bits that
// match the parts actually encoded.
func (sd *SecurityDescriptor) control() uint16 {
	c := sd.Control | SESelfRelative
	if sd.DACL != nil {
		c |= SEDACLPresent
	}
	if sd.SACL != nil {
		c |= SESACLPresent
	} else {
		c &^= SESACLPresent
	}
	return c
}

func (sd *SecurityDescriptor) Encode(b []byte) {
	b[0], b[1] = 1, 0
	le.PutUint16(b[2:], sd.control())
	clear(b[4:sdHeader])
	off := sdHeader
	if sd.Owner != nil {
		le.PutUint32(b[4:], uint32(off))
		sd.Owner.Encode(b[off:])
		off += sd.Owner.Size()
	}
	if sd.Group != nil {
		le.PutUint32(b[8:], uint32(off))
		sd.Group.Encode(b[off:])
		off += sd.Group.Size()
	}
	if sd.SACL != nil {
		le.PutUint32(b[12:], uint32(off))
		sd.SACL.Encode(b[off:])
		off += sd.SACL.Size()
	}
	if sd.DACL != nil {
		le.PutUint32(b[16:], uint32(off))
		sd.DACL.Encode(b[off:])
	}
}

// Bytes returns the encoding of sd in a new slice.
func (sd *SecurityDescriptor) Bytes() []byte {
	b := make([]byte, sd.Size())
	sd.Encode(b)
	return b
}

// Filter returns the parts of sd that secinfo (the AdditionalInformation
// of QUERY_INFO, [MS-SMB2] 2.2.37) asks for. Control keeps only the bits
// that describe the parts returned.
func (sd *SecurityDescriptor) Filter(secinfo uint32) SecurityDescriptor {
	out := SecurityDescriptor{Control: sd.Control}
	if secinfo&OwnerSecurityInformation != 0 {
		out.Owner = sd.Owner
	} else {
		out.Control &^= SEOwnerDefaulted
	}
	if secinfo&GroupSecurityInformation != 0 {
		out.Group = sd.Group
	} else {
		out.Control &^= SEGroupDefaulted
	}
	if secinfo&DACLSecurityInformation != 0 {
		out.DACL = sd.DACL
	} else {
		out.Control &^= SEDACLPresent | SEDACLDefaulted | SEDACLAutoInheritReq | SEDACLAutoInherited | SEDACLProtected
	}
	if secinfo&SACLSecurityInformation != 0 {
		out.SACL = sd.SACL
	} else {
		out.Control &^= SESACLPresent | SESACLDefaulted | SESACLAutoInheritReq | SESACLAutoInherited | SESACLProtected
	}
	return out
}

// EncodeFiltered returns the encoding of sd.Filter(secinfo).
func (sd *SecurityDescriptor) EncodeFiltered(secinfo uint32) []byte {
	f := sd.Filter(secinfo)
	return f.Bytes()
}

// Decode parses a self-relative security descriptor. Every non-zero
// offset must point at a part lying inside b beyond the header.
func (sd *SecurityDescriptor) Decode(b []byte) error {
	if len(b) < sdHeader {
		return ErrShortBuffer
	}
	if b[0] != 1 {
		return ErrInvalid
	}
	*sd = SecurityDescriptor{Control: le.Uint16(b[2:])}
	part := func(field int) ([]byte, error) {
		off := le.Uint32(b[field:])
		if off == 0 {
			return nil, nil
		}
		if off < sdHeader || uint64(off) >= uint64(len(b)) {
			return nil, ErrInvalid
		}
		return b[off:], nil
	}
	for _, p := range []struct {
		field int
		sid   **SID
	}{{4, &sd.Owner}, {8, &sd.Group}} {
		pb, err := part(p.field)
		if err != nil {
			return err
		}
		if pb != nil {
			s := new(SID)
			if err := s.Decode(pb); err != nil {
				return err
			}
			*p.sid = s
		}
	}
	for _, p := range []struct {
		field   int
		present uint16
		acl     **ACL
	}{{12, SESACLPresent, &sd.SACL}, {16, SEDACLPresent, &sd.DACL}} {
		pb, err := part(p.field)
		if err != nil {
			return err
		}
		if pb != nil && sd.Control&p.present != 0 {
			l := new(ACL)
			if err := l.Decode(pb); err != nil {
				return err
			}
			*p.acl = l
		}
	}
	return nil
}

// ModeMask maps three POSIX permission bits (rwx, 0..7) to a Windows access
// mask the way Samba does: r → FILE_GENERIC_READ, w → FILE_GENERIC_WRITE
// (plus FILE_DELETE_CHILD on directories), x → FILE_GENERIC_EXECUTE, and
// rwx → FILE_ALL_ACCESS.
func ModeMask(perm uint32, isDir bool) uint32 {
	perm &= 7
	if perm == 7 {
		return FileAllAccess
	}
	var m uint32
	if perm&4 != 0 {
		m |= FileGenericRead
	}
	if perm&2 != 0 {
		m |= FileGenericWrite
		if isDir {
			m |= FileDeleteChild
		}
	}
	if perm&1 != 0 {
		m |= FileGenericExecute
	}
	return m
}

// ownerRights are granted to the owner whatever the mode says: in POSIX
// the owner may always read and change the permissions and times.
const ownerRights = ReadControl | WriteDAC | WriteOwner | FileReadAttributes | FileWriteAttributes | Synchronize

// DefaultSD builds the security descriptor of a file without a stored one
// from its POSIX owner, group and mode: allow ACEs for owner, group and
// Everyone (omitting empty ones), inherited by files and subdirectories
// when isDir.
func DefaultSD(owner, group SID, mode uint32, isDir bool) SecurityDescriptor {
	var flags uint8
	if isDir {
		flags = ObjectInheritACE | ContainerInheritACE
	}
	dacl := &ACL{Revision: ACLRevision}
	add := func(sid SID, mask uint32) {
		if mask != 0 {
			dacl.ACEs = append(dacl.ACEs, ACE{Type: AccessAllowedACEType, Flags: flags, Mask: mask, SID: sid})
		}
	}
	add(owner, ModeMask(mode>>6, isDir)|ownerRights)
	add(group, ModeMask(mode>>3, isDir))
	add(SIDEveryone, ModeMask(mode, isDir))
	return SecurityDescriptor{Control: SESelfRelative | SEDACLPresent, Owner: &owner, Group: &group, DACL: dacl}
}
