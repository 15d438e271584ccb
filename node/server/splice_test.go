package server_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

const spliceThreshold = 16 << 10

// pattern is n bytes that differ at every offset a test might confuse.
func pattern(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>9 + seed)
	}
	return b
}

// postWriteInPieces sends a plain WRITE of data at off, its frame cut into
// writes of piece bytes (the socket then holds many small segments, more
// than a pipe has slots), and returns the response header. cut, if
// positive, stops after that many bytes of the frame and closes the
// connection.
func postWriteInPieces(t *testing.T, c *servertest.Conn, fid smb2.FileID, off uint64, data []byte, piece, cut int) smb2.Header {
	t.Helper()
	hdr := c.Header(smb2.CmdWrite)
	hdr.CreditCharge = c.Charge(len(data))
	body := servertest.Body(&smb2.WriteRequest{Offset: off, FileID: fid, Data: data})
	frame := make([]byte, 4+smb2.HeaderSize+len(body))
	smb2.PutTransportHeader(frame, smb2.HeaderSize+len(body))
	hdr.Encode(frame[4:])
	copy(frame[4+smb2.HeaderSize:], body)
	c.NextMessageID += uint64(max(hdr.CreditCharge, 1))
	if cut > 0 {
		frame = frame[:cut]
	}
	for len(frame) > 0 {
		k := min(piece, len(frame))
		if err := c.SendRaw(frame[:k]); err != nil {
			t.Fatal(err)
		}
		frame = frame[k:]
	}
	if cut > 0 {
		c.Close()
		return smb2.Header{}
	}
	hs, _, err := c.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 1 || hs[0].MessageID != hdr.MessageID {
		t.Fatalf("WRITE answered with %+v", hs)
	}
	return hs[0]
}

// TestSplicedWrite: a large plain WRITE is spliced from the socket into the
// file (osfs) or read from the pipe into memory (memfs),
// with the data intact whether it arrives in one piece or in thousands of
// small segments (more than the pipe holds: the request runs while its
// payload still arrives), and whatever the file held around it untouched.
func TestSplicedWrite(t *testing.T) {
	root := t.TempDir()
	srv := servertest.Start(t, servertest.Options{DiskRoot: root, SpliceWriteThreshold: spliceThreshold})
	for _, tc := range []struct {
		share, name string
	}{
		{servertest.DiskShareName, "spliced.bin"}, // splice(2) into the file
		{servertest.ShareName, "spliced.bin"},     // memfs: through memory
	} {
		t.Run(tc.share+"/"+tc.name, func(t *testing.T) {
			c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, tc.share)
			fid, err := c.Create(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseFile(fid)
			base := pattern(5<<20, 1)
			if _, err := c.Write(fid, 0, base[:8<<10]); err != nil { // below the threshold
				t.Fatal(err)
			}
			for off := 8 << 10; off < len(base); off += 1 << 20 {
				if _, err := c.Write(fid, uint64(off), base[off:min(off+1<<20, len(base))]); err != nil {
					t.Fatal(err)
				}
			}
			want := bytes.Clone(base)
			size := 3 << 20
			for i, piece := range []int{1 << 30, 1000} {
				before := srv.SplicedWrites()
				data := pattern(size, 10+i)
				off := 4096 + i
				h := postWriteInPieces(t, c, fid, uint64(off), data, piece, 0)
				if smb2.Status(h.Status) != smb2.StatusSuccess {
					t.Fatalf("WRITE of %d bytes in %d-byte pieces: %v", size, piece, smb2.Status(h.Status))
				}
				if srv.SplicedWrites() != before+1 {
					t.Errorf("WRITE of %d bytes was not spliced", size)
				}
				copy(want[off:], data)
			}
			got := make([]byte, 0, len(want))
			for off := 0; off < len(want); off += 1 << 20 {
				b, err := c.Read(fid, uint64(off), min(1<<20, len(want)-off))
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, b...)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("file differs from what was written (%d vs %d bytes)", len(got), len(want))
			}
			if tc.share == servertest.DiskShareName && tc.name == "spliced.bin" {
				onDisk, err := os.ReadFile(filepath.Join(root, tc.name))
				if err != nil || !bytes.Equal(onDisk, want) {
					t.Fatalf("file on disk differs from what was written (%v)", err)
				}
			}
		})
	}
}

// TestSplicedWriteRefused: a spliced WRITE the handler refuses (a closed
// handle, an open without write access) is answered with its error, its payload discarded, and the
// connection goes on with the next request; a signed WRITE is not spliced.
func TestSplicedWriteRefused(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "ro.bin"), pattern(4096, 3), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := servertest.Start(t, servertest.Options{DiskRoot: root, SpliceWriteThreshold: spliceThreshold})
	c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.DiskShareName)
	fid, err := c.Create("rw.bin")
	if err != nil {
		t.Fatal(err)
	}
	req := servertest.CreateRequest("ro.bin")
	req.DesiredAccess = smb2.FileReadData
	req.CreateDisposition = smb2.FileOpen
	ro, err := c.CreateWith(req)
	if err != nil {
		t.Fatal(err)
	}
	data := pattern(1<<20, 5)
	for _, bad := range []struct {
		what string
		fid  smb2.FileID
		want smb2.Status
	}{
		{"unknown handle", smb2.FileID{Persistent: 77, Volatile: 77}, smb2.StatusFileClosed},
		{"read-only open", ro.FileID, smb2.StatusAccessDenied},
	} {
		for _, piece := range []int{1 << 30, 1500} {
			h := postWriteInPieces(t, c, bad.fid, 0, data, piece, 0)
			if smb2.Status(h.Status) != bad.want {
				t.Errorf("%s: WRITE answered %v, want %v", bad.what, smb2.Status(h.Status), bad.want)
			}
			// The payload was discarded, not taken for the next request.
			if n, err := c.Write(fid, 0, data[:100<<10]); err != nil || n != 100<<10 {
				t.Fatalf("%s: next WRITE: %d, %v", bad.what, n, err)
			}
		}
	}
	if got, _ := os.ReadFile(filepath.Join(root, "ro.bin")); !bytes.Equal(got, pattern(4096, 3)) {
		t.Error("a refused WRITE changed the file")
	}

	// Signed: verified in memory, never spliced.
	c.Sign = true
	before := srv.SplicedWrites()
	if n, err := c.Write(fid, 0, data); err != nil || n != len(data) {
		t.Fatalf("signed WRITE: %d, %v", n, err)
	}
	if srv.SplicedWrites() != before {
		t.Error("a signed WRITE was spliced")
	}
	if got, err := c.Read(fid, 0, len(data)); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("signed WRITE: read back %v", err)
	}
	c.CloseFile(ro.FileID)
	c.CloseFile(fid)
}

// TestSplicedWriteCut: a connection that fails in the middle of a spliced
// WRITE's payload ends cleanly: the request's goroutine sees the pipe end,
// nothing hangs, no handle leaks (servertest checks at shutdown) and the
// next connection is served.
func TestSplicedWriteCut(t *testing.T) {
	root := t.TempDir()
	srv := servertest.Start(t, servertest.Options{DiskRoot: root, SpliceWriteThreshold: spliceThreshold})
	for _, cut := range []int{4 + smb2.HeaderSize + 10, 4 + smb2.HeaderSize + 48 + 100<<10, 4 + smb2.HeaderSize + 48 + 2<<20} {
		c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.DiskShareName)
		fid, err := c.Create("cut.bin")
		if err != nil {
			t.Fatal(err)
		}
		postWriteInPieces(t, c, fid, 0, pattern(3<<20, 7), 64<<10, cut)
		waitFor(t, "the cut connection's open to close", func() bool { return srv.OpenCount() == 0 })
	}
	c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.DiskShareName)
	fid, err := c.Create("after.bin")
	if err != nil {
		t.Fatal(err)
	}
	data := pattern(2<<20, 9)
	if n, err := c.Write(fid, 0, data); err != nil || n != len(data) {
		t.Fatalf("WRITE after cut connections: %d, %v", n, err)
	}
	if got, err := c.Read(fid, 0, len(data)); err != nil || !bytes.Equal(got, data) {
		t.Fatal("WRITE after cut connections: wrong data", err)
	}
	c.CloseFile(fid)
	if err := c.Echo(); err != nil {
		t.Fatal(err)
	}
}
