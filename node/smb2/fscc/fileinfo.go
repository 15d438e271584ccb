package fscc

import (
	"encoding/binary"

	"github.com/smbcluster/smbcluster/node/smb2/utf16le"
)

var le = binary.LittleEndian

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// BasicInformation is FILE_BASIC_INFORMATION ([MS-FSCC] 2.4). In SET_INFO
// a time of FiletimeUnchanged leaves it alone, FiletimeStopUpdating and
// FiletimeResumeUpdating switch automatic updates off and on, and a
// FileAttributes of 0 leaves the attributes alone.
type BasicInformation struct {
	CreationTime   uint64
	LastAccessTime uint64
	LastWriteTime  uint64
	ChangeTime     uint64
	FileAttributes uint32
}

// BasicInformationSize is the encoded size of FILE_BASIC_INFORMATION.
const BasicInformationSize = 40

func (i *BasicInformation) Size() int { return BasicInformationSize }

func (i *BasicInformation) Encode(b []byte) {
	_ = b[39]
	le.PutUint64(b[0:], i.CreationTime)
	le.PutUint64(b[8:], i.LastAccessTime)
	le.PutUint64(b[16:], i.LastWriteTime)
	le.PutUint64(b[24:], i.ChangeTime)
	le.PutUint32(b[32:], i.FileAttributes)
	le.PutUint32(b[36:], 0) // Reserved
}

// Decode parses FILE_BASIC_INFORMATION from a SET_INFO buffer. Like Windows
// it accepts 36 bytes (without the trailing Reserved field). Times below -2
// are invalid ([MS-FSCC] 2.4).
func (i *BasicInformation) Decode(b []byte) error {
	if len(b) < 36 {
		return ErrShortBuffer
	}
	i.CreationTime = le.Uint64(b[0:])
	i.LastAccessTime = le.Uint64(b[8:])
	i.LastWriteTime = le.Uint64(b[16:])
	i.ChangeTime = le.Uint64(b[24:])
	i.FileAttributes = le.Uint32(b[32:])
	for _, t := range [...]uint64{i.CreationTime, i.LastAccessTime, i.LastWriteTime, i.ChangeTime} {
		if int64(t) < -2 {
			return ErrInvalid
		}
	}
	return nil
}

// StandardInformation is FILE_STANDARD_INFORMATION ([MS-FSCC] 2.4).
type StandardInformation struct {
	AllocationSize int64
	EndOfFile      int64
	NumberOfLinks  uint32
	DeletePending  bool
	Directory      bool
}

// StandardInformationSize is the encoded size of FILE_STANDARD_INFORMATION.
const StandardInformationSize = 24

func (i *StandardInformation) Size() int { return StandardInformationSize }

func (i *StandardInformation) Encode(b []byte) {
	_ = b[23]
	le.PutUint64(b[0:], uint64(i.AllocationSize))
	le.PutUint64(b[8:], uint64(i.EndOfFile))
	le.PutUint32(b[16:], i.NumberOfLinks)
	b[20] = boolByte(i.DeletePending)
	b[21] = boolByte(i.Directory)
	b[22], b[23] = 0, 0 // Reserved
}

// Decode parses FILE_STANDARD_INFORMATION (for tests and clients).
func (i *StandardInformation) Decode(b []byte) error {
	if len(b) < StandardInformationSize {
		return ErrShortBuffer
	}
	i.AllocationSize = int64(le.Uint64(b[0:]))
	i.EndOfFile = int64(le.Uint64(b[8:]))
	i.NumberOfLinks = le.Uint32(b[16:])
	i.DeletePending = b[20] != 0
	i.Directory = b[21] != 0
	return nil
}

// InternalInformation is FILE_INTERNAL_INFORMATION ([MS-FSCC] 2.4).
type InternalInformation struct{ IndexNumber uint64 }

func (i *InternalInformation) Size() int       { return 8 }
func (i *InternalInformation) Encode(b []byte) { le.PutUint64(b, i.IndexNumber) }

// EaInformation is FILE_EA_INFORMATION ([MS-FSCC] 2.4).
type EaInformation struct{ EaSize uint32 }

func (i *EaInformation) Size() int       { return 4 }
func (i *EaInformation) Encode(b []byte) { le.PutUint32(b, i.EaSize) }

// AccessInformation is FILE_ACCESS_INFORMATION ([MS-FSCC] 2.4).
type AccessInformation struct{ AccessFlags uint32 }

func (i *AccessInformation) Size() int       { return 4 }
func (i *AccessInformation) Encode(b []byte) { le.PutUint32(b, i.AccessFlags) }

// PositionInformation is FILE_POSITION_INFORMATION ([MS-FSCC] 2.4).
type PositionInformation struct{ CurrentByteOffset int64 }

func (i *PositionInformation) Size() int       { return 8 }
func (i *PositionInformation) Encode(b []byte) { le.PutUint64(b, uint64(i.CurrentByteOffset)) }

// Decode parses FILE_POSITION_INFORMATION; a negative offset is invalid.
func (i *PositionInformation) Decode(b []byte) error {
	if len(b) < 8 {
		return ErrShortBuffer
	}
	i.CurrentByteOffset = int64(le.Uint64(b))
	if i.CurrentByteOffset < 0 {
		return ErrInvalid
	}
	return nil
}

// ModeInformation is FILE_MODE_INFORMATION ([MS-FSCC] 2.4).
type ModeInformation struct{ Mode uint32 }

// Mode flags of FILE_MODE_INFORMATION that SET_INFO may change.
const (
	FileWriteThrough            uint32 = 0x00000002
	FileSequentialOnly          uint32 = 0x00000004
	FileNoIntermediateBuffering uint32 = 0x00000008
	FileSynchronousIOAlert      uint32 = 0x00000010
	FileSynchronousIONonalert   uint32 = 0x00000020
	FileDeleteOnClose           uint32 = 0x00001000
)

func (i *ModeInformation) Size() int       { return 4 }
func (i *ModeInformation) Encode(b []byte) { le.PutUint32(b, i.Mode) }

// Decode parses FILE_MODE_INFORMATION; unknown bits and both synchronous
// modes together are invalid ([MS-FSCC] 2.4).
func (i *ModeInformation) Decode(b []byte) error {
	if len(b) < 4 {
		return ErrShortBuffer
	}
	i.Mode = le.Uint32(b)
	const known = FileWriteThrough | FileSequentialOnly | FileNoIntermediateBuffering |
		FileSynchronousIOAlert | FileSynchronousIONonalert | FileDeleteOnClose
	sync := FileSynchronousIOAlert | FileSynchronousIONonalert
	if i.Mode&^known != 0 || i.Mode&sync == sync {
		return ErrInvalid
	}
	return nil
}

// AlignmentInformation is FILE_ALIGNMENT_INFORMATION ([MS-FSCC] 2.4).
type AlignmentInformation struct{ AlignmentRequirement uint32 }

func (i *AlignmentInformation) Size() int       { return 4 }
func (i *AlignmentInformation) Encode(b []byte) { le.PutUint32(b, i.AlignmentRequirement) }

// NameInformation is FILE_NAME_INFORMATION ([MS-FSCC] 2.4); it also
// serves FileAlternateNameInformation and FileNormalizedNameInformation.
type NameInformation struct{ FileName string }

// AlternateNameInformation is FILE_ALTERNATE_NAME_INFORMATION
// ([MS-FSCC] 2.4), laid out like FILE_NAME_INFORMATION.
type AlternateNameInformation = NameInformation

func (i *NameInformation) Size() int { return 4 + utf16le.Len(i.FileName) }

func (i *NameInformation) Encode(b []byte) {
	n := utf16le.Encode(b[4:], i.FileName)
	le.PutUint32(b, uint32(n))
}

// Decode parses FILE_NAME_INFORMATION.
func (i *NameInformation) Decode(b []byte) error {
	s, err := decodeLenName(b, 0)
	i.FileName = s
	return err
}

// decodeLenName reads a 4-byte FileNameLength at b[off:] followed by the name.
func decodeLenName(b []byte, off int) (string, error) {
	if len(b) < off+4 {
		return "", ErrShortBuffer
	}
	n := uint64(le.Uint32(b[off:]))
	if n > uint64(len(b)-off-4) {
		return "", ErrShortBuffer
	}
	s, err := utf16le.Decode(b[off+4 : off+4+int(n)])
	if err != nil {
		return "", ErrInvalid
	}
	return s, nil
}

// AllInformation is FILE_ALL_INFORMATION ([MS-FSCC] 2.4): the fixed parts
// of nine classes packed back to back (100 bytes) followed by the name.
type AllInformation struct {
	Basic     BasicInformation
	Standard  StandardInformation
	Internal  InternalInformation
	Ea        EaInformation
	Access    AccessInformation
	Position  PositionInformation
	Mode      ModeInformation
	Alignment AlignmentInformation
	Name      NameInformation
}

// allInformationFixed is the size of FILE_ALL_INFORMATION without FileName.
const allInformationFixed = 40 + 24 + 8 + 4 + 4 + 8 + 4 + 4 + 4

func (i *AllInformation) Size() int { return allInformationFixed + utf16le.Len(i.Name.FileName) }

func (i *AllInformation) Encode(b []byte) {
	i.Basic.Encode(b[0:])
	i.Standard.Encode(b[40:])
	i.Internal.Encode(b[64:])
	i.Ea.Encode(b[72:])
	i.Access.Encode(b[76:])
	i.Position.Encode(b[80:])
	i.Mode.Encode(b[88:])
	i.Alignment.Encode(b[92:])
	i.Name.Encode(b[96:])
}

// Decode parses FILE_ALL_INFORMATION (for tests and clients).
func (i *AllInformation) Decode(b []byte) error {
	if len(b) < allInformationFixed {
		return ErrShortBuffer
	}
	if err := i.Basic.Decode(b[0:40]); err != nil {
		return err
	}
	_ = i.Standard.Decode(b[40:])
	i.Internal.IndexNumber = le.Uint64(b[64:])
	i.Ea.EaSize = le.Uint32(b[72:])
	i.Access.AccessFlags = le.Uint32(b[76:])
	i.Position.CurrentByteOffset = int64(le.Uint64(b[80:]))
	i.Mode.Mode = le.Uint32(b[88:])
	i.Alignment.AlignmentRequirement = le.Uint32(b[92:])
	return i.Name.Decode(b[96:])
}

// NetworkOpenInformation is FILE_NETWORK_OPEN_INFORMATION ([MS-FSCC] 2.4).
type NetworkOpenInformation struct {
	CreationTime   uint64
	LastAccessTime uint64
	LastWriteTime  uint64
	ChangeTime     uint64
	AllocationSize int64
	EndOfFile      int64
	FileAttributes uint32
}

func (i *NetworkOpenInformation) Size() int { return 56 }

func (i *NetworkOpenInformation) Encode(b []byte) {
	_ = b[55]
	le.PutUint64(b[0:], i.CreationTime)
	le.PutUint64(b[8:], i.LastAccessTime)
	le.PutUint64(b[16:], i.LastWriteTime)
	le.PutUint64(b[24:], i.ChangeTime)
	le.PutUint64(b[32:], uint64(i.AllocationSize))
	le.PutUint64(b[40:], uint64(i.EndOfFile))
	le.PutUint32(b[48:], i.FileAttributes)
	le.PutUint32(b[52:], 0) // Reserved
}

// AttributeTagInformation is FILE_ATTRIBUTE_TAG_INFORMATION ([MS-FSCC] 2.4).
type AttributeTagInformation struct {
	FileAttributes uint32
	ReparseTag     uint32
}

func (i *AttributeTagInformation) Size() int { return 8 }

func (i *AttributeTagInformation) Encode(b []byte) {
	le.PutUint32(b[0:], i.FileAttributes)
	le.PutUint32(b[4:], i.ReparseTag)
}

// CompressionInformation is FILE_COMPRESSION_INFORMATION ([MS-FSCC] 2.4).
type CompressionInformation struct {
	CompressedFileSize   int64
	CompressionFormat    uint16 // COMPRESSION_FORMAT_NONE = 0, _LZNT1 = 2
	CompressionUnitShift uint8
	ChunkShift           uint8
	ClusterShift         uint8
}

func (i *CompressionInformation) Size() int { return 16 }

func (i *CompressionInformation) Encode(b []byte) {
	_ = b[15]
	le.PutUint64(b[0:], uint64(i.CompressedFileSize))
	le.PutUint16(b[8:], i.CompressionFormat)
	b[10], b[11], b[12] = i.CompressionUnitShift, i.ChunkShift, i.ClusterShift
	b[13], b[14], b[15] = 0, 0, 0 // Reserved
}

// IdInformation is FILE_ID_INFORMATION ([MS-FSCC] 2.4).
type IdInformation struct {
	VolumeSerialNumber uint64
	FileID             [16]byte
}

func (i *IdInformation) Size() int { return 24 }

func (i *IdInformation) Encode(b []byte) {
	le.PutUint64(b[0:], i.VolumeSerialNumber)
	copy(b[8:24], i.FileID[:])
}

// PipeInformation is FILE_PIPE_INFORMATION ([MS-FSCC] 2.4).
type PipeInformation struct {
	ReadMode       uint32 // FILE_PIPE_BYTE_STREAM_MODE 0, FILE_PIPE_MESSAGE_MODE 1
	CompletionMode uint32 // FILE_PIPE_QUEUE_OPERATION 0, FILE_PIPE_COMPLETE_OPERATION 1
}

func (i *PipeInformation) Size() int { return 8 }

func (i *PipeInformation) Encode(b []byte) {
	le.PutUint32(b[0:], i.ReadMode)
	le.PutUint32(b[4:], i.CompletionMode)
}

// Decode parses FILE_PIPE_INFORMATION; each mode must be 0 or 1.
func (i *PipeInformation) Decode(b []byte) error {
	if len(b) < 8 {
		return ErrShortBuffer
	}
	i.ReadMode, i.CompletionMode = le.Uint32(b[0:]), le.Uint32(b[4:])
	if i.ReadMode > 1 || i.CompletionMode > 1 {
		return ErrInvalid
	}
	return nil
}

// PipeLocalInformation is FILE_PIPE_LOCAL_INFORMATION ([MS-FSCC] 2.4).
type PipeLocalInformation struct {
	NamedPipeType          uint32 // 0 byte stream, 1 message
	NamedPipeConfiguration uint32 // 0 inbound, 1 outbound, 2 full duplex
	MaximumInstances       uint32
	CurrentInstances       uint32
	InboundQuota           uint32
	ReadDataAvailable      uint32
	OutboundQuota          uint32
	WriteQuotaAvailable    uint32
	NamedPipeState         uint32 // 3 = FILE_PIPE_CONNECTED_STATE
	NamedPipeEnd           uint32 // 1 = FILE_PIPE_SERVER_END
}

func (i *PipeLocalInformation) Size() int { return 40 }

func (i *PipeLocalInformation) Encode(b []byte) {
	_ = b[39]
	for k, v := range [...]uint32{i.NamedPipeType, i.NamedPipeConfiguration,
		i.MaximumInstances, i.CurrentInstances, i.InboundQuota, i.ReadDataAvailable,
		i.OutboundQuota, i.WriteQuotaAvailable, i.NamedPipeState, i.NamedPipeEnd} {
		le.PutUint32(b[4*k:], v)
	}
}
