package server_test

import (
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/smbcluster/smbcluster/node/metrics"
	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// maxAllocs bounds the heap allocations the server makes per 4 KiB READ
// or WRITE. Measured: 2 per READ (the Request with its message state, the
// response body), 3 per WRITE. It pins the hot path: a change that allocates per
// request again fails here rather than in a benchmark nobody reads.
const maxAllocs = 4

// TestIOAllocations sends pre-encoded READs and WRITEs on a raw connection and
// reads the responses into one buffer, so that nearly every allocation
// counted is the server's.
func TestIOAllocations(t *testing.T) { ioAllocations(t, nil) }

// TestIOAllocationsMetrics: with metrics on, a request costs no
// allocation more (node/metrics).
func TestIOAllocationsMetrics(t *testing.T) {
	m := metrics.NewNode()
	ioAllocations(t, func(c *server.Config) { c.Metrics = m })
	if s, err := m.Snapshot(1); err != nil || s.Total.Requests < 8400 || s.Total.BytesRead < 4200*4096 || s.Total.BytesWritten < 4200*4096 {
		t.Errorf("metrics saw %+v, %v", s.Total, err)
	}
}

func ioAllocations(t *testing.T, configure func(*server.Config)) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts need a normal build")
	}
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "f"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := servertest.Start(t, servertest.Options{DiskRoot: root, Configure: configure})
	c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.DiskShareName)
	fid, err := c.Create("f")
	if err != nil {
		t.Fatal(err)
	}
	const n = 4000
	if outstanding(c) < 1 {
		t.Fatal("no credits")
	}
	resp := make([]byte, 64<<10)
	nc := c.NetConn()
	data := make([]byte, 4096)
	do := func(cmd smb2.Command, i int) {
		h := c.Header(cmd)
		h.Credits = 1
		c.NextMessageID++
		var body interface {
			Size() int
			Encode([]byte)
		}
		off := uint64(i%256) * 4096
		if cmd == smb2.CmdRead {
			body = &smb2.ReadRequest{Length: 4096, Offset: off, FileID: fid}
		} else {
			body = &smb2.WriteRequest{Offset: off, FileID: fid, Data: data}
		}
		frame := make([]byte, 4+smb2.HeaderSize+body.Size())
		smb2.PutTransportHeader(frame, len(frame)-4)
		h.Encode(frame[4:])
		body.Encode(frame[4+smb2.HeaderSize:])
		if _, err := nc.Write(frame); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(nc, resp[:4]); err != nil {
			t.Fatal(err)
		}
		_, m := smb2.ParseTransportHeader(resp)
		if _, err := io.ReadFull(nc, resp[:m]); err != nil {
			t.Fatal(err)
		}
		if st := binary.LittleEndian.Uint32(resp[8:]); st != 0 {
			t.Fatalf("%v: status %#x", cmd, st)
		}
	}
	for _, cmd := range []smb2.Command{smb2.CmdRead, smb2.CmdWrite} {
		for i := range 200 { // warm the pools
			do(cmd, i)
		}
		// The client's own allocations (a frame and a request body per
		// request) are counted apart and subtracted.
		clientAllocs := testing.AllocsPerRun(100, func() {
			h := c.Header(cmd)
			var body interface {
				Size() int
				Encode([]byte)
			}
			if cmd == smb2.CmdRead {
				body = &smb2.ReadRequest{Length: 4096, FileID: fid}
			} else {
				body = &smb2.WriteRequest{FileID: fid, Data: data}
			}
			frame := make([]byte, 4+smb2.HeaderSize+body.Size())
			h.Encode(frame[4:])
			body.Encode(frame[4+smb2.HeaderSize:])
		})
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range n {
			do(cmd, i)
		}
		runtime.ReadMemStats(&after)
		per := float64(after.Mallocs-before.Mallocs)/n - clientAllocs
		t.Logf("%v: %.1f server allocations per 4 KiB request", cmd, per)
		if per > maxAllocs {
			t.Errorf("%v: %.1f allocations per 4 KiB request, want at most %d", cmd, per, maxAllocs)
		}
	}
}
