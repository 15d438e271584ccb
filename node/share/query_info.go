package share

import (
	"encoding/binary"
	"errors"
	"strings"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
	"github.com/smbcluster/smbcluster/node/vfs"
)

// encoder is an information class structure of fscc.
type encoder interface {
	Size() int
	Encode(b []byte)
}

// infoClass describes how a class answers a short output buffer: min is
// the size of the C structure (what Windows requires before anything is
// returned, STATUS_INFO_LENGTH_MISMATCH below it); variable classes return
// what fits with STATUS_BUFFER_OVERFLOW ([MS-SMB2] 3.3.5.20.1, [MS-FSA]
// 2.1.5.11).
type infoClass struct {
	min      int
	variable bool
	access   uint32 // access the open needs, 0 for none
}

// fileClasses are the FileInformationClass values QUERY_INFO serves, with
// the structure sizes smbtorture smb2.getinfo.qfile_buffercheck expects.
var fileClasses = map[uint8]infoClass{
	fscc.FileBasicInformation:          {40, false, smb2.FileReadAttributes},
	fscc.FileStandardInformation:       {24, false, 0},
	fscc.FileInternalInformation:       {8, false, 0},
	fscc.FileEaInformation:             {4, false, 0},
	fscc.FileAccessInformation:         {4, false, 0},
	fscc.FileNameInformation:           {8, true, 0},
	fscc.FilePositionInformation:       {8, false, 0},
	fscc.FileModeInformation:           {4, false, 0},
	fscc.FileAlignmentInformation:      {4, false, 0},
	fscc.FileAllInformation:            {104, true, smb2.FileReadAttributes},
	fscc.FileAlternateNameInformation:  {8, true, 0},
	fscc.FileStreamInformation:         {32, true, 0},
	fscc.FileCompressionInformation:    {16, false, 0},
	fscc.FileNetworkOpenInformation:    {56, false, smb2.FileReadAttributes},
	fscc.FileAttributeTagInformation:   {8, false, smb2.FileReadAttributes},
	fscc.FileNormalizedNameInformation: {8, true, 0},
	fscc.FileIdInformation:             {24, false, 0},
	fscc.FileFullEaInformation:         {12, true, smb2.FileReadEA},
}

// QueryInfo handles SMB2 QUERY_INFO on a disk share ([MS-SMB2] 3.3.5.20).
func (o *open) QueryInfo(r *server.Request, req *smb2.QueryInfoRequest) (server.Response, error) {
	switch req.InfoType {
	case smb2.InfoFile:
		if req.FileInfoClass == fscc.FileNormalizedNameInformation && r.Dialect() < smb2.Dialect311 {
			return nil, smb2.StatusNotSupported // SMB 3.1.1 only ([MS-SMB2] 3.3.5.20.1)
		}
		return o.queryFile(req)
	case smb2.InfoFilesystem:
		return o.queryFS(req)
	case smb2.InfoSecurity:
		return o.querySecurity(req)
	case smb2.InfoQuota:
		// Quotas are not kept: like Windows on a volume with quotas
		// disabled ([MS-SMB2] 3.3.5.20.4).
		return nil, smb2.StatusNotSupported
	}
	return nil, smb2.StatusInvalidParameter
}

// fit encodes e for an output buffer of max bytes under the rules of c.
func fit(e encoder, c infoClass, max uint32) (server.Response, error) {
	if uint64(max) < uint64(c.min) {
		return nil, smb2.StatusInfoLengthMismatch
	}
	n := e.Size()
	b := make([]byte, n, n+c.min)
	e.Encode(b)
	if n < c.min {
		b = append(b, make([]byte, c.min-n)...) // the structure's padding
	}
	if uint64(len(b)) > uint64(max) {
		if !c.variable {
			return nil, smb2.StatusInfoLengthMismatch
		}
		return &smb2.QueryInfoResponse{Buffer: b[:max]}, smb2.StatusBufferOverflow
	}
	return &smb2.QueryInfoResponse{Buffer: b}, nil
}

// queryFile serves InfoType SMB2_0_INFO_FILE ([MS-SMB2] 3.3.5.20.1).
func (o *open) queryFile(req *smb2.QueryInfoRequest) (server.Response, error) {
	c, ok := fileClasses[req.FileInfoClass]
	if !ok {
		return nil, smb2.StatusInvalidInfoClass
	}
	if c.access != 0 && o.access&c.access == 0 {
		return nil, smb2.StatusAccessDenied
	}
	if req.FileInfoClass == fscc.FileFullEaInformation {
		return o.queryEAs(req.OutputBufferLength) // ea.go
	}
	fi, err := o.f.Stat()
	if err != nil {
		return nil, err
	}
	fi.AllocationSize = o.allocationSize(fi) // alloc.go
	e, err := o.fileInfo(req.FileInfoClass, fi)
	if err != nil {
		return nil, err
	}
	if e.Size() == 0 && c.variable && req.FileInfoClass == fscc.FileStreamInformation {
		return &smb2.QueryInfoResponse{}, nil // a directory without streams: an empty list
	}
	return fit(e, c, req.OutputBufferLength)
}

// fileInfo builds the structure of one file information class.
func (o *open) fileInfo(class uint8, fi vfs.FileInfo) (encoder, error) {
	switch class {
	case fscc.FileBasicInformation:
		return basicInfo(fi), nil
	case fscc.FileStandardInformation:
		s := o.standardInfo(fi)
		return &s, nil
	case fscc.FileInternalInformation:
		return &fscc.InternalInformation{IndexNumber: fi.FileID}, nil
	case fscc.FileEaInformation:
		return &fscc.EaInformation{EaSize: o.eaSize()}, nil
	case fscc.FileAccessInformation:
		return &fscc.AccessInformation{AccessFlags: o.access}, nil
	case fscc.FileNameInformation:
		return &fscc.NameInformation{FileName: o.wireName()}, nil
	case fscc.FileNormalizedNameInformation:
		// Relative to the share root, without a leading backslash; empty
		// for the root ([MS-FSCC] 2.4.30).
		return &fscc.NameInformation{FileName: o.streamSuffixed(strings.ReplaceAll(o.currentName(), "/", `\`))}, nil
	case fscc.FilePositionInformation:
		return &fscc.PositionInformation{CurrentByteOffset: o.currentPosition()}, nil
	case fscc.FileModeInformation:
		return &fscc.ModeInformation{Mode: o.currentMode()}, nil
	case fscc.FileAlignmentInformation:
		return &fscc.AlignmentInformation{}, nil
	case fscc.FileAllInformation:
		return o.allInfo(fi), nil
	case fscc.FileAlternateNameInformation:
		if o.currentName() == "" {
			return nil, smb2.StatusObjectNameNotFound // the root has no 8.3 name
		}
		return &fscc.NameInformation{FileName: shortName(fi.Name)}, nil
	case fscc.FileStreamInformation:
		return o.streamList(fi)
	case fscc.FileCompressionInformation:
		return &fscc.CompressionInformation{CompressedFileSize: fi.Size}, nil
	case fscc.FileNetworkOpenInformation:
		return &fscc.NetworkOpenInformation{
			CreationTime: fscc.Filetime(fi.CreationTime), LastAccessTime: fscc.Filetime(fi.LastAccessTime),
			LastWriteTime: fscc.Filetime(fi.LastWriteTime), ChangeTime: fscc.Filetime(fi.ChangeTime),
			AllocationSize: fi.AllocationSize, EndOfFile: fi.Size, FileAttributes: attrs(fi),
		}, nil
	case fscc.FileAttributeTagInformation:
		return &fscc.AttributeTagInformation{FileAttributes: attrs(fi)}, nil
	case fscc.FileIdInformation:
		id := &fscc.IdInformation{VolumeSerialNumber: o.d.volumeID}
		binary.LittleEndian.PutUint64(id.FileID[:], fi.FileID)
		return id, nil
	}
	return nil, smb2.StatusInvalidInfoClass
}

func basicInfo(fi vfs.FileInfo) *fscc.BasicInformation {
	return &fscc.BasicInformation{
		CreationTime: fscc.Filetime(fi.CreationTime), LastAccessTime: fscc.Filetime(fi.LastAccessTime),
		LastWriteTime: fscc.Filetime(fi.LastWriteTime), ChangeTime: fscc.Filetime(fi.ChangeTime),
		FileAttributes: attrs(fi),
	}
}

func (o *open) standardInfo(fi vfs.FileInfo) fscc.StandardInformation {
	o.mu.Lock()
	del := o.deleteOnClose
	o.mu.Unlock()
	links := fi.NumLinks
	if links == 0 {
		links = 1
	}
	if del && links > 0 {
		links-- // [MS-FSA] 2.1.5.11.27: links not pending delete
	}
	return fscc.StandardInformation{
		AllocationSize: fi.AllocationSize, EndOfFile: fi.Size, NumberOfLinks: links,
		DeletePending: del, Directory: fi.IsDir,
	}
}

func (o *open) allInfo(fi vfs.FileInfo) *fscc.AllInformation {
	return &fscc.AllInformation{
		Basic:    *basicInfo(fi),
		Standard: o.standardInfo(fi),
		Internal: fscc.InternalInformation{IndexNumber: fi.FileID},
		// EaSize stays 0: directory entries report 0 (reading every
		// file's EAs while listing is too dear), and smbtorture
		// smb2.dir.one wants the two to agree.
		Access:   fscc.AccessInformation{AccessFlags: o.access},
		Position: fscc.PositionInformation{CurrentByteOffset: o.currentPosition()},
		Mode:     fscc.ModeInformation{Mode: o.currentMode()},
		Name:     fscc.NameInformation{FileName: o.wireName()},
	}
}

// attrs returns the attributes to report: FILE_ATTRIBUTE_NORMAL when none.
func attrs(fi vfs.FileInfo) uint32 {
	a := fi.Attributes
	if fi.IsDir {
		a |= vfs.AttrDirectory
		a &^= vfs.AttrNormal
	}
	if a == 0 {
		a = vfs.AttrNormal
	}
	return a
}

// currentName is the open's share-relative vfs name; rename changes it.
func (o *open) currentName() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.name
}

func (o *open) currentPosition() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.position
}

func (o *open) currentMode() uint32 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.mode
}

// wireName is the open's path as FILE_NAME_INFORMATION reports it: from
// the share root, with a leading backslash ([MS-FSCC] 2.4.28).
func (o *open) wireName() string {
	return o.streamSuffixed(`\` + strings.ReplaceAll(o.currentName(), "/", `\`))
}

// streamSuffixed appends ":stream" to a name for a stream open.
func (o *open) streamSuffixed(name string) string {
	if s := o.currentStream(); s != "" {
		return name + ":" + s
	}
	return name
}

// fsClasses are the FsInformationClass values QUERY_INFO serves, with the
// sizes of smbtorture smb2.getinfo.qfs_buffercheck.
var fsClasses = map[uint8]infoClass{
	fscc.FileFsVolumeInformation:     {24, true, 0},
	fscc.FileFsSizeInformation:       {24, false, 0},
	fscc.FileFsDeviceInformation:     {8, false, 0},
	fscc.FileFsAttributeInformation:  {16, true, 0},
	fscc.FileFsControlInformation:    {48, false, 0},
	fscc.FileFsFullSizeInformation:   {32, false, 0},
	fscc.FileFsObjectIdInformation:   {64, false, 0},
	fscc.FileFsSectorSizeInformation: {28, false, 0},
}

// queryFS serves InfoType SMB2_0_INFO_FILESYSTEM ([MS-SMB2] 3.3.5.20.2,
// [MS-FSA] 2.1.5.12).
func (o *open) queryFS(req *smb2.QueryInfoRequest) (server.Response, error) {
	c, ok := fsClasses[req.FileInfoClass]
	if !ok {
		return nil, smb2.StatusInvalidInfoClass
	}
	st, err := o.d.fs.StatFS()
	if err != nil {
		return nil, err
	}
	e, err := o.fsInfo(req.FileInfoClass, st)
	if err != nil {
		return nil, err
	}
	return fit(e, c, req.OutputBufferLength)
}

// sectorSize is the sector size reported to clients.
const sectorSize = 512

// fsInfo builds the structure of one filesystem information class.
func (o *open) fsInfo(class uint8, st vfs.FSInfo) (encoder, error) {
	unit := int64(st.BlockSize)
	if unit < sectorSize {
		unit = sectorSize
	}
	perUnit := uint32(unit / sectorSize)
	switch class {
	case fscc.FileFsVolumeInformation:
		v := &fscc.FsVolumeInformation{VolumeSerialNumber: uint32(o.d.volumeID), VolumeLabel: st.Label}
		if v.VolumeLabel == "" {
			v.VolumeLabel = o.d.name
		}
		if fi, err := o.d.fs.Stat(""); err == nil {
			v.VolumeCreationTime = fscc.Filetime(fi.CreationTime)
		}
		return v, nil
	case fscc.FileFsSizeInformation:
		return &fscc.FsSizeInformation{
			TotalAllocationUnits: st.TotalBytes / unit, AvailableAllocationUnits: st.AvailBytes / unit,
			SectorsPerAllocationUnit: perUnit, BytesPerSector: sectorSize,
		}, nil
	case fscc.FileFsFullSizeInformation:
		return &fscc.FsFullSizeInformation{
			TotalAllocationUnits: st.TotalBytes / unit, CallerAvailableAllocationUnits: st.AvailBytes / unit,
			ActualAvailableAllocationUnits: st.FreeBytes / unit,
			SectorsPerAllocationUnit:       perUnit, BytesPerSector: sectorSize,
		}, nil
	case fscc.FileFsDeviceInformation:
		ch := fscc.FileDeviceIsMounted
		if o.d.readOnly {
			ch |= fscc.FileReadOnlyDevice
		}
		return &fscc.FsDeviceInformation{DeviceType: fscc.FileDeviceDisk, Characteristics: ch}, nil
	case fscc.FileFsAttributeInformation:
		return o.d.fsAttributes(st), nil
	case fscc.FileFsControlInformation:
		// Quotas off: no thresholds, no limits ([MS-FSCC] 2.5.2).
		return &fscc.FsControlInformation{DefaultQuotaThreshold: ^uint64(0), DefaultQuotaLimit: ^uint64(0)}, nil
	case fscc.FileFsObjectIdInformation:
		id := &fscc.FsObjectIdInformation{}
		binary.LittleEndian.PutUint64(id.ObjectID[:], o.d.volumeID)
		binary.LittleEndian.PutUint32(id.ObjectID[8:], uint32(o.d.volumeID))
		return id, nil
	case fscc.FileFsSectorSizeInformation:
		return &fscc.FsSectorSizeInformation{
			LogicalBytesPerSector: sectorSize, PhysicalBytesPerSectorForAtomicity: sectorSize,
			PhysicalBytesPerSectorForPerformance: sectorSize, FileSystemEffectivePhysicalBytesPerSectorForAtomicity: sectorSize,
			Flags: fscc.SSInfoFlagsAlignedDevice | fscc.SSInfoFlagsPartitionAlignedOnDevice,
		}, nil
	}
	return nil, smb2.StatusInvalidInfoClass
}

// fsAttributes is FILE_FS_ATTRIBUTE_INFORMATION: only what the server
// does is claimed (no persistent ACLs, streams or EAs; sparse files are
// kept by every backend, holes where it can punch them, sparse.go).
func (d *Disk) fsAttributes(st vfs.FSInfo) *fscc.FsAttributeInformation {
	a := fscc.FileCasePreservedNames | fscc.FileUnicodeOnDisk | fscc.FileSupportsSparseFiles
	if st.CaseSensitive {
		a |= fscc.FileCaseSensitiveSearch
	}
	if d.readOnly {
		a |= fscc.FileReadOnlyVolume
	}
	name := st.FSName
	if name == "" {
		name = "NTFS"
	}
	maxName := st.MaxNameLen
	if maxName == 0 {
		maxName = 255
	}
	return &fscc.FsAttributeInformation{FileSystemAttributes: a, MaximumComponentNameLength: maxName, FileSystemName: name}
}

// infoError maps an fscc decoding error to its NTSTATUS.
func infoError(err error) error {
	switch {
	case errors.Is(err, fscc.ErrShortBuffer):
		return smb2.StatusInfoLengthMismatch
	case errors.Is(err, fscc.ErrInvalidInfoClass):
		return smb2.StatusInvalidInfoClass
	case errors.Is(err, fscc.ErrInvalid):
		return smb2.StatusInvalidParameter
	}
	return err
}
