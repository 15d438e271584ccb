package share

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
)

func ioctl(o *open, s *server.Session, code uint32, in []byte, max uint32) (*smb2.IoctlResponse, error) {
	resp, err := o.Ioctl(&server.Request{Session: s}, &smb2.IoctlRequest{CtlCode: code, Input: in, MaxOutputResponse: max, Flags: smb2.IoctlIsFsctl})
	r, _ := resp.(*smb2.IoctlResponse)
	return r, err
}

func encode(e encoder) []byte {
	b := make([]byte, e.Size())
	e.Encode(b)
	return b
}

func resumeKeyOf(t *testing.T, o *open, s *server.Session) [24]byte {
	t.Helper()
	r, err := ioctl(o, s, smb2.FsctlSrvRequestResumeKey, nil, 32)
	wantStatus(t, err, 0)
	var k fscc.ResumeKeyResponse
	if err := k.Decode(r.Output); err != nil || len(r.Output) != 32 {
		t.Fatalf("resume key %x: %v", r.Output, err)
	}
	return k.ResumeKey
}

func TestCopychunk(t *testing.T) {
	d := infoDisk(t)
	sess := &server.Session{ID: 1}
	src := infoOpen(t, d, "src", false, 0)
	data := make([]byte, 3<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	src.f.WriteAt(data, 0)
	dst := infoOpen(t, d, "dst", false, 0)
	key := resumeKeyOf(t, src, sess)
	if again := resumeKeyOf(t, src, sess); again != key {
		t.Fatal("resume key changed")
	}

	cc := &fscc.CopychunkCopy{SourceKey: key, Chunks: []fscc.Chunk{
		{SourceOffset: 0, TargetOffset: 0, Length: 1 << 20},
		{SourceOffset: 1 << 20, TargetOffset: 1 << 20, Length: 1 << 20},
		{SourceOffset: 2 << 20, TargetOffset: 2 << 20, Length: 1 << 20},
	}}
	r, err := ioctl(dst, sess, smb2.FsctlSrvCopyChunkWrite, encode(cc), 12)
	wantStatus(t, err, 0)
	var res fscc.CopychunkResponse
	if res.Decode(r.Output); res.ChunksWritten != 3 || res.TotalBytesWritten != 3<<20 {
		t.Fatalf("response %+v", res)
	}
	got := make([]byte, len(data))
	if n, _ := dst.f.ReadAt(got, 0); n != len(data) || !bytes.Equal(got, data) {
		t.Fatal("copied data differs")
	}

	// The limits of [MS-SMB2] 3.3.5.15.6, answered in the response.
	big := &fscc.CopychunkCopy{SourceKey: key, Chunks: []fscc.Chunk{{Length: 1<<20 + 1}}}
	r, err = ioctl(dst, sess, smb2.FsctlSrvCopyChunk, encode(big), 12)
	wantStatus(t, err, smb2.StatusInvalidParameter)
	if res.Decode(r.Output); res != copychunkLimits {
		t.Fatalf("limits %+v", res)
	}
	many := &fscc.CopychunkCopy{SourceKey: key, Chunks: make([]fscc.Chunk, 257)}
	_, err = ioctl(dst, sess, smb2.FsctlSrvCopyChunk, encode(many), 12)
	wantStatus(t, err, smb2.StatusInvalidParameter)
	zero := &fscc.CopychunkCopy{SourceKey: key, Chunks: []fscc.Chunk{{Length: 0}}}
	_, err = ioctl(dst, sess, smb2.FsctlSrvCopyChunk, encode(zero), 12)
	wantStatus(t, err, smb2.StatusInvalidParameter)
	one := &fscc.CopychunkCopy{SourceKey: key, Chunks: []fscc.Chunk{{Length: 4096}}}
	_, err = ioctl(dst, sess, smb2.FsctlSrvCopyChunk, encode(one), 11)
	wantStatus(t, err, smb2.StatusInvalidParameter)

	exceed := &fscc.CopychunkCopy{SourceKey: key, Chunks: []fscc.Chunk{{Length: 4096}, {SourceOffset: 3<<20 - 100, Length: 4096}}}
	r, err = ioctl(dst, sess, smb2.FsctlSrvCopyChunk, encode(exceed), 12)
	wantStatus(t, err, smb2.StatusInvalidViewSize)
	if res.Decode(r.Output); res.ChunksWritten != 1 {
		t.Fatalf("partial response %+v", res)
	}

	_, err = ioctl(dst, &server.Session{ID: 2}, smb2.FsctlSrvCopyChunk, encode(one), 12)
	wantStatus(t, err, smb2.StatusObjectNameNotFound) // another session's key
	bad := &fscc.CopychunkCopy{Chunks: []fscc.Chunk{{Length: 4096}}}
	_, err = ioctl(dst, sess, smb2.FsctlSrvCopyChunk, encode(bad), 12)
	wantStatus(t, err, smb2.StatusObjectNameNotFound)
	_, err = ioctl(dst, sess, smb2.FsctlSrvCopyChunk, []byte{1, 2, 3}, 12)
	wantStatus(t, err, smb2.StatusInvalidParameter)

	// FSCTL_SRV_COPYCHUNK needs read access on the target, _WRITE does not.
	wo := infoOpen(t, d, "dst", false, smb2.FileWriteData)
	_, err = ioctl(wo, sess, smb2.FsctlSrvCopyChunk, encode(one), 12)
	wantStatus(t, err, smb2.StatusAccessDenied)
	_, err = ioctl(wo, sess, smb2.FsctlSrvCopyChunkWrite, encode(one), 12)
	wantStatus(t, err, 0)
	noRead := infoOpen(t, d, "src", false, smb2.FileReadAttributes)
	nrKey := resumeKeyOf(t, noRead, sess)
	_, err = ioctl(dst, sess, smb2.FsctlSrvCopyChunk, encode(&fscc.CopychunkCopy{SourceKey: nrKey, Chunks: one.Chunks}), 12)
	wantStatus(t, err, smb2.StatusAccessDenied)

	// A closed source is not found (smbtorture copy_chunk_across_shares2).
	src.Close(false)
	_, err = ioctl(dst, sess, smb2.FsctlSrvCopyChunk, encode(one), 12)
	wantStatus(t, err, smb2.StatusObjectNameNotFound)
}

func TestFileFsctls(t *testing.T) {
	d := infoDisk(t)
	f := infoOpen(t, d, "f", false, 0)
	data := bytes.Repeat([]byte{0xAB}, 10000)
	f.f.WriteAt(data, 0)
	le := binary.LittleEndian

	r, err := ioctl(f, nil, smb2.FsctlSrvEnumerateSnapshots, nil, 16)
	wantStatus(t, err, 0)
	if len(r.Output) < 12 || le.Uint32(r.Output) != 0 {
		t.Fatalf("snapshots %x", r.Output)
	}
	_, err = ioctl(f, nil, smb2.FsctlSrvEnumerateSnapshots, nil, 15)
	wantStatus(t, err, smb2.StatusInvalidParameter)

	wantStatus(t, ioctlErr(ioctl(f, nil, smb2.FsctlSetZeroData, encode(&fscc.FileZeroDataInformation{FileOffset: 100, BeyondFinalZero: 200}), 0)), 0)
	got := make([]byte, 10000)
	f.f.ReadAt(got, 0)
	if got[99] != 0xAB || got[100] != 0 || got[199] != 0 || got[200] != 0xAB {
		t.Fatal("zero data range wrong")
	}
	_, err = ioctl(f, nil, smb2.FsctlSetZeroData, encode(&fscc.FileZeroDataInformation{FileOffset: 300, BeyondFinalZero: 200}), 0)
	wantStatus(t, err, smb2.StatusInvalidParameter)

	r, err = ioctl(f, nil, smb2.FsctlQueryAllocatedRanges, encode(&fscc.FileAllocatedRangeBuffer{FileOffset: 1000, Length: 1 << 20}), 1024)
	wantStatus(t, err, 0)
	if rs, err := fscc.DecodeAllocatedRanges(r.Output); err != nil || len(rs) != 1 || rs[0] != (fscc.FileAllocatedRangeBuffer{FileOffset: 1000, Length: 9000}) {
		t.Fatalf("ranges %+v %v", rs, err)
	}
	_, err = ioctl(f, nil, smb2.FsctlQueryAllocatedRanges, encode(&fscc.FileAllocatedRangeBuffer{Length: 10}), 8)
	wantStatus(t, err, smb2.StatusBufferTooSmall)
	r, err = ioctl(f, nil, smb2.FsctlQueryAllocatedRanges, encode(&fscc.FileAllocatedRangeBuffer{FileOffset: 20000, Length: 10}), 0)
	wantStatus(t, err, 0)
	if len(r.Output) != 0 {
		t.Fatalf("ranges beyond EOF: %x", r.Output)
	}

	_, err = ioctl(f, nil, smb2.FsctlGetReparsePoint, nil, 1024)
	wantStatus(t, err, smb2.StatusNotAReparsePoint)
	r, err = ioctl(f, nil, smb2.FsctlCreateOrGetObjectID, nil, 64)
	fi, _ := f.f.Stat()
	if err != nil || len(r.Output) != 64 || le.Uint64(r.Output) != fi.FileID {
		t.Fatalf("object id %x %v", r.Output, err)
	}
	r, err = ioctl(f, nil, smb2.FsctlGetCompression, nil, 2)
	if err != nil || !bytes.Equal(r.Output, []byte{0, 0}) {
		t.Fatalf("compression %x %v", r.Output, err)
	}
	wantStatus(t, ioctlErr(ioctl(f, nil, smb2.FsctlSetCompression, []byte{0, 0}, 0)), 0)
	wantStatus(t, ioctlErr(ioctl(f, nil, smb2.FsctlSetCompression, []byte{2, 0}, 0)), smb2.StatusNotSupported)
	wantStatus(t, ioctlErr(ioctl(f, nil, smb2.FsctlSetSparse, nil, 0)), 0)
	wantStatus(t, ioctlErr(ioctl(f, nil, smb2.FsctlFileLevelTrim, make([]byte, 8), 4)), 0)
	wantStatus(t, ioctlErr(ioctl(f, nil, smb2.FsctlPipeTransceive, nil, 1024)), smb2.StatusInvalidDeviceRequest)
	wantStatus(t, ioctlErr(ioctl(f, nil, 0x12345678, nil, 1024)), smb2.StatusInvalidDeviceRequest)
}

func ioctlErr(_ *smb2.IoctlResponse, err error) error { return err }

// FuzzIoctl feeds arbitrary FSCTL inputs to a file open: no panics.
func FuzzIoctl(f *testing.F) {
	f.Add(smb2.FsctlSrvCopyChunk, encode(&fscc.CopychunkCopy{Chunks: []fscc.Chunk{{Length: 10}}}), uint32(12))
	f.Add(smb2.FsctlSetZeroData, make([]byte, 16), uint32(0))
	f.Add(smb2.FsctlQueryAllocatedRanges, make([]byte, 16), uint32(64))
	f.Add(smb2.FsctlFileLevelTrim, make([]byte, 24), uint32(4))
	f.Add(smb2.FsctlSetSparse, []byte{1}, uint32(0))
	f.Fuzz(func(t *testing.T, code uint32, in []byte, max uint32) {
		d := infoDisk(t)
		o := infoOpen(t, d, "f", false, 0)
		o.f.WriteAt(make([]byte, 100), 0)
		// Resume keys are random, so copychunk never finds a source here
		// and no write lands at a fuzzed offset; zero data is clipped to
		// the end of file.
		if code == smb2.FsctlSmbtortureFspAsyncSleep {
			return // it only waits
		}
		ioctl(o, nil, code, in, max)
	})
}

// TestCopychunkAcrossShares: shares given one ResumeKeys (as a node's
// are) copy from each other's opens; shares that were given none keep
// their keys to themselves, so that tests with their own disks never see
// each other's keys.
func TestCopychunkAcrossShares(t *testing.T) {
	keys := NewResumeKeys()
	d1, d2, other := infoDisk(t), infoDisk(t), infoDisk(t)
	d1.SetResumeKeys(keys)
	d2.SetResumeKeys(keys)
	sess := &server.Session{ID: 1}
	src := infoOpen(t, d1, "src", false, 0)
	src.f.WriteAt([]byte("across shares"), 0)
	dst := infoOpen(t, d2, "dst", false, 0)
	cc := &fscc.CopychunkCopy{SourceKey: resumeKeyOf(t, src, sess), Chunks: []fscc.Chunk{{Length: 13}}}
	_, err := ioctl(dst, sess, smb2.FsctlSrvCopyChunkWrite, encode(cc), 12)
	wantStatus(t, err, 0)
	got := make([]byte, 13)
	if dst.f.ReadAt(got, 0); string(got) != "across shares" {
		t.Fatalf("copied %q", got)
	}
	alone := infoOpen(t, other, "dst", false, 0)
	_, err = ioctl(alone, sess, smb2.FsctlSrvCopyChunkWrite, encode(cc), 12)
	wantStatus(t, err, smb2.StatusObjectNameNotFound)
}
