package fscc

// ACE types ([MS-DTYP] 2.4.4.1).
const (
	AccessAllowedACEType               uint8 = 0x00
	AccessDeniedACEType                uint8 = 0x01
	SystemAuditACEType                 uint8 = 0x02
	SystemAlarmACEType                 uint8 = 0x03
	AccessAllowedCompoundACEType       uint8 = 0x04
	AccessAllowedObjectACEType         uint8 = 0x05
	AccessDeniedObjectACEType          uint8 = 0x06
	SystemAuditObjectACEType           uint8 = 0x07
	SystemAlarmObjectACEType           uint8 = 0x08
	AccessAllowedCallbackACEType       uint8 = 0x09
	AccessDeniedCallbackACEType        uint8 = 0x0A
	AccessAllowedCallbackObjectACEType uint8 = 0x0B
	AccessDeniedCallbackObjectACEType  uint8 = 0x0C
	SystemAuditCallbackACEType         uint8 = 0x0D
	SystemAlarmCallbackACEType         uint8 = 0x0E
	SystemAuditCallbackObjectACEType   uint8 = 0x0F
	SystemAlarmCallbackObjectACEType   uint8 = 0x10
	SystemMandatoryLabelACEType        uint8 = 0x11
	SystemResourceAttributeACEType     uint8 = 0x12
	SystemScopedPolicyIDACEType        uint8 = 0x13
)

// ACE flags ([MS-DTYP] 2.4.4.1).
const (
	ObjectInheritACE        uint8 = 0x01
	ContainerInheritACE     uint8 = 0x02
	NoPropagateInheritACE   uint8 = 0x04
	InheritOnlyACE          uint8 = 0x08
	InheritedACE            uint8 = 0x10
	SuccessfulAccessACEFlag uint8 = 0x40
	FailedAccessACEFlag     uint8 = 0x80
)

// Access mask bits for files and directories ([MS-DTYP] 2.4.3,
// [MS-SMB2] 2.2.13.1).
const (
	FileReadData         uint32 = 0x00000001 // FILE_LIST_DIRECTORY
	FileWriteData        uint32 = 0x00000002 // FILE_ADD_FILE
	FileAppendData       uint32 = 0x00000004 // FILE_ADD_SUBDIRECTORY
	FileReadEA           uint32 = 0x00000008
	FileWriteEA          uint32 = 0x00000010
	FileExecute          uint32 = 0x00000020 // FILE_TRAVERSE
	FileDeleteChild      uint32 = 0x00000040
	FileReadAttributes   uint32 = 0x00000080
	FileWriteAttributes  uint32 = 0x00000100
	Delete               uint32 = 0x00010000
	ReadControl          uint32 = 0x00020000
	WriteDAC             uint32 = 0x00040000
	WriteOwner           uint32 = 0x00080000
	Synchronize          uint32 = 0x00100000
	AccessSystemSecurity uint32 = 0x01000000
	MaximumAllowed       uint32 = 0x02000000
	GenericAll           uint32 = 0x10000000
	GenericExecute       uint32 = 0x20000000
	GenericWrite         uint32 = 0x40000000
	GenericRead          uint32 = 0x80000000

	FileGenericRead           = ReadControl | Synchronize | FileReadData | FileReadAttributes | FileReadEA                     // 0x120089
	FileGenericWrite          = ReadControl | Synchronize | FileWriteData | FileAppendData | FileWriteAttributes | FileWriteEA // 0x120116
	FileGenericExecute        = ReadControl | Synchronize | FileExecute | FileReadAttributes                                   // 0x1200a0
	FileAllAccess      uint32 = 0x001F01FF
)

// isObjectACE reports whether t has the ObjectFlags/ObjectType layout
// instead of a SID straight after the mask ([MS-DTYP] 2.4.4.3).
func isObjectACE(t uint8) bool {
	switch t {
	case AccessAllowedObjectACEType, AccessDeniedObjectACEType, SystemAuditObjectACEType,
		SystemAlarmObjectACEType, AccessAllowedCallbackObjectACEType,
		AccessDeniedCallbackObjectACEType, SystemAuditCallbackObjectACEType,
		SystemAlarmCallbackObjectACEType, AccessAllowedCompoundACEType:
		return true
	}
	return false
}

// ACE is an access control entry ([MS-DTYP] 2.4.4): AceType(1) AceFlags(1)
// AceSize(2) Mask(4), then the SID and any application data. For object
// ACE types the body after Mask is kept opaque in Extra and SID is empty;
// for the others Extra holds the bytes after the SID (callback data,
// padding), so a decoded ACE re-encodes byte for byte.
type ACE struct {
	Type  uint8
	Flags uint8
	Mask  uint32
	SID   SID
	Extra []byte
}

func (a *ACE) Size() int {
	if isObjectACE(a.Type) {
		return 8 + len(a.Extra)
	}
	return 8 + a.SID.Size() + len(a.Extra)
}

func (a *ACE) Encode(b []byte) {
	n := a.Size()
	b[0], b[1] = a.Type, a.Flags
	le.PutUint16(b[2:], uint16(n))
	le.PutUint32(b[4:], a.Mask)
	off := 8
	if !isObjectACE(a.Type) {
		a.SID.Encode(b[8:])
		off += a.SID.Size()
	}
	copy(b[off:n], a.Extra)
}

// decode parses one ACE occupying b[:AceSize] and returns AceSize.
func (a *ACE) decode(b []byte) (int, error) {
	if len(b) < 8 {
		return 0, ErrShortBuffer
	}
	n := int(le.Uint16(b[2:]))
	if n < 8 || n > len(b) {
		return 0, ErrInvalid
	}
	a.Type, a.Flags, a.Mask = b[0], b[1], le.Uint32(b[4:])
	body := b[8:n]
	if isObjectACE(a.Type) {
		a.SID = SID{}
		a.Extra = body
		return n, nil
	}
	if err := a.SID.Decode(body); err != nil {
		return 0, err
	}
	a.Extra = body[a.SID.Size():]
	if len(a.Extra) == 0 {
		a.Extra = nil
	}
	return n, nil
}

// ACL revisions ([MS-DTYP] 2.4.5).
const (
	ACLRevision   uint8 = 2
	ACLRevisionDS uint8 = 4
)

// ACL is an access control list ([MS-DTYP] 2.4.5): AclRevision(1) Sbz1(1)
// AclSize(2) AceCount(2) Sbz2(2), then the ACEs.
type ACL struct {
	Revision uint8
	ACEs     []ACE
}

func (l *ACL) Size() int {
	n := 8
	for i := range l.ACEs {
		n += l.ACEs[i].Size()
	}
	return n
}

func (l *ACL) Encode(b []byte) {
	rev := l.Revision
	if rev == 0 {
		rev = ACLRevision
	}
	b[0], b[1] = rev, 0
	le.PutUint16(b[2:], uint16(l.Size()))
	le.PutUint16(b[4:], uint16(len(l.ACEs)))
	le.PutUint16(b[6:], 0)
	off := 8
	for i := range l.ACEs {
		l.ACEs[i].Encode(b[off:])
		off += l.ACEs[i].Size()
	}
}

// Decode parses an ACL from the start of b: AclSize must fit in b and
// AceCount ACEs must fit in AclSize.
func (l *ACL) Decode(b []byte) error {
	if len(b) < 8 {
		return ErrShortBuffer
	}
	size, count := int(le.Uint16(b[2:])), int(le.Uint16(b[4:]))
	if size < 8 || size > len(b) {
		return ErrShortBuffer
	}
	if b[0] < ACLRevision || b[0] > ACLRevisionDS || count > (size-8)/8 {
		return ErrInvalid
	}
	l.Revision = b[0]
	l.ACEs = make([]ACE, count)
	off := 8
	for i := range l.ACEs {
		n, err := l.ACEs[i].decode(b[off:size])
		if err != nil {
			return err
		}
		off += n
	}
	return nil
}
