package smb2

import "github.com/smbcluster/smbcluster/node/smb2/utf16le"

// CreateDisposition values ([MS-SMB2] 2.2.13).
const (
	FileSupersede   uint32 = 0x00000000
	FileOpen        uint32 = 0x00000001
	FileCreate      uint32 = 0x00000002
	FileOpenIf      uint32 = 0x00000003
	FileOverwrite   uint32 = 0x00000004
	FileOverwriteIf uint32 = 0x00000005
)

// CreateAction values ([MS-SMB2] 2.2.14).
const (
	FileSuperseded  uint32 = 0x00000000
	FileOpened      uint32 = 0x00000001
	FileCreated     uint32 = 0x00000002
	FileOverwritten uint32 = 0x00000003
)

// CreateOptions bits ([MS-SMB2] 2.2.13).
const (
	FileDirectoryFile           uint32 = 0x00000001
	FileWriteThrough            uint32 = 0x00000002
	FileSequentialOnly          uint32 = 0x00000004
	FileNoIntermediateBuffering uint32 = 0x00000008
	FileSynchronousIOAlert      uint32 = 0x00000010
	FileSynchronousIONonalert   uint32 = 0x00000020
	FileNonDirectoryFile        uint32 = 0x00000040
	FileCompleteIfOplocked      uint32 = 0x00000100
	FileNoEaKnowledge           uint32 = 0x00000200
	FileOpenRemoteInstance      uint32 = 0x00000400
	FileRandomAccess            uint32 = 0x00000800
	FileDeleteOnClose           uint32 = 0x00001000
	FileOpenByFileID            uint32 = 0x00002000
	FileOpenForBackupIntent     uint32 = 0x00004000
	FileNoCompression           uint32 = 0x00008000
	FileOpenRequiringOplock     uint32 = 0x00010000
	FileDisallowExclusive       uint32 = 0x00020000
	FileReserveOpfilter         uint32 = 0x00100000
	FileOpenReparsePoint        uint32 = 0x00200000
	FileOpenNoRecall            uint32 = 0x00400000
	FileOpenForFreeSpaceQuery   uint32 = 0x00800000
)

// ShareAccess bits ([MS-SMB2] 2.2.13).
const (
	FileShareRead   uint32 = 0x00000001
	FileShareWrite  uint32 = 0x00000002
	FileShareDelete uint32 = 0x00000004
)

// Access mask bits ([MS-SMB2] 2.2.13.1.1 files, 2.2.13.1.2 directories).
const (
	FileReadData         uint32 = 0x00000001
	FileWriteData        uint32 = 0x00000002
	FileAppendData       uint32 = 0x00000004
	FileReadEA           uint32 = 0x00000008
	FileWriteEA          uint32 = 0x00000010
	FileExecute          uint32 = 0x00000020
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

	FileListDirectory   uint32 = 0x00000001
	FileAddFile         uint32 = 0x00000002
	FileAddSubdirectory uint32 = 0x00000004
	FileTraverse        uint32 = 0x00000020
)

// Oplock levels ([MS-SMB2] 2.2.13).
const (
	OplockLevelNone      uint8 = 0x00
	OplockLevelII        uint8 = 0x01
	OplockLevelExclusive uint8 = 0x08
	OplockLevelBatch     uint8 = 0x09
	OplockLevelLease     uint8 = 0xFF
)

// Impersonation levels ([MS-SMB2] 2.2.13).
const (
	ImpersonationAnonymous      uint32 = 0
	ImpersonationIdentification uint32 = 1
	ImpersonationImpersonation  uint32 = 2
	ImpersonationDelegate       uint32 = 3
)

// CreateResponseFlagReparsepoint marks a reparse point in a 3.x response
// ([MS-SMB2] 2.2.14).
const CreateResponseFlagReparsepoint uint8 = 0x01

// CreateRequest is SMB2 CREATE Request ([MS-SMB2] 2.2.13).
type CreateRequest struct {
	SecurityFlags        uint8
	RequestedOplockLevel uint8
	ImpersonationLevel   uint32
	SmbCreateFlags       uint64
	DesiredAccess        uint32
	FileAttributes       uint32
	ShareAccess          uint32
	CreateDisposition    uint32
	CreateOptions        uint32
	Name                 string // share-relative, no leading backslash
	Contexts             []CreateContext

	known     *CreateContexts // Contexts decoded, by Known
	knownFrom []CreateContext // the Contexts known was decoded from
}

const (
	createRequestStructSize = 57
	createRequestFixed      = 56
)

// Decode parses the request from msg, the whole PDU.
func (r *CreateRequest) Decode(msg []byte) error {
	b, err := requestBody(msg, createRequestStructSize)
	if err != nil {
		return err
	}
	r.known, r.knownFrom = nil, nil
	r.SecurityFlags = b[2]
	r.RequestedOplockLevel = b[3]
	r.ImpersonationLevel = le.Uint32(b[4:])
	r.SmbCreateFlags = le.Uint64(b[8:])
	r.DesiredAccess = le.Uint32(b[24:])
	r.FileAttributes = le.Uint32(b[28:])
	r.ShareAccess = le.Uint32(b[32:])
	r.CreateDisposition = le.Uint32(b[36:])
	r.CreateOptions = le.Uint32(b[40:])
	lo := HeaderSize + createRequestFixed
	name, err := span(msg, uint32(le.Uint16(b[44:])), uint32(le.Uint16(b[46:])), lo)
	if err != nil {
		return err
	}
	if r.Name, err = utf16le.Decode(name); err != nil {
		return err
	}
	ctx, err := span(msg, le.Uint32(b[48:]), le.Uint32(b[52:]), lo)
	if err != nil {
		return err
	}
	r.Contexts, err = DecodeCreateContexts(ctx)
	return err
}

// Size returns the encoded body size.
func (r *CreateRequest) Size() int {
	n := utf16le.Len(r.Name)
	if len(r.Contexts) > 0 {
		return align8(createRequestFixed+n) + CreateContextsSize(r.Contexts)
	}
	return bodySize(createRequestStructSize, n)
}

// Encode writes the body into b[:r.Size()].
func (r *CreateRequest) Encode(b []byte) {
	put16(b, createRequestStructSize)
	b[2] = r.SecurityFlags
	b[3] = r.RequestedOplockLevel
	put32(b[4:], r.ImpersonationLevel)
	put64(b[8:], r.SmbCreateFlags)
	put64(b[16:], 0)
	put32(b[24:], r.DesiredAccess)
	put32(b[28:], r.FileAttributes)
	put32(b[32:], r.ShareAccess)
	put32(b[36:], r.CreateDisposition)
	put32(b[40:], r.CreateOptions)
	n := utf16le.Encode(b[createRequestFixed:], r.Name)
	put16(b[44:], HeaderSize+createRequestFixed)
	put16(b[46:], uint16(n))
	put64(b[48:], 0)
	p := createRequestFixed + n
	if len(r.Contexts) == 0 {
		if n == 0 {
			b[p] = 0
		}
		return
	}
	q := align8(p)
	zero(b[p:q])
	m := EncodeCreateContexts(b[q:], r.Contexts)
	put32(b[48:], uint32(HeaderSize+q))
	put32(b[52:], uint32(m))
}

// CreateResponse is SMB2 CREATE Response ([MS-SMB2] 2.2.14).
type CreateResponse struct {
	OplockLevel    uint8
	Flags          uint8
	CreateAction   uint32
	CreationTime   uint64
	LastAccessTime uint64
	LastWriteTime  uint64
	ChangeTime     uint64
	AllocationSize uint64
	EndOfFile      uint64
	FileAttributes uint32
	FileID         FileID
	Contexts       []CreateContext
}

const (
	createResponseStructSize = 89
	createResponseFixed      = 88
)

// Size returns the encoded body size.
func (r *CreateResponse) Size() int {
	return bodySize(createResponseStructSize, CreateContextsSize(r.Contexts))
}

// Encode writes the body into b[:r.Size()].
func (r *CreateResponse) Encode(b []byte) {
	put16(b, createResponseStructSize)
	b[2] = r.OplockLevel
	b[3] = r.Flags
	put32(b[4:], r.CreateAction)
	put64(b[8:], r.CreationTime)
	put64(b[16:], r.LastAccessTime)
	put64(b[24:], r.LastWriteTime)
	put64(b[32:], r.ChangeTime)
	put64(b[40:], r.AllocationSize)
	put64(b[48:], r.EndOfFile)
	put32(b[56:], r.FileAttributes)
	put32(b[60:], 0)
	r.FileID.Encode(b[64:])
	put64(b[80:], 0)
	b[createResponseFixed] = 0
	if len(r.Contexts) > 0 {
		m := EncodeCreateContexts(b[createResponseFixed:], r.Contexts)
		put32(b[80:], HeaderSize+createResponseFixed)
		put32(b[84:], uint32(m))
	}
}

// Decode parses a CREATE response from msg, the whole PDU.
func (r *CreateResponse) Decode(msg []byte) error {
	b, err := fixedBody(msg, createResponseStructSize)
	if err != nil {
		return err
	}
	r.OplockLevel = b[2]
	r.Flags = b[3]
	r.CreateAction = le.Uint32(b[4:])
	r.CreationTime = le.Uint64(b[8:])
	r.LastAccessTime = le.Uint64(b[16:])
	r.LastWriteTime = le.Uint64(b[24:])
	r.ChangeTime = le.Uint64(b[32:])
	r.AllocationSize = le.Uint64(b[40:])
	r.EndOfFile = le.Uint64(b[48:])
	r.FileAttributes = le.Uint32(b[56:])
	r.FileID = DecodeFileID(b[64:])
	ctx, err := span(msg, le.Uint32(b[80:]), le.Uint32(b[84:]), HeaderSize+createResponseFixed)
	if err != nil {
		return err
	}
	r.Contexts, err = DecodeCreateContexts(ctx)
	return err
}
