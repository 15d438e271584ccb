package fscc

import "errors"

// Errors returned by decoders and writers. The server maps them to
// NTSTATUS codes (STATUS_INFO_LENGTH_MISMATCH, STATUS_INVALID_PARAMETER,
// STATUS_INVALID_INFO_CLASS).
var (
	ErrShortBuffer      = errors.New("fscc: buffer too short")
	ErrInvalid          = errors.New("fscc: malformed structure")
	ErrInvalidInfoClass = errors.New("fscc: unsupported information class")
)

// File information classes ([MS-FSCC] 2.4).
const (
	FileDirectoryInformation              uint8 = 1
	FileFullDirectoryInformation          uint8 = 2
	FileBothDirectoryInformation          uint8 = 3
	FileBasicInformation                  uint8 = 4
	FileStandardInformation               uint8 = 5
	FileInternalInformation               uint8 = 6
	FileEaInformation                     uint8 = 7
	FileAccessInformation                 uint8 = 8
	FileNameInformation                   uint8 = 9
	FileRenameInformation                 uint8 = 10
	FileLinkInformation                   uint8 = 11
	FileNamesInformation                  uint8 = 12
	FileDispositionInformation            uint8 = 13
	FilePositionInformation               uint8 = 14
	FileFullEaInformation                 uint8 = 15
	FileModeInformation                   uint8 = 16
	FileAlignmentInformation              uint8 = 17
	FileAllInformation                    uint8 = 18
	FileAllocationInformation             uint8 = 19
	FileEndOfFileInformation              uint8 = 20
	FileAlternateNameInformation          uint8 = 21
	FileStreamInformation                 uint8 = 22
	FilePipeInformation                   uint8 = 23
	FilePipeLocalInformation              uint8 = 24
	FilePipeRemoteInformation             uint8 = 25
	FileMailslotQueryInformation          uint8 = 26
	FileMailslotSetInformation            uint8 = 27
	FileCompressionInformation            uint8 = 28
	FileObjectIdInformation               uint8 = 29
	FileMoveClusterInformation            uint8 = 31
	FileQuotaInformation                  uint8 = 32
	FileReparsePointInformation           uint8 = 33
	FileNetworkOpenInformation            uint8 = 34
	FileAttributeTagInformation           uint8 = 35
	FileTrackingInformation               uint8 = 36
	FileIdBothDirectoryInformation        uint8 = 37
	FileIdFullDirectoryInformation        uint8 = 38
	FileValidDataLengthInformation        uint8 = 39
	FileShortNameInformation              uint8 = 40
	FileSfioReserveInformation            uint8 = 44
	FileSfioVolumeInformation             uint8 = 45
	FileHardLinkInformation               uint8 = 46
	FileNormalizedNameInformation         uint8 = 48
	FileIdGlobalTxDirectoryInformation    uint8 = 50
	FileStandardLinkInformation           uint8 = 54
	FileIdInformation                     uint8 = 59
	FileIdExtdDirectoryInformation        uint8 = 60
	FileIdExtdBothDirectoryInformation    uint8 = 63
	FileDispositionInformationEx          uint8 = 64
	FileRenameInformationEx               uint8 = 65
	FileStatInformation                   uint8 = 68
	FileStatLxInformation                 uint8 = 70
	FileCaseSensitiveInformation          uint8 = 71
	FileLinkInformationEx                 uint8 = 72
	FileId64ExtdDirectoryInformation      uint8 = 78
	FileId64ExtdBothDirectoryInformation  uint8 = 79
	FileIdAllExtdDirectoryInformation     uint8 = 80
	FileIdAllExtdBothDirectoryInformation uint8 = 81
)

// Filesystem information classes ([MS-FSCC] 2.5).
const (
	FileFsVolumeInformation      uint8 = 1
	FileFsLabelInformation       uint8 = 2
	FileFsSizeInformation        uint8 = 3
	FileFsDeviceInformation      uint8 = 4
	FileFsAttributeInformation   uint8 = 5
	FileFsControlInformation     uint8 = 6
	FileFsFullSizeInformation    uint8 = 7
	FileFsObjectIdInformation    uint8 = 8
	FileFsDriverPathInformation  uint8 = 9
	FileFsVolumeFlagsInformation uint8 = 10
	FileFsSectorSizeInformation  uint8 = 11
)

// Security information flags: AdditionalInformation of QUERY_INFO/SET_INFO
// with InfoType SMB2_0_INFO_SECURITY ([MS-SMB2] 2.2.37, [MS-DTYP] 2.4.7).
const (
	OwnerSecurityInformation     uint32 = 0x00000001
	GroupSecurityInformation     uint32 = 0x00000002
	DACLSecurityInformation      uint32 = 0x00000004
	SACLSecurityInformation      uint32 = 0x00000008
	LabelSecurityInformation     uint32 = 0x00000010
	AttributeSecurityInformation uint32 = 0x00000020
	ScopeSecurityInformation     uint32 = 0x00000040
	BackupSecurityInformation    uint32 = 0x00010000
)

// File attributes ([MS-FSCC] 2.6).
const (
	FileAttributeReadonly           uint32 = 0x00000001
	FileAttributeHidden             uint32 = 0x00000002
	FileAttributeSystem             uint32 = 0x00000004
	FileAttributeDirectory          uint32 = 0x00000010
	FileAttributeArchive            uint32 = 0x00000020
	FileAttributeNormal             uint32 = 0x00000080
	FileAttributeTemporary          uint32 = 0x00000100
	FileAttributeSparseFile         uint32 = 0x00000200
	FileAttributeReparsePoint       uint32 = 0x00000400
	FileAttributeCompressed         uint32 = 0x00000800
	FileAttributeOffline            uint32 = 0x00001000
	FileAttributeNotContentIndexed  uint32 = 0x00002000
	FileAttributeEncrypted          uint32 = 0x00004000
	FileAttributeIntegrityStream    uint32 = 0x00008000
	FileAttributeNoScrubData        uint32 = 0x00020000
	FileAttributeRecallOnOpen       uint32 = 0x00040000
	FileAttributePinned             uint32 = 0x00080000
	FileAttributeUnpinned           uint32 = 0x00100000
	FileAttributeRecallOnDataAccess uint32 = 0x00400000
)

// Filesystem attribute flags of FILE_FS_ATTRIBUTE_INFORMATION
// ([MS-FSCC] 2.5).
const (
	FileCaseSensitiveSearch        uint32 = 0x00000001
	FileCasePreservedNames         uint32 = 0x00000002
	FileUnicodeOnDisk              uint32 = 0x00000004
	FilePersistentACLs             uint32 = 0x00000008
	FileFileCompression            uint32 = 0x00000010
	FileVolumeQuotas               uint32 = 0x00000020
	FileSupportsSparseFiles        uint32 = 0x00000040
	FileSupportsReparsePoints      uint32 = 0x00000080
	FileSupportsRemoteStorage      uint32 = 0x00000100
	FileReturnsCleanupResultInfo   uint32 = 0x00000200
	FileSupportsPosixUnlinkRename  uint32 = 0x00000400
	FileVolumeIsCompressed         uint32 = 0x00008000
	FileSupportsObjectIDs          uint32 = 0x00010000
	FileSupportsEncryption         uint32 = 0x00020000
	FileNamedStreams               uint32 = 0x00040000
	FileReadOnlyVolume             uint32 = 0x00080000
	FileSequentialWriteOnce        uint32 = 0x00100000
	FileSupportsTransactions       uint32 = 0x00200000
	FileSupportsHardLinks          uint32 = 0x00400000
	FileSupportsExtendedAttributes uint32 = 0x00800000
	FileSupportsOpenByFileID       uint32 = 0x01000000
	FileSupportsUSNJournal         uint32 = 0x02000000
	FileSupportsIntegrityStreams   uint32 = 0x04000000
	FileSupportsBlockRefcounting   uint32 = 0x08000000
	FileSupportsSparseVDL          uint32 = 0x10000000
)

// Device types and characteristics of FILE_FS_DEVICE_INFORMATION
// ([MS-FSCC] 2.5).
const (
	FileDeviceCDROM     uint32 = 0x00000002
	FileDeviceDisk      uint32 = 0x00000007
	FileDeviceNamedPipe uint32 = 0x00000011

	FileRemovableMedia   uint32 = 0x00000001
	FileReadOnlyDevice   uint32 = 0x00000002
	FileRemoteDevice     uint32 = 0x00000010
	FileDeviceIsMounted  uint32 = 0x00000020
	FileVirtualVolume    uint32 = 0x00000040
	FileDeviceSecureOpen uint32 = 0x00000100
)

// Reparse tags ([MS-FSCC] 2.1) most often seen by a file server.
const (
	IOReparseTagMountPoint uint32 = 0xA0000003
	IOReparseTagSymlink    uint32 = 0xA000000C
	IOReparseTagNFS        uint32 = 0x80000014
)
