package share

import (
	"encoding/binary"
	"errors"
	"io"
	"time"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
)

// Ioctl handles the FSCTLs of SMB2 IOCTL that name a file or directory of
// a disk share ([MS-SMB2] 3.3.5.15); the engine serves those about the
// connection. Unknown codes fail with STATUS_INVALID_DEVICE_REQUEST, as
// Windows and Samba answer for a disk share.
func (o *open) Ioctl(r *server.Request, req *smb2.IoctlRequest) (server.Response, error) {
	switch req.CtlCode {
	case smb2.FsctlSrvEnumerateSnapshots:
		return o.enumerateSnapshots(req)
	case smb2.FsctlSrvRequestResumeKey:
		return o.requestResumeKey(r, req)
	case smb2.FsctlSrvCopyChunk, smb2.FsctlSrvCopyChunkWrite:
		return o.copychunk(r, req)
	case smb2.FsctlSetSparse:
		return o.setSparse(req)
	case smb2.FsctlSetZeroData:
		return o.setZeroData(req)
	case smb2.FsctlQueryAllocatedRanges:
		return o.queryAllocatedRanges(req)
	case smb2.FsctlGetReparsePoint:
		return nil, smb2.StatusNotAReparsePoint
	case smb2.FsctlGetObjectID, smb2.FsctlCreateOrGetObjectID:
		return o.objectID(req)
	case smb2.FsctlGetCompression:
		if req.MaxOutputResponse < 2 {
			return nil, smb2.StatusInvalidParameter
		}
		return ioctlOut(req, make([]byte, 2)), nil // COMPRESSION_FORMAT_NONE
	case smb2.FsctlSetCompression:
		return o.setCompression(req)
	case smb2.FsctlFileLevelTrim:
		return o.fileLevelTrim(req)
	case smb2.FsctlSmbtortureFspAsyncSleep:
		return asyncSleep(r, req)
	}
	return nil, smb2.StatusInvalidDeviceRequest
}

func ioctlOut(req *smb2.IoctlRequest, out []byte) *smb2.IoctlResponse {
	return &smb2.IoctlResponse{CtlCode: req.CtlCode, FileID: req.FileID, Output: out}
}

// encodeOut encodes e as the IOCTL output.
func encodeOut(req *smb2.IoctlRequest, e encoder) *smb2.IoctlResponse {
	b := make([]byte, e.Size())
	e.Encode(b)
	return ioctlOut(req, b)
}

// enumerateSnapshots answers FSCTL_SRV_ENUMERATE_SNAPSHOTS with no
// snapshots ([MS-SMB2] 3.3.5.15.1).
func (o *open) enumerateSnapshots(req *smb2.IoctlRequest) (server.Response, error) {
	if req.MaxOutputResponse < 16 {
		return nil, smb2.StatusInvalidParameter
	}
	a := &fscc.SnapshotArray{}
	a.HeaderOnly = uint64(a.Size()) > uint64(req.MaxOutputResponse)
	return encodeOut(req, a), nil
}

// requestResumeKey answers FSCTL_SRV_REQUEST_RESUME_KEY with the open's
// key, made on first use ([MS-SMB2] 3.3.5.15.5).
func (o *open) requestResumeKey(r *server.Request, req *smb2.IoctlRequest) (server.Response, error) {
	resp := &fscc.ResumeKeyResponse{ResumeKey: o.d.resumeKeys().key(o, r.Session)}
	if uint64(resp.Size()) > uint64(req.MaxOutputResponse) {
		return nil, smb2.StatusInvalidParameter
	}
	return encodeOut(req, resp), nil
}

// copychunkLimits is the SRV_COPYCHUNK_RESPONSE that reports the server's
// limits with STATUS_INVALID_PARAMETER ([MS-SMB2] 3.3.5.15.6).
var copychunkLimits = fscc.CopychunkResponse{
	ChunksWritten:     fscc.CopychunkMaxChunks,
	ChunkBytesWritten: fscc.CopychunkMaxChunkSize,
	TotalBytesWritten: fscc.CopychunkMaxDataSize,
}

// copychunk serves FSCTL_SRV_COPYCHUNK and FSCTL_SRV_COPYCHUNK_WRITE:
// a server-side copy from the open named by the resume key into this one
// ([MS-SMB2] 3.3.5.15.6).
func (o *open) copychunk(r *server.Request, req *smb2.IoctlRequest) (server.Response, error) {
	var cc fscc.CopychunkCopy
	if err := cc.Decode(req.Input); err != nil {
		return nil, smb2.StatusInvalidParameter
	}
	if req.MaxOutputResponse < 12 {
		return nil, smb2.StatusInvalidParameter
	}
	if !chunksValid(cc.Chunks) {
		return encodeOut(req, &copychunkLimits), smb2.StatusInvalidParameter
	}
	if o.isDir || o.access&smb2.FileWriteData == 0 ||
		req.CtlCode == smb2.FsctlSrvCopyChunk && o.access&smb2.FileReadData == 0 {
		return nil, smb2.StatusAccessDenied
	}
	src := o.d.resumeKeys().lookup(cc.SourceKey, r.Session)
	if src == nil {
		return nil, smb2.StatusObjectNameNotFound
	}
	if src.isDir || src.access&(smb2.FileReadData|smb2.FileExecute) == 0 {
		return nil, smb2.StatusAccessDenied
	}
	var res fscc.CopychunkResponse
	err := copyChunks(src, o, cc.Chunks, &res)
	return encodeOut(req, &res), err
}

// chunksValid checks the request against the server's limits; a chunk of
// length zero is invalid too.
func chunksValid(chunks []fscc.Chunk) bool {
	if len(chunks) > fscc.CopychunkMaxChunks {
		return false
	}
	total := 0
	for _, c := range chunks {
		if c.Length == 0 || c.Length > fscc.CopychunkMaxChunkSize || c.SourceOffset < 0 || c.TargetOffset < 0 {
			return false
		}
		total += int(c.Length)
	}
	return total <= fscc.CopychunkMaxDataSize
}

// copyChunks copies the chunks in order, counting them into res. A chunk
// that reaches beyond the source's end of file fails with
// STATUS_INVALID_VIEW_SIZE, as Windows answers; one over a byte-range
// lock of another open fails with STATUS_FILE_LOCK_CONFLICT, as reads and
// writes do (Windows Server 2012 and later copy with ReadFile/WriteFile).
func copyChunks(so, do *open, chunks []fscc.Chunk, res *fscc.CopychunkResponse) error {
	src, dst := so.f, do.f
	buf := server.GetBuffer(fscc.CopychunkMaxChunkSize)
	defer server.PutBuffer(buf)
	for _, c := range chunks {
		if err := so.checkLocks(uint64(c.SourceOffset), uint64(c.Length), false); err != nil {
			return err
		}
		if err := do.checkLocks(uint64(c.TargetOffset), uint64(c.Length), true); err != nil {
			return err
		}
		fi, err := src.Stat()
		if err != nil {
			return err
		}
		if c.SourceOffset > fi.Size-int64(c.Length) {
			return smb2.StatusInvalidViewSize
		}
		b := (*buf)[:c.Length]
		n, err := src.ReadAt(b, c.SourceOffset)
		if n < len(b) {
			if err == nil || errors.Is(err, io.EOF) {
				err = smb2.StatusInvalidViewSize
			}
			return err
		}
		if _, err := dst.WriteAt(b, c.TargetOffset); err != nil {
			return err
		}
		res.ChunksWritten++
		res.TotalBytesWritten += c.Length
	}
	return nil
}

// objectID answers FSCTL_GET_OBJECT_ID and FSCTL_CREATE_OR_GET_OBJECT_ID
// with an object id made of the file id and the volume id ([MS-FSA]
// 2.1.5.10.6).
func (o *open) objectID(req *smb2.IoctlRequest) (server.Response, error) {
	fi, err := o.f.Stat()
	if err != nil {
		return nil, err
	}
	var id fscc.ObjectIDBuffer
	binary.LittleEndian.PutUint64(id.ObjectID[:], fi.FileID)
	binary.LittleEndian.PutUint64(id.ObjectID[8:], o.d.volumeID)
	id.BirthObjectID = id.ObjectID
	binary.LittleEndian.PutUint64(id.BirthVolumeID[:], o.d.volumeID)
	if uint64(id.Size()) > uint64(req.MaxOutputResponse) {
		return nil, smb2.StatusBufferTooSmall
	}
	return encodeOut(req, &id), nil
}

// setCompression accepts COMPRESSION_FORMAT_NONE only ([MS-FSA]
// 2.1.5.10.37): the volume does not compress.
func (o *open) setCompression(req *smb2.IoctlRequest) (server.Response, error) {
	if len(req.Input) < 2 {
		return nil, smb2.StatusInvalidParameter
	}
	if err := o.need(smb2.FileWriteData | smb2.FileWriteAttributes); err != nil {
		return nil, err
	}
	switch binary.LittleEndian.Uint16(req.Input) {
	case 0: // COMPRESSION_FORMAT_NONE
		return ioctlOut(req, nil), nil
	case 1, 2: // COMPRESSION_FORMAT_DEFAULT, _LZNT1
		return nil, smb2.StatusNotSupported
	}
	return nil, smb2.StatusInvalidParameter
}

// fileLevelTrim accepts FSCTL_FILE_LEVEL_TRIM ([MS-FSCC] 2.3.12): a hint
// the server may ignore. The output says every range was processed.
func (o *open) fileLevelTrim(req *smb2.IoctlRequest) (server.Response, error) {
	if len(req.Input) < 8 {
		return nil, smb2.StatusInvalidParameter
	}
	if err := o.need(smb2.FileWriteData); err != nil {
		return nil, err
	}
	ranges := binary.LittleEndian.Uint32(req.Input[4:])
	if uint64(ranges) > uint64(len(req.Input)-8)/16 {
		return nil, smb2.StatusInvalidParameter
	}
	if req.MaxOutputResponse < 4 {
		return ioctlOut(req, nil), nil
	}
	out := make([]byte, 4)
	binary.LittleEndian.PutUint32(out, ranges)
	return ioctlOut(req, out), nil
}

// asyncSleep serves Samba's test control FSCTL_SMBTORTURE_FSP_ASYNC_SLEEP
// (source3/smbd/smb2_ioctl_smbtorture.c): the request goes async and
// completes after the number of milliseconds in its one input byte,
// holding its open meanwhile, so that a CLOSE sent behind it waits for it
// (smbtorture smb2.ioctl.bug14769).
func asyncSleep(r *server.Request, req *smb2.IoctlRequest) (server.Response, error) {
	if len(req.Input) != 1 {
		return nil, smb2.StatusInvalidParameter
	}
	r.GoAsync()
	t := time.NewTimer(time.Duration(req.Input[0]) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Ctx.Done():
		return nil, smb2.StatusCancelled
	}
	return ioctlOut(req, nil), nil
}
