package fscc

import "github.com/smbcluster/smbcluster/node/smb2/utf16le"

// FsVolumeInformation is FILE_FS_VOLUME_INFORMATION ([MS-FSCC] 2.5):
// VolumeCreationTime(8) VolumeSerialNumber(4) VolumeLabelLength(4)
// SupportsObjects(1) Reserved(1) VolumeLabel.
type FsVolumeInformation struct {
	VolumeCreationTime uint64
	VolumeSerialNumber uint32
	SupportsObjects    bool
	VolumeLabel        string
}

func (i *FsVolumeInformation) Size() int { return 18 + utf16le.Len(i.VolumeLabel) }

func (i *FsVolumeInformation) Encode(b []byte) {
	le.PutUint64(b[0:], i.VolumeCreationTime)
	le.PutUint32(b[8:], i.VolumeSerialNumber)
	le.PutUint32(b[12:], uint32(utf16le.Encode(b[18:], i.VolumeLabel)))
	b[16] = boolByte(i.SupportsObjects)
	b[17] = 0
}

func (i *FsVolumeInformation) Decode(b []byte) error {
	if len(b) < 18 {
		return ErrShortBuffer
	}
	n := uint64(le.Uint32(b[12:]))
	if n > uint64(len(b)-18) {
		return ErrShortBuffer
	}
	s, err := utf16le.Decode(b[18 : 18+n])
	if err != nil {
		return ErrInvalid
	}
	i.VolumeCreationTime, i.VolumeSerialNumber = le.Uint64(b), le.Uint32(b[8:])
	i.SupportsObjects, i.VolumeLabel = b[16] != 0, s
	return nil
}

// FsLabelInformation is FILE_FS_LABEL_INFORMATION ([MS-FSCC] 2.5),
// laid out like FILE_NAME_INFORMATION.
type FsLabelInformation = NameInformation

// FsSizeInformation is FILE_FS_SIZE_INFORMATION ([MS-FSCC] 2.5).
type FsSizeInformation struct {
	TotalAllocationUnits     int64
	AvailableAllocationUnits int64
	SectorsPerAllocationUnit uint32
	BytesPerSector           uint32
}

func (i *FsSizeInformation) Size() int { return 24 }

func (i *FsSizeInformation) Encode(b []byte) {
	_ = b[23]
	le.PutUint64(b[0:], uint64(i.TotalAllocationUnits))
	le.PutUint64(b[8:], uint64(i.AvailableAllocationUnits))
	le.PutUint32(b[16:], i.SectorsPerAllocationUnit)
	le.PutUint32(b[20:], i.BytesPerSector)
}

// FsFullSizeInformation is FILE_FS_FULL_SIZE_INFORMATION ([MS-FSCC] 2.5).
type FsFullSizeInformation struct {
	TotalAllocationUnits           int64
	CallerAvailableAllocationUnits int64
	ActualAvailableAllocationUnits int64
	SectorsPerAllocationUnit       uint32
	BytesPerSector                 uint32
}

func (i *FsFullSizeInformation) Size() int { return 32 }

func (i *FsFullSizeInformation) Encode(b []byte) {
	_ = b[31]
	le.PutUint64(b[0:], uint64(i.TotalAllocationUnits))
	le.PutUint64(b[8:], uint64(i.CallerAvailableAllocationUnits))
	le.PutUint64(b[16:], uint64(i.ActualAvailableAllocationUnits))
	le.PutUint32(b[24:], i.SectorsPerAllocationUnit)
	le.PutUint32(b[28:], i.BytesPerSector)
}

// FsDeviceInformation is FILE_FS_DEVICE_INFORMATION ([MS-FSCC] 2.5).
type FsDeviceInformation struct {
	DeviceType      uint32 // FileDeviceDisk
	Characteristics uint32
}

func (i *FsDeviceInformation) Size() int { return 8 }

func (i *FsDeviceInformation) Encode(b []byte) {
	le.PutUint32(b[0:], i.DeviceType)
	le.PutUint32(b[4:], i.Characteristics)
}

// FsAttributeInformation is FILE_FS_ATTRIBUTE_INFORMATION ([MS-FSCC] 2.5):
// FileSystemAttributes(4) MaximumComponentNameLength(4)
// FileSystemNameLength(4) FileSystemName.
type FsAttributeInformation struct {
	FileSystemAttributes       uint32
	MaximumComponentNameLength uint32
	FileSystemName             string
}

func (i *FsAttributeInformation) Size() int { return 12 + utf16le.Len(i.FileSystemName) }

func (i *FsAttributeInformation) Encode(b []byte) {
	le.PutUint32(b[0:], i.FileSystemAttributes)
	le.PutUint32(b[4:], i.MaximumComponentNameLength)
	le.PutUint32(b[8:], uint32(utf16le.Encode(b[12:], i.FileSystemName)))
}

func (i *FsAttributeInformation) Decode(b []byte) error {
	if len(b) < 12 {
		return ErrShortBuffer
	}
	s, err := decodeLenName(b, 8)
	if err != nil {
		return err
	}
	i.FileSystemAttributes, i.MaximumComponentNameLength, i.FileSystemName = le.Uint32(b), le.Uint32(b[4:]), s
	return nil
}

// FsSectorSizeInformation is FILE_FS_SECTOR_SIZE_INFORMATION
// ([MS-FSCC] 2.5), 28 bytes.
type FsSectorSizeInformation struct {
	LogicalBytesPerSector                                 uint32
	PhysicalBytesPerSectorForAtomicity                    uint32
	PhysicalBytesPerSectorForPerformance                  uint32
	FileSystemEffectivePhysicalBytesPerSectorForAtomicity uint32
	Flags                                                 uint32
	ByteOffsetForSectorAlignment                          uint32
	ByteOffsetForPartitionAlignment                       uint32
}

// Flags of FILE_FS_SECTOR_SIZE_INFORMATION.
const (
	SSInfoFlagsAlignedDevice            uint32 = 0x00000001
	SSInfoFlagsPartitionAlignedOnDevice uint32 = 0x00000002
	SSInfoFlagsNoSeekPenalty            uint32 = 0x00000004
	SSInfoFlagsTrimEnabled              uint32 = 0x00000008
	SSInfoOffsetUnknown                 uint32 = 0xFFFFFFFF
)

func (i *FsSectorSizeInformation) Size() int { return 28 }

func (i *FsSectorSizeInformation) Encode(b []byte) {
	_ = b[27]
	for k, v := range [...]uint32{i.LogicalBytesPerSector, i.PhysicalBytesPerSectorForAtomicity,
		i.PhysicalBytesPerSectorForPerformance, i.FileSystemEffectivePhysicalBytesPerSectorForAtomicity,
		i.Flags, i.ByteOffsetForSectorAlignment, i.ByteOffsetForPartitionAlignment} {
		le.PutUint32(b[4*k:], v)
	}
}

// FsObjectIdInformation is FILE_FS_OBJECTID_INFORMATION ([MS-FSCC] 2.5).
type FsObjectIdInformation struct {
	ObjectID     [16]byte
	ExtendedInfo [48]byte
}

func (i *FsObjectIdInformation) Size() int { return 64 }

func (i *FsObjectIdInformation) Encode(b []byte) {
	copy(b[0:16], i.ObjectID[:])
	copy(b[16:64], i.ExtendedInfo[:])
}

func (i *FsObjectIdInformation) Decode(b []byte) error {
	if len(b) < 64 {
		return ErrShortBuffer
	}
	copy(i.ObjectID[:], b[0:16])
	copy(i.ExtendedInfo[:], b[16:64])
	return nil
}

// FsControlInformation is FILE_FS_CONTROL_INFORMATION ([MS-FSCC] 2.5),
// 48 bytes.
type FsControlInformation struct {
	FreeSpaceStartFiltering int64
	FreeSpaceThreshold      int64
	FreeSpaceStopFiltering  int64
	DefaultQuotaThreshold   uint64
	DefaultQuotaLimit       uint64
	FileSystemControlFlags  uint32
}

func (i *FsControlInformation) Size() int { return 48 }

func (i *FsControlInformation) Encode(b []byte) {
	_ = b[47]
	le.PutUint64(b[0:], uint64(i.FreeSpaceStartFiltering))
	le.PutUint64(b[8:], uint64(i.FreeSpaceThreshold))
	le.PutUint64(b[16:], uint64(i.FreeSpaceStopFiltering))
	le.PutUint64(b[24:], i.DefaultQuotaThreshold)
	le.PutUint64(b[32:], i.DefaultQuotaLimit)
	le.PutUint32(b[40:], i.FileSystemControlFlags)
	le.PutUint32(b[44:], 0) // Padding
}

func (i *FsControlInformation) Decode(b []byte) error {
	if len(b) < 48 {
		return ErrShortBuffer
	}
	i.FreeSpaceStartFiltering = int64(le.Uint64(b[0:]))
	i.FreeSpaceThreshold = int64(le.Uint64(b[8:]))
	i.FreeSpaceStopFiltering = int64(le.Uint64(b[16:]))
	i.DefaultQuotaThreshold = le.Uint64(b[24:])
	i.DefaultQuotaLimit = le.Uint64(b[32:])
	i.FileSystemControlFlags = le.Uint32(b[40:])
	return nil
}
