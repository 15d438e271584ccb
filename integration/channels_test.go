package integration

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/cli/smbc"
	"github.com/smbcluster/smbcluster/integration/framework"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// Sizes of the channel acceptance test: the file written and read through
// three channels, and the part rewritten and read while a channel dies.
const (
	channelsFileSize = 256 << 20
	channelsLossSize = 64 << 20
	channelsBlock    = 1 << 20
	channelsWorkers  = 12
)

// TestChannelsAcrossNodes is issue 14's acceptance test: one session made
// through node 1 with channels bound on nodes 2 and 3 writes and reads a
// 256 MiB file through one open, its requests spread over the three
// channels, and the data come back intact; the open closed through node 3
// is gone on node 1; node 2 killed mid-transfer costs the client that
// channel and no request. It skips while the nodes refuse to bind a
// channel of another node's session (STATUS_USER_SESSION_DELETED), so it
// runs by itself once cross-node binding is in.
func TestChannelsAcrossNodes(t *testing.T) {
	c := framework.NewCluster(t, framework.ClusterOptions{Nodes: 3})
	const name, pw = "chloe", "Chloe-Pass-1"
	c.MustSMBCtl(t, "share", "add", "data", t.TempDir())
	c.MustSMBCtl(t, "user", "add", name, "--password", pw)
	o := smbc.Options{Share: "data", User: name, Password: pw, Dialect: smb2.Dialect311, Sign: true}
	sessions := make([]*smbc.Conn, 3)
	for i, n := range c.Nodes {
		// Every node serves the share and knows the user (through etcd).
		framework.WaitFor(t, clusterDeadline, n.Name+" serves the share", func() bool {
			o.Addr = n.Addr
			s, err := smbc.Dial(t.Context(), o)
			if err == nil {
				sessions[i] = s
			}
			return err == nil
		})
	}
	for _, s := range sessions[1:] {
		s.Close()
	}
	s := sessions[0]
	t.Cleanup(func() { s.Close() })
	ch2, err := s.Bind(t.Context(), c.Nodes[1].Addr)
	if isStatusErr(err, smb2.StatusUserSessionDeleted) {
		t.Skipf("cross-node session binding (issue 14) is missing: node2 refused a channel of node1's session: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch2.Close() })
	ch3, err := s.Bind(t.Context(), c.Nodes[2].Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch3.Close() })
	channelsAcceptance(t, s, ch2, ch3, func() { c.Nodes[1].Kill(t) })
}

// TestChannelsOneNode runs the acceptance test against one node listening
// on three addresses, which binds channels of its own sessions today: the
// channels go to the addresses its interface list offers, and the second
// channel passes through a TCP forwarder whose closing (both ends of every
// connection, at once) stands in for node 2's death.
func TestChannelsOneNode(t *testing.T) {
	port := strconv.Itoa(framework.CommonFreePort(t, 3))
	n := framework.StartNode(t, framework.Options{Addr: net.JoinHostPort("127.0.0.1", port),
		Args: []string{"--listen", net.JoinHostPort("127.0.0.2", port), "--listen", net.JoinHostPort("127.0.0.3", port)}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := smbc.Dial(ctx, smbc.Options{Addr: n.Addr, Share: shareNm, User: user, Password: password(),
		Dialect: smb2.Dialect311, Sign: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ifs, err := s.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	addrs := smbc.ChannelAddrs(n.Addr, ifs)
	if len(addrs) != 3 || addrs[0] != n.Addr {
		t.Fatalf("channel addresses from the interface list %+v: %q, want the node's three, %s first", ifs, addrs, n.Addr)
	}
	fwd := framework.StartRoundRobin(t, addrs[1])
	ch2, err := s.Bind(ctx, fwd.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch2.Close() })
	ch3, err := s.Bind(ctx, addrs[2])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch3.Close() })
	channelsAcceptance(t, s, ch2, ch3, func() { fwd.Close() })
}

func isStatusErr(err error, st smb2.Status) bool {
	var se *smbc.StatusError
	return errors.As(err, &se) && se.Status == st
}

// channelsAcceptance drives a session s with bound channels ch2 and ch3;
// kill ends ch2's server.
func channelsAcceptance(t *testing.T, s, ch2, ch3 *smbc.Conn, kill func()) {
	channelsAcceptanceSized(t, s, ch2, ch3, kill, channelsFileSize, channelsLossSize)
}

// channelsAcceptanceSized is channelsAcceptance with a file of fileSize
// bytes, lossSize of them rewritten while channel 2 dies.
func channelsAcceptanceSized(t *testing.T, s, ch2, ch3 *smbc.Conn, kill func(), fileSize, lossSize int64) {
	const file = "channels.bin"
	f, err := s.OpenFile(file, true)
	if err != nil {
		t.Fatal(err)
	}
	m := f.Spread(ch2, ch3)
	chans := []*smbc.Conn{s, ch2, ch3}
	before := channelCounts(chans)
	if err := channelsPass(m, 0, fileSize, 1, true); err != nil {
		t.Fatalf("writing %d MiB: %v", fileSize>>20, err)
	}
	if err := channelsPass(m, 0, fileSize, 1, false); err != nil {
		t.Fatalf("reading %d MiB back: %v", fileSize>>20, err)
	}
	// Every channel carried its share of both directions.
	after := channelCounts(chans)
	for i := range chans {
		r, w := after[i].ReadBytes-before[i].ReadBytes, after[i].WriteBytes-before[i].WriteBytes
		if r < fileSize/10 || w < fileSize/10 {
			t.Errorf("channel %d (%s) carried %d MiB read and %d MiB written of %d MiB each way: not spread",
				i+1, chans[i].Addr(), r>>20, w>>20, fileSize>>20)
		}
	}
	t.Logf("per channel: %+v", after)

	// Closed through channel 3, the open is gone on channel 1's node.
	if err := f.On(ch3).Close(); err != nil {
		t.Fatalf("CLOSE on channel 3 of the open made on channel 1: %v", err)
	}
	if _, err := f.ReadAt(make([]byte, 16), 0); !isStatusErr(err, smb2.StatusFileClosed) {
		t.Fatalf("READ on channel 1 after the CLOSE on channel 3: %v, want STATUS_FILE_CLOSED", err)
	}

	// Channel 2's server dies while requests are in flight on it; every
	// request completes over the other two.
	g, err := s.OpenFile(file, false)
	if err != nil {
		t.Fatal(err)
	}
	m = g.Spread(ch2, ch3)
	start := ch2.Stats().Writes
	killed, passed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(killed)
		defer kill()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for ch2.Stats().Writes < start+8 {
			select {
			case <-tick.C:
			case <-passed:
				return
			}
		}
	}()
	err = channelsPass(m, 0, lossSize, 2, true)
	close(passed)
	if err != nil {
		t.Fatalf("rewriting while channel 2's server dies: %v", err)
	}
	<-killed
	if err := channelsPass(m, 0, lossSize, 2, false); err != nil {
		t.Fatalf("reading back after channel 2's server died: %v", err)
	}
	if ch2.Err() == nil {
		t.Fatal("channel 2 is still up after its server died")
	}
	if left := m.Channels(); len(left) != 2 || left[0] != s || left[1] != ch3 {
		t.Errorf("channels in use after the loss: %d, want channels 1 and 3", len(left))
	}
	lost := channelCounts(chans)
	if err := channelsPass(m, 0, lossSize, 2, false); err != nil {
		t.Fatal(err)
	}
	last := channelCounts(chans)
	if last[0].Reads == lost[0].Reads || last[2].Reads == lost[2].Reads || last[1] != lost[1] {
		t.Errorf("after the loss, READs went %+v → %+v: want channels 1 and 3 only", lost, last)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(file); err != nil {
		t.Fatal(err)
	}
}

func channelCounts(chans []*smbc.Conn) []smbc.ChannelStats {
	out := make([]smbc.ChannelStats, len(chans))
	for i, c := range chans {
		out[i] = c.Stats()
	}
	return out
}

// channelsPass writes (or reads and checks) [off, off+size) in 1 MiB
// blocks from channelsWorkers goroutines; gen is the data's generation.
func channelsPass(m *smbc.MultiFile, off, size int64, gen uint64, write bool) error {
	var wg sync.WaitGroup
	errs := make(chan error, channelsWorkers)
	var next sync.Mutex
	pos := off
	for range channelsWorkers {
		wg.Go(func() {
			buf, want := make([]byte, channelsBlock), make([]byte, channelsBlock)
			for {
				next.Lock()
				at := pos
				pos += channelsBlock
				next.Unlock()
				if at >= off+size {
					return
				}
				fillChannelsBlock(want, at, gen)
				var err error
				if write {
					_, err = m.WriteAt(want, at)
				} else {
					var n int
					if n, err = m.ReadAt(buf, at); err == nil && (n != len(buf) || string(buf) != string(want)) {
						err = fmt.Errorf("block at %d: %d bytes read differ from those written", at, n)
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// fillChannelsBlock fills b with the data of the block at off, generation
// gen: an xorshift stream seeded by both, so that a block misplaced or of
// another generation never matches.
func fillChannelsBlock(b []byte, off int64, gen uint64) {
	x := uint64(off)*0x9E3779B97F4A7C15 ^ gen*0xBF58476D1CE4E5B9 | 1
	for i := 0; i+8 <= len(b); i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		binary.LittleEndian.PutUint64(b[i:], x)
	}
}

// TestChannelsSamba runs the acceptance test against Samba's smbd, so
// that our client's binding, channel keys and spreading are checked by a
// server we did not write. smbd listens only on addresses of the host's
// interfaces (127.0.0.1 here), so its three channels go to that one
// address, the second through the forwarder that stands in for a death.
func TestChannelsSamba(t *testing.T) {
	n := framework.StartSamba(t, framework.Options{Args: []string{"server multi channel support = yes"}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := smbc.Dial(ctx, smbc.Options{Addr: n.Addr, Share: shareNm, User: user, Password: password(),
		Dialect: smb2.Dialect311, Sign: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ifs, err := s.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	if addrs := smbc.ChannelAddrs(n.Addr, ifs); len(addrs) != 1 || addrs[0] != n.Addr {
		t.Fatalf("channel addresses from smbd's interface list %+v: %q, want %s", ifs, addrs, n.Addr)
	}
	// Channel keys of the other dialects and algorithms, and the
	// session's encryption keys shared by its channels.
	for _, o := range []smbc.Options{{Dialect: smb2.Dialect302, Sign: true}, {Dialect: smb2.Dialect300, Encrypt: true},
		{Dialect: smb2.Dialect311, Encrypt: true}} {
		t.Run(fmt.Sprintf("%#04x-sign=%v-encrypt=%v", o.Dialect, o.Sign, o.Encrypt), func(t *testing.T) {
			o.Addr, o.Share, o.User, o.Password = n.Addr, shareNm, user, password()
			s, err := smbc.Dial(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			b, err := s.Bind(ctx, n.Addr)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if b.Encrypted() != o.Encrypt || b.Signed() != s.Signed() {
				t.Fatalf("channel encrypted %v signed %v, session %v %v", b.Encrypted(), b.Signed(), s.Encrypted(), s.Signed())
			}
			f, err := s.OpenFile("variant.bin", true)
			if err != nil {
				t.Fatal(err)
			}
			m := f.Spread(b)
			for _, write := range []bool{true, false} {
				if err := channelsPass(m, 0, 16<<20, 3, write); err != nil {
					t.Fatal(err)
				}
			}
			if st := b.Stats(); st.ReadBytes == 0 || st.WriteBytes == 0 {
				t.Errorf("the bound channel carried %+v", st)
			}
			m.Close()
			s.Remove("variant.bin")
		})
	}
	fwd := framework.StartRoundRobin(t, n.Addr)
	ch2, err := s.Bind(ctx, fwd.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch2.Close() })
	ch3, err := s.Bind(ctx, n.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch3.Close() })
	channelsAcceptance(t, s, ch2, ch3, func() { fwd.Close() })
}
