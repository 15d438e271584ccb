package server_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/smbcluster/smbcluster/node/server/servertest"
	"github.com/smbcluster/smbcluster/node/vfs/vfstest"
)

// TestReadOffloadedWhenNotCached: a READ whose data is not in memory is
// not served in the connection's reader, where waiting for the disk would
// stall the requests behind it, but on its own goroutine: the buffered
// (4 KiB) and the sendfile (64 KiB) sizes, plain and signed, answer the
// right data that way.
func TestReadOffloadedWhenNotCached(t *testing.T) {
	root := t.TempDir()
	data := make([]byte, 4<<20)
	for i := range data {
		data[i] = byte(i*31 + i>>12)
	}
	path := filepath.Join(root, "cold.bin")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(path)
	f.Sync()
	f.Close()
	srv := servertest.Start(t, servertest.Options{DiskRoot: root})
	for _, sign := range []bool{false, true} {
		c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.DiskShareName)
		c.Sign = sign
		fid, err := c.Create("cold.bin")
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{4 << 10, 64 << 10} {
			if !vfstest.DropCache(t, path) {
				t.Skip("pages stay in memory on this filesystem (tmpfs?)")
			}
			before := srv.Offloaded()
			off := 3 << 20
			got, err := c.Read(fid, uint64(off), n)
			if err != nil {
				t.Fatalf("sign=%v READ %d: %v", sign, n, err)
			}
			if !bytes.Equal(got, data[off:off+n]) {
				t.Fatalf("sign=%v READ %d: wrong data", sign, n)
			}
			if srv.Offloaded() != before+1 {
				t.Errorf("sign=%v READ %d of evicted data: offloaded %d times, want once", sign, n, srv.Offloaded()-before)
			}
			// Now cached: served in the reader.
			before = srv.Offloaded()
			if got, err := c.Read(fid, uint64(off), n); err != nil || !bytes.Equal(got, data[off:off+n]) {
				t.Fatalf("sign=%v cached READ %d: %v", sign, n, err)
			}
			if srv.Offloaded() != before {
				t.Errorf("sign=%v READ %d of cached data was offloaded", sign, n)
			}
		}
		c.CloseFile(fid)
	}
}
