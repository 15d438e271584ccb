package share_test

import (
	"testing"

	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
)

func encodeFsctl(e interface {
	Size() int
	Encode([]byte)
}) []byte {
	b := make([]byte, e.Size())
	e.Encode(b)
	return b
}

// TestFsctlsRespectLocks: alice's exclusive lock makes bob's
// FSCTL_SET_ZERO_DATA and FSCTL_SRV_COPYCHUNK_WRITE into the range, and
// his copy out of it, fail with STATUS_FILE_LOCK_CONFLICT; outside the
// range they succeed.
func TestFsctlsRespectLocks(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	alice := newLockClient(t, srv.Addr, servertest.Alice, servertest.AlicePassword)
	bob := newLockClient(t, srv.Addr, servertest.Bob, servertest.BobPassword)
	if _, err := alice.Write(alice.fid, 0, make([]byte, 400)); err != nil {
		t.Fatal(err)
	}
	wantLock(t, "alice locks", alice.lock(100, 100, smb2.LockFlagExclusive), smb2.StatusSuccess)

	zero := func(off, end int64) error {
		_, err := bob.Ioctl(smb2.FsctlSetZeroData, bob.fid, encodeFsctl(&fscc.FileZeroDataInformation{FileOffset: off, BeyondFinalZero: end}), 0)
		return err
	}
	wantLock(t, "zero data over the lock", statusOf(zero(50, 150)), smb2.StatusFileLockConflict)
	wantLock(t, "zero data beside the lock", statusOf(zero(200, 300)), smb2.StatusSuccess)

	src, err := bob.Create("src.dat")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bob.Write(src, 0, make([]byte, 400)); err != nil {
		t.Fatal(err)
	}
	copyChunk := func(from, to smb2.FileID, srcOff, dstOff int64) error {
		out, err := bob.Ioctl(smb2.FsctlSrvRequestResumeKey, from, nil, 32)
		if err != nil {
			t.Fatal(err)
		}
		var k fscc.ResumeKeyResponse
		if err := k.Decode(out); err != nil {
			t.Fatal(err)
		}
		cc := &fscc.CopychunkCopy{SourceKey: k.ResumeKey, Chunks: []fscc.Chunk{{SourceOffset: srcOff, TargetOffset: dstOff, Length: 50}}}
		_, err = bob.Ioctl(smb2.FsctlSrvCopyChunkWrite, to, encodeFsctl(cc), 12)
		return err
	}
	wantLock(t, "copy into the lock", statusOf(copyChunk(src, bob.fid, 0, 120)), smb2.StatusFileLockConflict)
	wantLock(t, "copy beside the lock", statusOf(copyChunk(src, bob.fid, 0, 300)), smb2.StatusSuccess)
	wantLock(t, "copy out of the lock", statusOf(copyChunk(bob.fid, src, 120, 0)), smb2.StatusFileLockConflict)
	wantLock(t, "copy from beside the lock", statusOf(copyChunk(bob.fid, src, 300, 0)), smb2.StatusSuccess)
}

// TestCopychunkAcrossServedShares: a server-side copy takes its source
// from another share of the server, as on a node, whose disks share one
// resume key table (smbtorture smb2.ioctl.copy_chunk_across_shares).
func TestCopychunkAcrossServedShares(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{DiskRoot: t.TempDir()})
	c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName)
	src, err := c.Create("src.dat")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(src, 0, []byte("from the other share")); err != nil {
		t.Fatal(err)
	}
	out, err := c.Ioctl(smb2.FsctlSrvRequestResumeKey, src, nil, 32)
	if err != nil {
		t.Fatal(err)
	}
	var k fscc.ResumeKeyResponse
	if err := k.Decode(out); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TreeConnect(servertest.DiskShareName); err != nil {
		t.Fatal(err)
	}
	dst, err := c.Create("dst.dat")
	if err != nil {
		t.Fatal(err)
	}
	cc := &fscc.CopychunkCopy{SourceKey: k.ResumeKey, Chunks: []fscc.Chunk{{Length: 20}}}
	if _, err := c.Ioctl(smb2.FsctlSrvCopyChunkWrite, dst, encodeFsctl(cc), 12); err != nil {
		t.Fatalf("copy across shares: %v", err)
	}
	if got, err := c.Read(dst, 0, 20); err != nil || string(got) != "from the other share" {
		t.Fatalf("read back %q, %v", got, err)
	}
}
