package fscc

import "github.com/smbcluster/smbcluster/node/smb2/utf16le"

// RenameInformation is FILE_RENAME_INFORMATION_TYPE_2, the SMB2 form of
// FileRenameInformation ([MS-FSCC] 2.4): ReplaceIfExists(1)
// Reserved(7) RootDirectory(8) FileNameLength(4) FileName. In SMB2,
// RootDirectory MUST be 0 and FileName is relative to the share root.
type RenameInformation struct {
	ReplaceIfExists bool
	RootDirectory   uint64
	FileName        string
}

// LinkInformation is FILE_LINK_INFORMATION_TYPE_2 ([MS-FSCC] 2.4),
// laid out exactly like RenameInformation.
type LinkInformation = RenameInformation

const renameFixed = 20

func (i *RenameInformation) Size() int { return renameFixed + utf16le.Len(i.FileName) }

func (i *RenameInformation) Encode(b []byte) {
	clear(b[:8])
	b[0] = boolByte(i.ReplaceIfExists)
	le.PutUint64(b[8:], i.RootDirectory)
	le.PutUint32(b[16:], uint32(utf16le.Encode(b[20:], i.FileName)))
}

// Decode parses the SET_INFO buffer; FileNameLength must fit the buffer and
// the name must be valid UTF-16.
func (i *RenameInformation) Decode(b []byte) error {
	if len(b) < renameFixed {
		return ErrShortBuffer
	}
	i.ReplaceIfExists = b[0] != 0
	i.RootDirectory = le.Uint64(b[8:])
	s, err := decodeLenName(b, 16)
	i.FileName = s
	return err
}

// Flags of FILE_RENAME_INFORMATION_EX and FILE_LINK_INFORMATION_EX.
const (
	FileRenameReplaceIfExists         uint32 = 0x00000001
	FileRenamePosixSemantics          uint32 = 0x00000002
	FileRenameIgnoreReadonlyAttribute uint32 = 0x00000040
)

// RenameInformationEx is FILE_RENAME_INFORMATION_EX, the payload of
// FileRenameInformationEx and FileLinkInformationEx: Flags(4) Reserved(4)
// RootDirectory(8) FileNameLength(4) FileName.
type RenameInformationEx struct {
	Flags         uint32
	RootDirectory uint64
	FileName      string
}

func (i *RenameInformationEx) Size() int { return renameFixed + utf16le.Len(i.FileName) }

func (i *RenameInformationEx) Encode(b []byte) {
	le.PutUint32(b[0:], i.Flags)
	le.PutUint32(b[4:], 0)
	le.PutUint64(b[8:], i.RootDirectory)
	le.PutUint32(b[16:], uint32(utf16le.Encode(b[20:], i.FileName)))
}

func (i *RenameInformationEx) Decode(b []byte) error {
	if len(b) < renameFixed {
		return ErrShortBuffer
	}
	i.Flags = le.Uint32(b[0:])
	i.RootDirectory = le.Uint64(b[8:])
	s, err := decodeLenName(b, 16)
	i.FileName = s
	return err
}

// DispositionInformation is FILE_DISPOSITION_INFORMATION ([MS-FSCC] 2.4).
type DispositionInformation struct{ DeletePending bool }

func (i *DispositionInformation) Size() int       { return 1 }
func (i *DispositionInformation) Encode(b []byte) { b[0] = boolByte(i.DeletePending) }

func (i *DispositionInformation) Decode(b []byte) error {
	if len(b) < 1 {
		return ErrShortBuffer
	}
	i.DeletePending = b[0] != 0
	return nil
}

// Flags of FILE_DISPOSITION_INFORMATION_EX ([MS-FSCC] 2.4).
const (
	FileDispositionDoNotDelete             uint32 = 0x00000000
	FileDispositionDelete                  uint32 = 0x00000001
	FileDispositionPosixSemantics          uint32 = 0x00000002
	FileDispositionForceImageSectionCheck  uint32 = 0x00000004
	FileDispositionOnClose                 uint32 = 0x00000008
	FileDispositionIgnoreReadonlyAttribute uint32 = 0x00000010
)

// DispositionInformationEx is FILE_DISPOSITION_INFORMATION_EX
// ([MS-FSCC] 2.4).
type DispositionInformationEx struct{ Flags uint32 }

func (i *DispositionInformationEx) Size() int       { return 4 }
func (i *DispositionInformationEx) Encode(b []byte) { le.PutUint32(b, i.Flags) }

func (i *DispositionInformationEx) Decode(b []byte) error {
	if len(b) < 4 {
		return ErrShortBuffer
	}
	i.Flags = le.Uint32(b)
	return nil
}

// EndOfFileInformation is FILE_END_OF_FILE_INFORMATION ([MS-FSCC] 2.4).
type EndOfFileInformation struct{ EndOfFile int64 }

func (i *EndOfFileInformation) Size() int       { return 8 }
func (i *EndOfFileInformation) Encode(b []byte) { le.PutUint64(b, uint64(i.EndOfFile)) }

// Decode parses the buffer; a negative EndOfFile is invalid.
func (i *EndOfFileInformation) Decode(b []byte) error {
	v, err := decodeNonNegative(b)
	i.EndOfFile = v
	return err
}

// AllocationInformation is FILE_ALLOCATION_INFORMATION ([MS-FSCC] 2.4).
type AllocationInformation struct{ AllocationSize int64 }

func (i *AllocationInformation) Size() int       { return 8 }
func (i *AllocationInformation) Encode(b []byte) { le.PutUint64(b, uint64(i.AllocationSize)) }

func (i *AllocationInformation) Decode(b []byte) error {
	v, err := decodeNonNegative(b)
	i.AllocationSize = v
	return err
}

// ValidDataLengthInformation is FILE_VALID_DATA_LENGTH_INFORMATION
// ([MS-FSCC] 2.4).
type ValidDataLengthInformation struct{ ValidDataLength int64 }

func (i *ValidDataLengthInformation) Size() int       { return 8 }
func (i *ValidDataLengthInformation) Encode(b []byte) { le.PutUint64(b, uint64(i.ValidDataLength)) }

func (i *ValidDataLengthInformation) Decode(b []byte) error {
	v, err := decodeNonNegative(b)
	i.ValidDataLength = v
	return err
}

func decodeNonNegative(b []byte) (int64, error) {
	if len(b) < 8 {
		return 0, ErrShortBuffer
	}
	v := int64(le.Uint64(b))
	if v < 0 {
		return v, ErrInvalid
	}
	return v, nil
}
