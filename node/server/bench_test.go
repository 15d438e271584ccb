package server_test

import (
	"fmt"
	"testing"

	"github.com/smbcluster/smbcluster/node/metrics"
	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// BenchmarkIO measures one client's READ and WRITE round trips through the
// whole engine (framing, credits, command table, signing or sealing, the
// memfs backend) over loopback TCP, one request in flight. allocs/op is
// the allocation budget per request and response pair, client included.
func BenchmarkIO(b *testing.B) {
	for _, mode := range []string{"plain", "signed", "sealed"} {
		for _, size := range []int{4 << 10, 64 << 10, 1 << 20} {
			for _, op := range []string{"read", "write"} {
				b.Run(fmt.Sprintf("%s/%s/%dk", mode, op, size>>10), func(b *testing.B) {
					benchIO(b, mode, op, size)
				})
			}
		}
	}
}

// BenchmarkIOMetrics is BenchmarkIO's plain 4 KiB READ and WRITE with
// metrics off and on (node/metrics): what recording a request costs a
// round trip (go test -bench IOMetrics -count 6, then benchstat).
func BenchmarkIOMetrics(b *testing.B) {
	for _, op := range []string{"read", "write"} {
		for _, on := range []bool{false, true} {
			var cfg func(*server.Config)
			if on {
				cfg = func(c *server.Config) { c.Metrics = metrics.NewNode() }
			}
			b.Run(fmt.Sprintf("%s/metrics=%v", op, on), func(b *testing.B) { benchIOWith(b, "plain", op, 4<<10, cfg) })
		}
	}
}

func benchIO(b *testing.B, mode, op string, size int) { benchIOWith(b, mode, op, size, nil) }

func benchIOWith(b *testing.B, mode, op string, size int, configure func(*server.Config)) {
	srv := servertest.Start(b, servertest.Options{Configure: configure})
	c := servertest.Connect(b, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName, smb2.Dialect311)
	c.Sign = mode == "signed"
	c.Encrypt = mode == "sealed"
	fid, err := c.Create("bench.dat")
	if err != nil {
		b.Fatal(err)
	}
	data := make([]byte, size)
	if _, err := c.Write(fid, 0, data); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if op == "read" {
			_, err = c.Read(fid, 0, size)
		} else {
			_, err = c.Write(fid, 0, data)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if err := c.CloseFile(fid); err != nil {
		b.Fatal(err)
	}
}
