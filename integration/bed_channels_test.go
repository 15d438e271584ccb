package integration

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/cli/smbc"
	"github.com/smbcluster/smbcluster/integration/framework"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// TestBedChannels is the multichannel acceptance test on separate hosts:
// one session made through node 1 with channels bound on nodes 2 and 3,
// each a host of its own with its own mount, writes and reads a file
// through one open spread over the three channels (channelsAcceptance),
// and loses node 2 mid-transfer. Before that, write-through WRITEs of
// another open go through channel 2, whose node writes them with its own
// descriptor where it shares the home node's mount (the local backend)
// and has the home node write them where it has a mount of its own
// (GlusterFS, CephFS: two mounts writing one file contend for it); after
// node 2 is killed every byte it acknowledged is read back through
// channel 3's node: a WRITE answered as written through was on the
// storage, not in the dead host's memory.
func TestBedChannels(t *testing.T) {
	for _, backend := range bedBackends {
		t.Run(backend, func(t *testing.T) {
			b := bedFor(t, backend, false)
			bedChannels(t, b)
		})
	}
}

func bedChannels(t *testing.T, b *framework.Bed) {
	o := smbc.Options{Share: bedShare, User: bedUser, Password: bedPass, Dialect: smb2.Dialect311, Sign: true}
	var s *smbc.Conn
	framework.WaitFor(t, clusterDeadline, b.Nodes[0].Name+" serves the share", func() bool {
		o.Addr = b.Nodes[0].Addr
		var err error
		s, err = smbc.Dial(t.Context(), o)
		return err == nil
	})
	t.Cleanup(func() { s.Close() })
	var chans [2]*smbc.Conn
	for i := range chans {
		n := b.Nodes[i+1]
		framework.WaitFor(t, clusterDeadline, "a channel bound on "+n.Name, func() bool {
			c, err := s.Bind(t.Context(), n.Addr)
			chans[i] = c
			return err == nil
		})
		t.Cleanup(func() { chans[i].Close() })
	}
	ch2, ch3 := chans[0], chans[1]
	// The shared bed gets node 2 back however the test ends.
	t.Cleanup(func() {
		select {
		case <-b.Nodes[1].Exited():
			b.RestartNode(t, 1)
		default:
		}
	})

	const block, blocks = 1 << 20, 8
	name := "bed-channels-through-" + time.Now().Format("150405.000000") + ".bin"
	want := make([]byte, block*blocks)
	io.ReadFull(randomReader(uint64(time.Now().UnixNano())), want)
	f, err := s.OpenFile(name, true)
	if err != nil {
		t.Fatal(err)
	}
	through := f.On(ch2).WriteThrough()
	for i := range blocks {
		if _, err := through.WriteAt(want[i*block:(i+1)*block], int64(i*block)); err != nil {
			t.Fatalf("write-through WRITE %d on channel 2 (%s): %v", i, ch2.Addr(), err)
		}
	}

	// 64 MiB, 16 of them rewritten while node 2 dies: the FUSE mounts
	// write at a few hundred MiB/s here.
	channelsAcceptanceSized(t, s, ch2, ch3, func() { b.KillNode(t, 1) }, 64<<20, 16<<20)

	got := make([]byte, len(want))
	if _, err := f.On(ch3).ReadAt(got, 0); err != nil && err != io.EOF {
		t.Fatalf("reading the write-through file on channel 3 after node 2 died: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("after node 2 died, %d of %d bytes it acknowledged as written through differ",
			diffBytes(got, want), len(want))
	}
	if err := f.On(ch3).Close(); err != nil {
		t.Fatal(err)
	}
	b.RestartNode(t, 1)
}

// diffBytes counts the bytes where a and b differ (a length difference
// counts as that many).
func diffBytes(a, b []byte) int {
	n := max(len(a), len(b)) - min(len(a), len(b))
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}
