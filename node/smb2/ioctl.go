package smb2

// IoctlIsFsctl marks the request as an FSCTL ([MS-SMB2] 2.2.31).
const IoctlIsFsctl uint32 = 0x00000001

// Control codes SMB2 IOCTL carries ([MS-SMB2] 2.2.31, [MS-FSCC] 2.3).
const (
	FsctlDfsGetReferrals           uint32 = 0x00060194
	FsctlDfsGetReferralsEx         uint32 = 0x000601B0
	FsctlPipePeek                  uint32 = 0x0011400C
	FsctlPipeWait                  uint32 = 0x00110018
	FsctlPipeTransceive            uint32 = 0x0011C017
	FsctlSrvCopyChunk              uint32 = 0x001440F2
	FsctlSrvCopyChunkWrite         uint32 = 0x001480F2
	FsctlSrvEnumerateSnapshots     uint32 = 0x00144064
	FsctlSrvRequestResumeKey       uint32 = 0x00140078
	FsctlSrvReadHash               uint32 = 0x001441BB
	FsctlLMRRequestResiliency      uint32 = 0x001401D4
	FsctlQueryNetworkInterfaceInfo uint32 = 0x001401FC
	FsctlValidateNegotiateInfo     uint32 = 0x00140204
	FsctlGetCompression            uint32 = 0x0009003C
	FsctlGetObjectID               uint32 = 0x0009009C
	FsctlSetReparsePoint           uint32 = 0x000900A4
	FsctlGetReparsePoint           uint32 = 0x000900A8
	FsctlDeleteReparsePoint        uint32 = 0x000900AC
	FsctlCreateOrGetObjectID       uint32 = 0x000900C0
	FsctlSetSparse                 uint32 = 0x000900C4
	FsctlSetZeroData               uint32 = 0x000980C8
	FsctlQueryAllocatedRanges      uint32 = 0x000940CF
	FsctlSetCompression            uint32 = 0x0009C040
	FsctlGetIntegrityInformation   uint32 = 0x0009027C
	FsctlSetIntegrityInformation   uint32 = 0x0009C280
	FsctlQueryFileRegions          uint32 = 0x00090284
	FsctlFileLevelTrim             uint32 = 0x00098208
	FsctlOffloadRead               uint32 = 0x00094264
	FsctlDuplicateExtentsToFile    uint32 = 0x00098344

	// FsctlSmbtortureForceUnackedTimeout is Samba's test-only
	// FSCTL_SMBTORTURE_FORCE_UNACKED_TIMEOUT (libcli/smb/smb_constants.h),
	// with which smbtorture simulates a channel that stopped answering.
	FsctlSmbtortureForceUnackedTimeout uint32 = 0x83848003
	// FsctlSmbtortureFspAsyncSleep is Samba's FSCTL_SMBTORTURE_FSP_ASYNC_SLEEP:
	// an IOCTL on a handle that goes async for a given number of
	// milliseconds (smbtorture smb2.ioctl.bug14769).
	FsctlSmbtortureFspAsyncSleep uint32 = 0x83848043
)

// IoctlRequest is SMB2 IOCTL Request ([MS-SMB2] 2.2.31).
type IoctlRequest struct {
	CtlCode           uint32
	FileID            FileID
	Input             []byte
	MaxInputResponse  uint32
	Output            []byte // clients send none; decoded for completeness
	MaxOutputResponse uint32
	Flags             uint32
}

const (
	ioctlRequestStructSize = 57
	ioctlRequestFixed      = 56
)

// Decode parses the request from msg, the whole PDU.
func (r *IoctlRequest) Decode(msg []byte) error {
	b, err := fixedBody(msg, ioctlRequestStructSize)
	if err != nil {
		return err
	}
	r.CtlCode = le.Uint32(b[4:])
	r.FileID = DecodeFileID(b[8:])
	lo := HeaderSize + ioctlRequestFixed
	if r.Input, err = span(msg, le.Uint32(b[24:]), le.Uint32(b[28:]), lo); err != nil {
		return err
	}
	r.MaxInputResponse = le.Uint32(b[32:])
	if r.Output, err = span(msg, le.Uint32(b[36:]), le.Uint32(b[40:]), lo); err != nil {
		return err
	}
	r.MaxOutputResponse = le.Uint32(b[44:])
	r.Flags = le.Uint32(b[48:])
	return nil
}

// Size returns the encoded body size.
func (r *IoctlRequest) Size() int {
	if len(r.Output) == 0 {
		return bodySize(ioctlRequestStructSize, len(r.Input))
	}
	return align8(ioctlRequestFixed+len(r.Input)) + len(r.Output)
}

// Encode writes the body into b[:r.Size()].
func (r *IoctlRequest) Encode(b []byte) {
	put16(b, ioctlRequestStructSize)
	put16(b[2:], 0)
	put32(b[4:], r.CtlCode)
	r.FileID.Encode(b[8:])
	in, nIn := putBuffer(b, ioctlRequestFixed, r.Input)
	put32(b[24:], in)
	put32(b[28:], nIn)
	put32(b[32:], r.MaxInputResponse)
	put64(b[36:], 0)
	put32(b[44:], r.MaxOutputResponse)
	put32(b[48:], r.Flags)
	put32(b[52:], 0)
	p := ioctlRequestFixed + len(r.Input)
	if len(r.Output) > 0 {
		q := align8(p)
		zero(b[p:q])
		out, nOut := putBuffer(b, q, r.Output)
		put32(b[36:], out)
		put32(b[40:], nOut)
	} else if len(r.Input) == 0 {
		b[p] = 0
	}
}

// IoctlResponse is SMB2 IOCTL Response ([MS-SMB2] 2.2.32).
type IoctlResponse struct {
	CtlCode uint32
	FileID  FileID
	Input   []byte
	Output  []byte
	Flags   uint32
}

const (
	ioctlResponseStructSize = 49
	ioctlResponseFixed      = 48
)

// Size returns the encoded body size.
func (r *IoctlResponse) Size() int {
	if len(r.Output) == 0 {
		return bodySize(ioctlResponseStructSize, len(r.Input))
	}
	return align8(ioctlResponseFixed+len(r.Input)) + len(r.Output)
}

// Encode writes the body into b[:r.Size()]. Like Windows, the offsets point
// at 0x70 (and after the aligned input) even for empty buffers.
func (r *IoctlResponse) Encode(b []byte) {
	put16(b, ioctlResponseStructSize)
	put16(b[2:], 0)
	put32(b[4:], r.CtlCode)
	r.FileID.Encode(b[8:])
	in, nIn := putBuffer(b, ioctlResponseFixed, r.Input)
	put32(b[24:], in)
	put32(b[28:], nIn)
	p := ioctlResponseFixed + len(r.Input)
	if len(r.Output) > 0 {
		q := align8(p)
		zero(b[p:q])
		p = q
	}
	out, nOut := putBuffer(b, p, r.Output)
	put32(b[32:], out)
	put32(b[36:], nOut)
	put32(b[40:], r.Flags)
	put32(b[44:], 0)
	if nIn+nOut == 0 {
		b[ioctlResponseFixed] = 0
	}
}

// Decode parses an IOCTL response from msg, the whole PDU.
func (r *IoctlResponse) Decode(msg []byte) error {
	b, err := fixedBody(msg, ioctlResponseStructSize)
	if err != nil {
		return err
	}
	r.CtlCode = le.Uint32(b[4:])
	r.FileID = DecodeFileID(b[8:])
	lo := HeaderSize + ioctlResponseFixed
	if r.Input, err = span(msg, le.Uint32(b[24:]), le.Uint32(b[28:]), lo); err != nil {
		return err
	}
	if r.Output, err = span(msg, le.Uint32(b[32:]), le.Uint32(b[36:]), lo); err != nil {
		return err
	}
	r.Flags = le.Uint32(b[40:])
	return nil
}
