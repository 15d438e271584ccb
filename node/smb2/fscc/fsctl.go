package fscc

import (
	"net"

	"github.com/smbcluster/smbcluster/node/smb2/utf16le"
)

// FSCTL and IOCTL codes carried in SMB2 IOCTL CtlCode ([MS-SMB2] 2.2.31,
// [MS-FSCC] 2.3).
const (
	FsctlDfsGetReferrals           uint32 = 0x00060194
	FsctlDfsGetReferralsEx         uint32 = 0x000601B0
	FsctlPipePeek                  uint32 = 0x0011400C
	FsctlPipeWait                  uint32 = 0x00110018
	FsctlPipeTransceive            uint32 = 0x0011C017
	FsctlSrvCopychunk              uint32 = 0x001440F2
	FsctlSrvCopychunkWrite         uint32 = 0x001480F2
	FsctlSrvEnumerateSnapshots     uint32 = 0x00144064
	FsctlSrvRequestResumeKey       uint32 = 0x00140078
	FsctlSrvReadHash               uint32 = 0x001441BB
	FsctlLmrRequestResiliency      uint32 = 0x001401D4
	FsctlQueryNetworkInterfaceInfo uint32 = 0x001401FC
	FsctlValidateNegotiateInfo     uint32 = 0x00140204
	FsctlSetReparsePoint           uint32 = 0x000900A4
	FsctlGetReparsePoint           uint32 = 0x000900A8
	FsctlDeleteReparsePoint        uint32 = 0x000900AC
	FsctlFileLevelTrim             uint32 = 0x00098208
	FsctlIsPathnameValid           uint32 = 0x0009002C
	FsctlGetCompression            uint32 = 0x0009003C
	FsctlSetCompression            uint32 = 0x0009C040
	FsctlGetObjectID               uint32 = 0x0009009C
	FsctlCreateOrGetObjectID       uint32 = 0x000900C0
	FsctlSetSparse                 uint32 = 0x000900C4
	FsctlSetZeroData               uint32 = 0x000980C8
	FsctlQueryAllocatedRanges      uint32 = 0x000940CF
	FsctlGetIntegrityInformation   uint32 = 0x0009027C
	FsctlQueryFileRegions          uint32 = 0x00090284
	FsctlDuplicateExtentsToFile    uint32 = 0x00098344
	FsctlOffloadRead               uint32 = 0x00094264
	FsctlOffloadWrite              uint32 = 0x00098268
)

// ValidateNegotiateInfoRequest is VALIDATE_NEGOTIATE_INFO ([MS-SMB2]
// 2.2.31.4): Capabilities(4) Guid(16) SecurityMode(2) DialectCount(2)
// Dialects.
type ValidateNegotiateInfoRequest struct {
	Capabilities uint32
	GUID         [16]byte
	SecurityMode uint16
	Dialects     []uint16
}

func (r *ValidateNegotiateInfoRequest) Size() int { return 24 + 2*len(r.Dialects) }

func (r *ValidateNegotiateInfoRequest) Encode(b []byte) {
	le.PutUint32(b[0:], r.Capabilities)
	copy(b[4:20], r.GUID[:])
	le.PutUint16(b[20:], r.SecurityMode)
	le.PutUint16(b[22:], uint16(len(r.Dialects)))
	for i, d := range r.Dialects {
		le.PutUint16(b[24+2*i:], d)
	}
}

// Decode parses the IOCTL input; DialectCount must be non-zero and fit.
func (r *ValidateNegotiateInfoRequest) Decode(b []byte) error {
	if len(b) < 24 {
		return ErrShortBuffer
	}
	n := int(le.Uint16(b[22:]))
	if n == 0 {
		return ErrInvalid
	}
	if len(b) < 24+2*n {
		return ErrShortBuffer
	}
	r.Capabilities = le.Uint32(b[0:])
	copy(r.GUID[:], b[4:20])
	r.SecurityMode = le.Uint16(b[20:])
	r.Dialects = make([]uint16, n)
	for i := range n {
		r.Dialects[i] = le.Uint16(b[24+2*i:])
	}
	return nil
}

// ValidateNegotiateInfoResponse is VALIDATE_NEGOTIATE_INFO Response
// ([MS-SMB2] 2.2.32.6), 24 bytes.
type ValidateNegotiateInfoResponse struct {
	Capabilities uint32
	GUID         [16]byte
	SecurityMode uint16
	Dialect      uint16
}

func (r *ValidateNegotiateInfoResponse) Size() int { return 24 }

func (r *ValidateNegotiateInfoResponse) Encode(b []byte) {
	le.PutUint32(b[0:], r.Capabilities)
	copy(b[4:20], r.GUID[:])
	le.PutUint16(b[20:], r.SecurityMode)
	le.PutUint16(b[22:], r.Dialect)
}

func (r *ValidateNegotiateInfoResponse) Decode(b []byte) error {
	if len(b) < 24 {
		return ErrShortBuffer
	}
	r.Capabilities = le.Uint32(b[0:])
	copy(r.GUID[:], b[4:20])
	r.SecurityMode, r.Dialect = le.Uint16(b[20:]), le.Uint16(b[22:])
	return nil
}

// NETWORK_INTERFACE_INFO capabilities ([MS-SMB2] 2.2.32.5).
const (
	RSSCapable  uint32 = 0x00000001
	RDMACapable uint32 = 0x00000002
)

// NetworkInterfaceInfo is one NETWORK_INTERFACE_INFO entry ([MS-SMB2]
// 2.2.32.5): Next(4) IfIndex(4) Capability(4) Reserved(4) LinkSpeed(8)
// SockAddr_Storage(128).
type NetworkInterfaceInfo struct {
	IfIndex    uint32
	Capability uint32
	LinkSpeed  uint64 // bits per second
	IP         net.IP
}

// NetworkInterfaceInfoSize is the size of one entry.
const NetworkInterfaceInfoSize = 152

// SOCKADDR_STORAGE families.
const (
	afInet  = 0x0002 // InterNetwork
	afInet6 = 0x0017 // InterNetworkV6
)

// EncodeNetworkInterfaces encodes the FSCTL_QUERY_NETWORK_INTERFACE_INFO
// output: one 152-byte entry per interface, Next chained, the last 0.
func EncodeNetworkInterfaces(ifs []NetworkInterfaceInfo) []byte {
	b := make([]byte, NetworkInterfaceInfoSize*len(ifs))
	for i := range ifs {
		e := b[i*NetworkInterfaceInfoSize : (i+1)*NetworkInterfaceInfoSize]
		if i < len(ifs)-1 {
			le.PutUint32(e[0:], NetworkInterfaceInfoSize)
		}
		le.PutUint32(e[4:], ifs[i].IfIndex)
		le.PutUint32(e[8:], ifs[i].Capability)
		le.PutUint64(e[16:], ifs[i].LinkSpeed)
		sa := e[24:]
		if ip4 := ifs[i].IP.To4(); ip4 != nil {
			le.PutUint16(sa[0:], afInet) // Port(2) 0, IPv4Address(4), Reserved(8)
			copy(sa[4:8], ip4)
		} else if ip6 := ifs[i].IP.To16(); ip6 != nil {
			le.PutUint16(sa[0:], afInet6) // Port(2) 0, FlowInfo(4) 0, IPv6Address(16), ScopeId(4) 0
			copy(sa[8:24], ip6)
		}
	}
	return b
}

// DecodeNetworkInterfaces parses a NETWORK_INTERFACE_INFO chain.
func DecodeNetworkInterfaces(b []byte) ([]NetworkInterfaceInfo, error) {
	var out []NetworkInterfaceInfo
	for off := 0; ; {
		if len(b)-off < NetworkInterfaceInfoSize {
			return nil, ErrShortBuffer
		}
		e := b[off:]
		ni := NetworkInterfaceInfo{IfIndex: le.Uint32(e[4:]), Capability: le.Uint32(e[8:]), LinkSpeed: le.Uint64(e[16:])}
		switch le.Uint16(e[24:]) {
		case afInet:
			ni.IP = net.IPv4(e[28], e[29], e[30], e[31])
		case afInet6:
			ni.IP = append(net.IP(nil), e[32:48]...)
		default:
			return nil, ErrInvalid
		}
		out = append(out, ni)
		next := int(le.Uint32(e))
		if next == 0 {
			return out, nil
		}
		if next < NetworkInterfaceInfoSize || next%8 != 0 {
			return nil, ErrInvalid
		}
		off += next
	}
}

// SnapshotArray is SRV_SNAPSHOT_ARRAY ([MS-SMB2] 2.2.32.2):
// NumberOfSnapShots(4) NumberOfSnapShotsReturned(4) SnapShotArraySize(4)
// SnapShots, each "@GMT-YYYY.MM.DD-HH.MM.SS" NUL-terminated UTF-16, the
// array ending with an extra NUL. With HeaderOnly (the output buffer
// cannot hold the array) only the 12-byte header is written, with
// NumberOfSnapShotsReturned 0 and SnapShotArraySize still the full size.
type SnapshotArray struct {
	SnapShots  []string
	HeaderOnly bool
}

// ArraySize is the size of the SnapShots field when sent in full.
func (a *SnapshotArray) ArraySize() int {
	n := 2
	for _, s := range a.SnapShots {
		n += utf16le.Len(s) + 2
	}
	return n
}

func (a *SnapshotArray) Size() int {
	if a.HeaderOnly {
		return 12
	}
	return 12 + a.ArraySize()
}

func (a *SnapshotArray) Encode(b []byte) {
	le.PutUint32(b[0:], uint32(len(a.SnapShots)))
	le.PutUint32(b[8:], uint32(a.ArraySize()))
	if a.HeaderOnly {
		le.PutUint32(b[4:], 0)
		return
	}
	le.PutUint32(b[4:], uint32(len(a.SnapShots)))
	off := 12
	for _, s := range a.SnapShots {
		off += utf16le.Encode(b[off:], s)
		b[off], b[off+1] = 0, 0
		off += 2
	}
	b[off], b[off+1] = 0, 0
}

// ResumeKeyResponse is SRV_REQUEST_RESUME_KEY Response ([MS-SMB2]
// 2.2.32.3): ResumeKey(24) ContextLength(4) = 0 and 4 bytes of Context
// padding, 32 bytes in all as Windows sends ([MS-SMB2] 3.3.5.15.5).
type ResumeKeyResponse struct{ ResumeKey [24]byte }

func (r *ResumeKeyResponse) Size() int { return 32 }

func (r *ResumeKeyResponse) Encode(b []byte) {
	copy(b[0:24], r.ResumeKey[:])
	clear(b[24:32])
}

func (r *ResumeKeyResponse) Decode(b []byte) error {
	if len(b) < 28 {
		return ErrShortBuffer
	}
	copy(r.ResumeKey[:], b)
	return nil
}

// Server-side copy limits Windows advertises ([MS-SMB2] 3.3.3).
const (
	CopychunkMaxChunks    = 256
	CopychunkMaxChunkSize = 1 << 20
	CopychunkMaxDataSize  = 16 << 20
)

// Chunk is one SRV_COPYCHUNK ([MS-SMB2] 2.2.31.1.1).
type Chunk struct {
	SourceOffset int64
	TargetOffset int64
	Length       uint32
}

// CopychunkCopy is SRV_COPYCHUNK_COPY ([MS-SMB2] 2.2.31.1): SourceKey(24)
// ChunkCount(4) Reserved(4) Chunks(24 each).
type CopychunkCopy struct {
	SourceKey [24]byte
	Chunks    []Chunk
}

func (c *CopychunkCopy) Size() int { return 32 + 24*len(c.Chunks) }

func (c *CopychunkCopy) Encode(b []byte) {
	copy(b[0:24], c.SourceKey[:])
	le.PutUint32(b[24:], uint32(len(c.Chunks)))
	le.PutUint32(b[28:], 0)
	for i, ch := range c.Chunks {
		e := b[32+24*i:]
		le.PutUint64(e[0:], uint64(ch.SourceOffset))
		le.PutUint64(e[8:], uint64(ch.TargetOffset))
		le.PutUint32(e[16:], ch.Length)
		le.PutUint32(e[20:], 0)
	}
}

// Decode parses the IOCTL input; ChunkCount chunks must fit in b. Limits
// (CopychunkMax*) are the server's to enforce.
func (c *CopychunkCopy) Decode(b []byte) error {
	if len(b) < 32 {
		return ErrShortBuffer
	}
	n := uint64(le.Uint32(b[24:]))
	if n > uint64(len(b)-32)/24 {
		return ErrShortBuffer
	}
	copy(c.SourceKey[:], b)
	c.Chunks = make([]Chunk, n)
	for i := range c.Chunks {
		e := b[32+24*i:]
		c.Chunks[i] = Chunk{int64(le.Uint64(e)), int64(le.Uint64(e[8:])), le.Uint32(e[16:])}
	}
	return nil
}

// CopychunkResponse is SRV_COPYCHUNK_RESPONSE ([MS-SMB2] 2.2.32.1). On
// STATUS_INVALID_PARAMETER it carries the server's limits instead.
type CopychunkResponse struct {
	ChunksWritten     uint32
	ChunkBytesWritten uint32
	TotalBytesWritten uint32
}

func (r *CopychunkResponse) Size() int { return 12 }

func (r *CopychunkResponse) Encode(b []byte) {
	le.PutUint32(b[0:], r.ChunksWritten)
	le.PutUint32(b[4:], r.ChunkBytesWritten)
	le.PutUint32(b[8:], r.TotalBytesWritten)
}

func (r *CopychunkResponse) Decode(b []byte) error {
	if len(b) < 12 {
		return ErrShortBuffer
	}
	r.ChunksWritten, r.ChunkBytesWritten, r.TotalBytesWritten = le.Uint32(b), le.Uint32(b[4:]), le.Uint32(b[8:])
	return nil
}

// FileAllocatedRangeBuffer is FILE_ALLOCATED_RANGE_BUFFER ([MS-FSCC]
// 2.3.52): the input of FSCTL_QUERY_ALLOCATED_RANGES and each element of
// its output.
type FileAllocatedRangeBuffer struct {
	FileOffset int64
	Length     int64
}

func (r *FileAllocatedRangeBuffer) Size() int { return 16 }

func (r *FileAllocatedRangeBuffer) Encode(b []byte) {
	le.PutUint64(b[0:], uint64(r.FileOffset))
	le.PutUint64(b[8:], uint64(r.Length))
}

// Decode parses one range; negative values or an overflowing end are
// invalid ([MS-FSA] 2.1.5.10).
func (r *FileAllocatedRangeBuffer) Decode(b []byte) error {
	if len(b) < 16 {
		return ErrShortBuffer
	}
	r.FileOffset, r.Length = int64(le.Uint64(b)), int64(le.Uint64(b[8:]))
	if r.FileOffset < 0 || r.Length < 0 || r.FileOffset > 1<<63-1-r.Length {
		return ErrInvalid
	}
	return nil
}

// EncodeAllocatedRanges encodes the FSCTL_QUERY_ALLOCATED_RANGES output.
func EncodeAllocatedRanges(rs []FileAllocatedRangeBuffer) []byte {
	b := make([]byte, 16*len(rs))
	for i := range rs {
		rs[i].Encode(b[16*i:])
	}
	return b
}

// DecodeAllocatedRanges parses an array of ranges; len(b) must be a
// multiple of 16.
func DecodeAllocatedRanges(b []byte) ([]FileAllocatedRangeBuffer, error) {
	if len(b)%16 != 0 {
		return nil, ErrInvalid
	}
	rs := make([]FileAllocatedRangeBuffer, len(b)/16)
	for i := range rs {
		if err := rs[i].Decode(b[16*i:]); err != nil {
			return nil, err
		}
	}
	return rs, nil
}

// FileZeroDataInformation is FILE_ZERO_DATA_INFORMATION ([MS-FSCC]
// 2.3.85), the input of FSCTL_SET_ZERO_DATA.
type FileZeroDataInformation struct {
	FileOffset      int64
	BeyondFinalZero int64
}

func (z *FileZeroDataInformation) Size() int { return 16 }

func (z *FileZeroDataInformation) Encode(b []byte) {
	le.PutUint64(b[0:], uint64(z.FileOffset))
	le.PutUint64(b[8:], uint64(z.BeyondFinalZero))
}

// Decode parses the input; negative offsets or FileOffset beyond
// BeyondFinalZero are invalid ([MS-FSA] 2.1.5.10).
func (z *FileZeroDataInformation) Decode(b []byte) error {
	if len(b) < 16 {
		return ErrShortBuffer
	}
	z.FileOffset, z.BeyondFinalZero = int64(le.Uint64(b)), int64(le.Uint64(b[8:]))
	if z.FileOffset < 0 || z.BeyondFinalZero < 0 || z.FileOffset > z.BeyondFinalZero {
		return ErrInvalid
	}
	return nil
}

// DecodeSetSparse parses the optional FILE_SET_SPARSE_BUFFER of
// FSCTL_SET_SPARSE ([MS-FSCC] 2.3): an empty buffer means TRUE.
func DecodeSetSparse(b []byte) bool { return len(b) == 0 || b[0] != 0 }

// ObjectIDBuffer is FILE_OBJECTID_BUFFER, type 1 ([MS-FSCC] 2.1),
// returned by FSCTL_CREATE_OR_GET_OBJECT_ID and FSCTL_GET_OBJECT_ID.
type ObjectIDBuffer struct {
	ObjectID      [16]byte
	BirthVolumeID [16]byte
	BirthObjectID [16]byte
	DomainID      [16]byte
}

func (o *ObjectIDBuffer) Size() int { return 64 }

func (o *ObjectIDBuffer) Encode(b []byte) {
	copy(b[0:16], o.ObjectID[:])
	copy(b[16:32], o.BirthVolumeID[:])
	copy(b[32:48], o.BirthObjectID[:])
	copy(b[48:64], o.DomainID[:])
}

// PipeWaitRequest is FSCTL_PIPE_WAIT_REQUEST ([MS-FSCC] 2.3):
// Timeout(8) NameLength(4) TimeoutSpecified(1) Padding(1) Name.
type PipeWaitRequest struct {
	Timeout          int64
	TimeoutSpecified bool
	Name             string
}

func (p *PipeWaitRequest) Decode(b []byte) error {
	if len(b) < 14 {
		return ErrShortBuffer
	}
	n := uint64(le.Uint32(b[8:]))
	if n > uint64(len(b)-14) {
		return ErrShortBuffer
	}
	s, err := utf16le.Decode(b[14 : 14+n])
	if err != nil {
		return ErrInvalid
	}
	p.Timeout, p.TimeoutSpecified, p.Name = int64(le.Uint64(b)), b[12] != 0, s
	return nil
}
