package handoff_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/servertest"
)

// BenchmarkHandedOverIO: READs and WRITEs of a channel bound through
// another node, one at a time, served by the node the client is connected
// to (the home node checks them out of band, "arrival") or carried
// through the relay to the home node ("relay"), by size. It is what
// Config.HandoffIOMin's default rests on.
func BenchmarkHandedOverIO(b *testing.B) {
	for _, size := range []int{4 << 10, 16 << 10, 64 << 10} {
		for _, where := range []string{"relay", "arrival"} {
			for _, op := range []string{"read", "write"} {
				b.Run(fmt.Sprintf("%s/%dKiB/%s", op, size>>10, where), func(b *testing.B) {
					min := size + 1 // through the relay
					if where == "arrival" {
						min = size
					}
					p := newPair(b, servertest.Options{Configure: func(c *server.Config) { c.HandoffIOMin = min }})
					if err := os.WriteFile(filepath.Join(p.dir, "bench.dat"), make([]byte, 1<<20), 0o644); err != nil {
						b.Fatal(err)
					}
					first := servertest.Connect(b, p.home.Addr, servertest.Alice, servertest.AlicePassword, servertest.DiskShareName)
					second := servertest.Dial(b, p.arrival.Addr)
					second.ClientGUID = first.ClientGUID
					if err := second.Negotiate(); err != nil {
						b.Fatal(err)
					}
					if err := second.Bind(first.Session, servertest.Alice, servertest.AlicePassword); err != nil {
						b.Fatal(err)
					}
					second.TreeID, second.Sign = first.TreeID, false
					fid, err := first.Create("bench.dat")
					if err != nil {
						b.Fatal(err)
					}
					data := make([]byte, size)
					b.SetBytes(int64(size))
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						off := uint64(i*size) % (1 << 20)
						if op == "read" {
							_, err = second.Read(fid, off, size)
						} else {
							_, err = second.Write(fid, off, data)
						}
						if err != nil {
							b.Fatal(err)
						}
					}
					b.StopTimer()
					reads, writes := p.arrival.RemoteReads(), p.arrival.RemoteWrites()
					if where == "arrival" && reads+writes == 0 || where == "relay" && reads+writes != 0 {
						b.Fatalf("%s: %d READs and %d WRITEs served by the arrival node", where, reads, writes)
					}
				})
			}
		}
	}
}
