package handoff_test

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/node/handoff"
	"github.com/smbcluster/smbcluster/node/mesh"
	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
	"google.golang.org/grpc"
)

// hosts are a home node and arrival nodes, each serving DiskShareName from
// a share root of its own (tracked: its open files and flushes are
// counted), the arrival nodes handing binding connections over to the
// home node through gRPC on an in-memory mesh.
type hosts struct {
	home     *servertest.Server
	arrivals []*servertest.Server
	meshes   []*mesh.Mesh // the arrival nodes'
}

func newHosts(t *testing.T, homeRoot string, arrivalRoots ...string) *hosts {
	t.Helper()
	mem := mesh.NewMemory()
	l := mem.Listen("home")
	homeMesh := mesh.New("home", func() map[string]string { return nil }, mem.Dial, nil)
	t.Cleanup(homeMesh.Close)
	homePeers := handoff.New(homeMesh, nil)
	g := grpc.NewServer()
	peerv1.RegisterSessionServiceServer(g, homePeers.Service())
	go g.Serve(l)
	t.Cleanup(g.Stop)
	n := &hosts{home: servertest.Start(t, servertest.Options{DiskRoot: homeRoot, TrackDisk: true,
		Configure: func(c *server.Config) { c.SessionTag = handoff.Tag("home") }})}
	homePeers.Attach(n.home.Server)
	for i, root := range arrivalRoots {
		m := mesh.New(fmt.Sprintf("arrival%d", i), func() map[string]string { return map[string]string{"home": l.Addr().String()} }, mem.Dial, nil)
		t.Cleanup(m.Close)
		peers := handoff.New(m, nil)
		a := servertest.Start(t, servertest.Options{DiskRoot: root, TrackDisk: true, Configure: func(c *server.Config) {
			c.SessionPeers = peers
			c.SessionTag = handoff.Tag(fmt.Sprintf("arrival%d", i))
		}})
		peers.Attach(a.Server)
		n.arrivals, n.meshes = append(n.arrivals, a), append(n.meshes, m)
	}
	return n
}

// bind binds a channel of first's session through arrival node i.
func (n *hosts) bind(t *testing.T, first *servertest.Conn, i int) *servertest.Conn {
	t.Helper()
	c := servertest.Dial(t, n.arrivals[i].Addr)
	c.ClientGUID = first.ClientGUID
	if err := c.Negotiate(smb2.Dialect311); err != nil {
		t.Fatal(err)
	}
	if err := c.Bind(first.Session, servertest.Alice, servertest.AlicePassword); err != nil {
		t.Fatalf("bind through arrival node %d: %v", i, err)
	}
	c.TreeID = first.TreeID
	c.Sign = false
	return c
}

func (n *hosts) connect(t *testing.T) *servertest.Conn {
	t.Helper()
	return servertest.Connect(t, n.home.Addr, servertest.Alice, servertest.AlicePassword, servertest.DiskShareName, smb2.Dialect311)
}

// otherPath returns a second path of directory dir, as another host's
// mount of the same storage would be: a share root elsewhere.
func otherPath(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "mount")
	if err := os.Symlink(dir, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// writeThrough sends a WRITE with SMB2_WRITEFLAG_WRITE_THROUGH.
func writeThrough(t *testing.T, c *servertest.Conn, fid smb2.FileID, off uint64, data []byte) error {
	t.Helper()
	hdr := c.Header(smb2.CmdWrite)
	hdr.CreditCharge = c.Charge(len(data))
	h, _ := c.Send(hdr, servertest.Body(&smb2.WriteRequest{Offset: off, FileID: fid, Data: data, Flags: smb2.WriteFlagWriteThrough}))
	if st := smb2.Status(h.Status); st != smb2.StatusSuccess {
		return st
	}
	return nil
}

func flush(t *testing.T, c *servertest.Conn, fid smb2.FileID) error {
	t.Helper()
	h, _ := c.Call(smb2.CmdFlush, &smb2.FlushRequest{FileID: fid})
	if st := smb2.Status(h.Status); st != smb2.StatusSuccess {
		return st
	}
	return nil
}

// channels returns how many channels session id has on s.
func channels(s *servertest.Server, id uint64) int {
	for _, ss := range s.Sessions() {
		if ss.ID == id {
			return len(ss.Channels())
		}
	}
	return 0
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(servertest.DefaultTimeout)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

// TestArrivalNodeOpensThroughItsShare: the arrival node's share is the
// same directory at another path (each node has its own mount); the
// large READs and WRITEs of a channel bound through it are served from
// its own descriptor, opened through its share's vfs by the name the home
// node gives, not by the home node's host path.
func TestArrivalNodeOpensThroughItsShare(t *testing.T) {
	dir := t.TempDir()
	n := newHosts(t, dir, otherPath(t, dir))
	arrival := n.arrivals[0]
	first := n.connect(t)
	second := n.bind(t, first, 0)
	fid, err := first.Create("sub.dat")
	if err != nil {
		t.Fatal(err)
	}
	data := randomBytes(256 << 10)
	const chunk = 64 << 10
	for off := 0; off < len(data); off += chunk {
		if k, err := second.Write(fid, uint64(off), data[off:off+chunk]); err != nil || k != chunk {
			t.Fatalf("WRITE at %d through the arrival node: %d, %v", off, k, err)
		}
	}
	if got := arrival.RemoteWrites(); got != uint64(len(data)/chunk) {
		t.Errorf("WRITEs written by the arrival node: %d, want %d", got, len(data)/chunk)
	}
	for off := 0; off < len(data); off += chunk {
		got, err := second.Read(fid, uint64(off), chunk)
		if err != nil || !bytes.Equal(got, data[off:off+chunk]) {
			t.Fatalf("READ at %d through the arrival node: %v (equal %v)", off, err, bytes.Equal(got, data[off:off+chunk]))
		}
	}
	if got := arrival.RemoteReads(); got != uint64(len(data)/chunk) {
		t.Errorf("READs sent by the arrival node: %d, want %d", got, len(data)/chunk)
	}
	// Its descriptors (one to read, one to write) are its share's files.
	if got := arrival.Disk.Open(); got != 2 {
		t.Errorf("files the arrival node holds open through its share: %d (%v), want 2", got, arrival.Disk.OpenNames())
	}
	if err := second.CloseFile(fid); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the arrival node to close its descriptors with the open", func() bool { return arrival.Disk.Open() == 0 })
	if got, err := os.ReadFile(filepath.Join(dir, "sub.dat")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the file: %d bytes, %v", len(got), err)
	}
}

// TestWriteThroughOnArrivalNode: a write-through WRITE on a channel bound
// through the arrival node — SMB2_WRITEFLAG_WRITE_THROUGH, or any WRITE to
// an open made with FILE_WRITE_THROUGH — is flushed by the arrival node on
// the descriptor it wrote with, before the WRITE is answered; the home
// node's descriptor, which wrote nothing, is not flushed for it. A plain
// WRITE is flushed nowhere.
func TestWriteThroughOnArrivalNode(t *testing.T) {
	dir := t.TempDir()
	n := newHosts(t, dir, otherPath(t, dir))
	arrival := n.arrivals[0]
	first := n.connect(t)
	second := n.bind(t, first, 0)
	fid, err := first.Create("wt.dat")
	if err != nil {
		t.Fatal(err)
	}
	data := randomBytes(64 << 10)
	if _, err := second.Write(fid, 0, data); err != nil {
		t.Fatal(err)
	}
	if a, h := arrival.Disk.Syncs(), n.home.Disk.Syncs(); a != 0 || h != 0 {
		t.Errorf("a plain WRITE flushed: %d on the arrival node, %d on the home node", a, h)
	}
	if err := writeThrough(t, second, fid, uint64(len(data)), data); err != nil {
		t.Fatalf("write-through WRITE through the arrival node: %v", err)
	}
	if a, h := arrival.Disk.Syncs(), n.home.Disk.Syncs(); a != 1 || h != 0 {
		t.Errorf("a write-through WRITE flushed %d time(s) on the arrival node (want 1 before its answer), %d on the home node (want 0)", a, h)
	}
	if arrival.RemoteWrites() != 2 {
		t.Errorf("WRITEs written by the arrival node: %d, want 2", arrival.RemoteWrites())
	}

	req := servertest.CreateRequest("wt-open.dat")
	req.CreateOptions |= smb2.FileWriteThrough
	resp, err := first.CreateWith(req)
	if err != nil {
		t.Fatal(err)
	}
	before := arrival.Disk.Syncs()
	if _, err := second.Write(resp.FileID, 0, data); err != nil {
		t.Fatal(err)
	}
	if got := arrival.Disk.Syncs() - before; got != 1 {
		t.Errorf("a WRITE to a FILE_WRITE_THROUGH open flushed %d time(s) on the arrival node, want 1", got)
	}
	if h := n.home.Disk.Syncs(); h != 0 {
		t.Errorf("the home node flushed %d time(s) for WRITEs it did not write", h)
	}
	first.CloseFile(resp.FileID)
	first.CloseFile(fid)
	if got, err := os.ReadFile(filepath.Join(dir, "wt.dat")); err != nil || !bytes.Equal(got, append(append([]byte(nil), data...), data...)) {
		t.Fatalf("wt.dat: %d bytes, %v", len(got), err)
	}
}

// TestFlushCoversEveryNode: after large WRITEs through two arrival nodes,
// a FLUSH of the open — on any channel — flushes the home node's
// descriptor and has both arrival nodes flush theirs; one with nothing
// written since is not asked again. An arrival node flushes what it wrote
// when its channel ends; a FLUSH when an arrival node that wrote cannot
// be reached (its relay broke) fails, once.
func TestFlushCoversEveryNode(t *testing.T) {
	dir := t.TempDir()
	n := newHosts(t, dir, otherPath(t, dir), otherPath(t, dir))
	a0, a1 := n.arrivals[0], n.arrivals[1]
	first := n.connect(t)
	c0, c1 := n.bind(t, first, 0), n.bind(t, first, 1)
	fid, err := first.Create("flush.dat")
	if err != nil {
		t.Fatal(err)
	}
	const chunk = 64 << 10
	data := randomBytes(5 * chunk)
	if _, err := c0.Write(fid, 0, data[:chunk]); err != nil {
		t.Fatal(err)
	}
	if _, err := c1.Write(fid, chunk, data[chunk:2*chunk]); err != nil {
		t.Fatal(err)
	}
	if a0.RemoteWrites() != 1 || a1.RemoteWrites() != 1 {
		t.Fatalf("WRITEs written by the arrival nodes: %d and %d, want 1 each", a0.RemoteWrites(), a1.RemoteWrites())
	}
	if s0, s1 := a0.Disk.Syncs(), a1.Disk.Syncs(); s0 != 0 || s1 != 0 {
		t.Fatalf("flushed before the FLUSH: %d, %d", s0, s1)
	}
	if err := flush(t, first, fid); err != nil {
		t.Fatalf("FLUSH: %v", err)
	}
	if s0, s1, h := a0.Disk.Syncs(), a1.Disk.Syncs(), n.home.Disk.Syncs(); s0 != 1 || s1 != 1 || h != 1 {
		t.Errorf("FLUSH flushed arrival nodes %d and %d time(s), the home node %d; want 1 each", s0, s1, h)
	}
	// Nothing written since: only the home node's descriptor.
	if err := flush(t, first, fid); err != nil {
		t.Fatalf("second FLUSH: %v", err)
	}
	if s0, s1 := a0.Disk.Syncs(), a1.Disk.Syncs(); s0 != 1 || s1 != 1 {
		t.Errorf("a FLUSH with nothing written since flushed the arrival nodes again: %d, %d", s0, s1)
	}
	// A FLUSH on a channel through one arrival node covers the other's.
	if _, err := c1.Write(fid, 2*chunk, data[2*chunk:3*chunk]); err != nil {
		t.Fatal(err)
	}
	if err := flush(t, c0, fid); err != nil {
		t.Fatalf("FLUSH through arrival node 0: %v", err)
	}
	if s0, s1 := a0.Disk.Syncs(), a1.Disk.Syncs(); s0 != 1 || s1 != 2 {
		t.Errorf("FLUSH through arrival node 0 after a WRITE through arrival node 1 flushed %d and %d, want 1 and 2", s0, s1)
	}

	// The channel through arrival node 1 writes, then its client closes
	// it: the arrival node flushes as the channel ends, and says so.
	if _, err := c1.Write(fid, 3*chunk, data[3*chunk:4*chunk]); err != nil {
		t.Fatal(err)
	}
	c1.Close()
	waitFor(t, "the channel through arrival node 1 to end", func() bool { return channels(n.home, first.Session.ID) == 2 })
	if s1 := a1.Disk.Syncs(); s1 != 3 {
		t.Errorf("arrival node 1 flushed %d time(s) by the end of its channel, want 3", s1)
	}
	if err := flush(t, first, fid); err != nil {
		t.Errorf("FLUSH after a channel that wrote ended, flushed: %v", err)
	}

	// Arrival node 0 writes, then cannot be reached (its relays break, as
	// when it dies): the FLUSH cannot confirm its bytes and fails; the
	// one after succeeds.
	if _, err := c0.Write(fid, 4*chunk, data[4*chunk:]); err != nil {
		t.Fatal(err)
	}
	n.meshes[0].Close()
	waitFor(t, "the channel through arrival node 0 to end", func() bool { return channels(n.home, first.Session.ID) == 1 })
	if err := flush(t, first, fid); err != smb2.StatusUnexpectedIOError {
		t.Errorf("FLUSH after the arrival node that wrote was lost: %v, want STATUS_UNEXPECTED_IO_ERROR", err)
	}
	if err := flush(t, first, fid); err != nil {
		t.Errorf("the FLUSH after: %v", err)
	}
	first.CloseFile(fid)
	if got, err := os.ReadFile(filepath.Join(dir, "flush.dat")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("flush.dat: %d bytes, %v", len(got), err)
	}
}

// TestArrivalNodeWithoutTheFileRelays: an arrival node whose share does
// not hold the file (its root is another directory), or that does not
// serve the share, relays the channel's large WRITEs and READs to the
// home node, as small ones; they succeed with the right bytes.
func TestArrivalNodeWithoutTheFileRelays(t *testing.T) {
	for _, tc := range []struct{ name, root string }{{"OtherDirectory", t.TempDir()}, {"NoShare", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			n := newHosts(t, dir, tc.root)
			arrival := n.arrivals[0]
			first := n.connect(t)
			second := n.bind(t, first, 0)
			fid, err := first.Create("elsewhere.dat")
			if err != nil {
				t.Fatal(err)
			}
			data := randomBytes(128 << 10)
			if k, err := second.Write(fid, 0, data); err != nil || k != len(data) {
				t.Fatalf("WRITE through an arrival node without the file: %d, %v", k, err)
			}
			if err := writeThrough(t, second, fid, 0, data[:64<<10]); err != nil {
				t.Fatalf("write-through WRITE through an arrival node without the file: %v", err)
			}
			if got, err := second.Read(fid, 0, len(data)); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("READ through an arrival node without the file: %d bytes, %v", len(got), err)
			}
			if arrival.RemoteWrites() != 0 || arrival.RemoteReads() != 0 {
				t.Errorf("the arrival node moved bytes of a file its share does not hold: %d WRITEs, %d READs", arrival.RemoteWrites(), arrival.RemoteReads())
			}
			if h := n.home.Disk.Syncs(); h != 1 {
				t.Errorf("the home node, which wrote it, flushed the write-through WRITE %d time(s), want 1", h)
			}
			if err := flush(t, second, fid); err != nil {
				t.Errorf("FLUSH: %v", err)
			}
			first.CloseFile(fid)
			if got, err := os.ReadFile(filepath.Join(dir, "elsewhere.dat")); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("the file: %d bytes, %v", len(got), err)
			}
		})
	}
}

// TestArrivalNodeRefusesAnotherFile: the arrival node's share holds a
// different file under the same name (another FileID), or a directory;
// it does not read or write that but relays the requests, and the home
// node's file gets the bytes.
func TestArrivalNodeRefusesAnotherFile(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	decoy := randomBytes(128 << 10)
	if err := os.WriteFile(filepath.Join(other, "same.dat"), decoy, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(other, "dir.dat"), 0o755); err != nil {
		t.Fatal(err)
	}
	n := newHosts(t, dir, other)
	arrival := n.arrivals[0]
	first := n.connect(t)
	second := n.bind(t, first, 0)
	data := randomBytes(128 << 10)
	for _, name := range []string{"same.dat", "dir.dat"} {
		fid, err := first.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := second.Write(fid, 0, data); err != nil {
			t.Fatalf("WRITE of %s: %v", name, err)
		}
		if got, err := second.Read(fid, 0, len(data)); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("READ of %s: %d bytes, %v (the decoy's: %v)", name, len(got), err, bytes.Equal(got, decoy))
		}
		if arrival.RemoteWrites() != 0 || arrival.RemoteReads() != 0 {
			t.Errorf("the arrival node moved bytes of another %s: %d WRITEs, %d READs", name, arrival.RemoteWrites(), arrival.RemoteReads())
		}
		if got := arrival.Disk.Open(); got != 0 {
			t.Errorf("the arrival node keeps %d file(s) open that are not the open's: %v", got, arrival.Disk.OpenNames())
		}
		first.CloseFile(fid)
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("the home node's %s: %d bytes, %v", name, len(got), err)
		}
	}
	if got, err := os.ReadFile(filepath.Join(other, "same.dat")); err != nil || !bytes.Equal(got, decoy) {
		t.Errorf("the arrival node's other file changed")
	}
}
