package handoff_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/smbcluster/smbcluster/node/handoff"
	"github.com/smbcluster/smbcluster/node/mesh"
	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/signing"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
	"google.golang.org/grpc"
)

// pair is two nodes over one directory: home holds the sessions, arrival
// hands binding connections over to it through real gRPC.
type pair struct {
	home, arrival *servertest.Server
	dir           string
	arrivalMesh   *mesh.Mesh
}

func newPair(t testing.TB, opts servertest.Options) *pair {
	t.Helper()
	return newPairMounts(t, opts, "")
}

// newPairMounts is newPair with the arrival node's share on a mount of
// its own (servertest.Options.DiskMount), when arrivalMount is set.
func newPairMounts(t testing.TB, opts servertest.Options, arrivalMount string) *pair {
	t.Helper()
	dir := t.TempDir()
	mem := mesh.NewMemory()
	l := mem.Listen("home")
	homeMesh := mesh.New("home", func() map[string]string { return nil }, mem.Dial, nil)
	t.Cleanup(homeMesh.Close)
	homePeers := handoff.New(homeMesh, nil)
	g := grpc.NewServer()
	peerv1.RegisterSessionServiceServer(g, homePeers.Service())
	go g.Serve(l)
	t.Cleanup(g.Stop)
	arrivalMesh := mesh.New("arrival", func() map[string]string { return map[string]string{"home": l.Addr().String()} }, mem.Dial, nil)
	t.Cleanup(arrivalMesh.Close)
	arrivalPeers := handoff.New(arrivalMesh, nil)

	opts.DiskRoot = dir
	configure := opts.Configure
	homeOpts := opts
	homeOpts.Configure = func(c *server.Config) {
		if configure != nil {
			configure(c)
		}
		c.SessionTag = handoff.Tag("home")
	}
	home := servertest.Start(t, homeOpts)
	homePeers.Attach(home.Server)
	opts.Configure = func(c *server.Config) {
		if configure != nil {
			configure(c)
		}
		c.SessionPeers = arrivalPeers
		c.SessionTag = handoff.Tag("arrival")
	}
	opts.DiskMount = arrivalMount
	arrival := servertest.Start(t, opts)
	arrivalPeers.Attach(arrival.Server)
	return &pair{home: home, arrival: arrival, dir: dir, arrivalMesh: arrivalMesh}
}

// bind makes a session on the home node and binds a channel through the
// arrival node.
func (p *pair) bind(t *testing.T, sign bool) (first, second *servertest.Conn) {
	t.Helper()
	first = servertest.Connect(t, p.home.Addr, servertest.Alice, servertest.AlicePassword, servertest.DiskShareName)
	second = servertest.Dial(t, p.arrival.Addr)
	second.ClientGUID = first.ClientGUID
	if err := second.Negotiate(smb2.Dialect311); err != nil {
		t.Fatal(err)
	}
	if err := second.Bind(first.Session, servertest.Alice, servertest.AlicePassword); err != nil {
		t.Fatalf("bind through the arrival node: %v", err)
	}
	second.TreeID = first.TreeID
	first.Sign, second.Sign = sign, sign
	return first, second
}

// TestReadsServedByArrivalNode: a channel bound through another node reads
// an open made through the home node; the large READs' bytes leave from
// the arrival node's own descriptor, plain (sendfile) and signed, and match
// the file; small READs and everything else go through the relay.
func TestReadsServedByArrivalNode(t *testing.T) {
	for _, sign := range []bool{false, true} {
		name := map[bool]string{false: "Plain", true: "Signed"}[sign]
		t.Run(name, func(t *testing.T) {
			p := newPair(t, servertest.Options{})
			data := make([]byte, 1<<20)
			rand.Read(data)
			if err := os.WriteFile(filepath.Join(p.dir, "big.dat"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			first, second := p.bind(t, sign)
			fid, err := first.Create("big.dat")
			if err != nil {
				t.Fatal(err)
			}
			const chunk = 64 << 10
			for off := 0; off < len(data); off += chunk {
				got, err := second.Read(fid, uint64(off), chunk)
				if err != nil || !bytes.Equal(got, data[off:off+chunk]) {
					t.Fatalf("READ at %d through the arrival node: %v (equal: %v)", off, err, bytes.Equal(got, data[off:off+chunk]))
				}
			}
			if got := p.arrival.RemoteReads(); got != uint64(len(data)/chunk) {
				t.Errorf("READs sent by the arrival node: %d, want %d", got, len(data)/chunk)
			}
			// Past the end: the home node answers (STATUS_END_OF_FILE).
			if _, err := second.Read(fid, uint64(len(data)), chunk); !errors.Is(err, smb2.StatusEndOfFile) {
				t.Errorf("READ past the end: %v, want STATUS_END_OF_FILE", err)
			}
			// A short read at the end is cut where the file ends.
			got, err := second.Read(fid, uint64(len(data)-1000), chunk)
			if err != nil || !bytes.Equal(got, data[len(data)-1000:]) {
				t.Errorf("READ across the end: %d bytes, %v", len(got), err)
			}
			// Small READs travel through the relay.
			before := p.arrival.RemoteReads()
			if got, err := second.Read(fid, 0, 4096); err != nil || !bytes.Equal(got, data[:4096]) {
				t.Errorf("small READ: %v", err)
			}
			if p.arrival.RemoteReads() != before {
				t.Errorf("a 4 KiB READ was sent by the arrival node")
			}
			if err := second.CloseFile(fid); err != nil {
				t.Fatal(err)
			}
			if _, err := second.Read(fid, 0, chunk); !errors.Is(err, smb2.StatusFileClosed) {
				t.Errorf("READ of a closed open through the arrival node: %v, want STATUS_FILE_CLOSED", err)
			}
		})
	}
}

// TestWritesKeptOnArrivalNode: a channel bound through another node writes
// an open made through the home node; unsigned large WRITEs' payloads are
// written by the arrival node to its own descriptor (the home node runs the
// checks and answers), signed ones too once the arrival node verified
// them, and the file holds every byte; a file the arrival node's share
// does not hold (each test server has a memfs of its own) takes the relay.
func TestWritesKeptOnArrivalNode(t *testing.T) {
	p := newPair(t, servertest.Options{})
	data := make([]byte, 1<<20)
	rand.Read(data)
	first, second := p.bind(t, false)
	fid, err := first.Create("written.dat")
	if err != nil {
		t.Fatal(err)
	}
	const chunk = 64 << 10
	for off := 0; off < len(data)/2; off += chunk {
		if n, err := second.Write(fid, uint64(off), data[off:off+chunk]); err != nil || n != chunk {
			t.Fatalf("WRITE at %d through the arrival node: %d, %v", off, n, err)
		}
	}
	if got := p.arrival.RemoteWrites(); got != uint64(len(data)/2/chunk) {
		t.Errorf("WRITEs written by the arrival node: %d, want %d", got, len(data)/2/chunk)
	}
	second.Sign = true
	for off := len(data) / 2; off < len(data); off += chunk {
		if n, err := second.Write(fid, uint64(off), data[off:off+chunk]); err != nil || n != chunk {
			t.Fatalf("signed WRITE at %d: %d, %v", off, n, err)
		}
	}
	if got := p.arrival.RemoteWrites(); got != uint64(len(data)/chunk) {
		t.Errorf("WRITEs written by the arrival node, signed ones included: %d, want %d", got, len(data)/chunk)
	}
	// A signed WRITE whose signature does not verify is not written by
	// the arrival node, and the home node refuses it.
	bad := servertest.Dial(t, p.arrival.Addr)
	bad.ClientGUID = first.ClientGUID
	if err := bad.Negotiate(smb2.Dialect311); err != nil {
		t.Fatal(err)
	}
	if err := bad.Bind(first.Session, servertest.Alice, servertest.AlicePassword); err != nil {
		t.Fatal(err)
	}
	bad.TreeID = first.TreeID
	wrong := make([]byte, 16)
	rand.Read(wrong)
	if err := bad.UseSigningKey(wrong); err != nil {
		t.Fatal(err)
	}
	before := p.arrival.RemoteWrites()
	hdr := bad.Header(smb2.CmdWrite)
	hdr.CreditCharge = bad.Charge(chunk)
	if _, err := bad.Post(hdr, servertest.Body(&smb2.WriteRequest{Offset: 0, FileID: fid, Data: make([]byte, chunk)})); err != nil {
		t.Fatal(err)
	}
	// Refused, unsigned or signed with the real key: either way not a
	// success this client can verify.
	if hs, _, err := bad.Recv(); err == nil && smb2.Status(hs[0].Status) == smb2.StatusSuccess {
		t.Errorf("a WRITE with a bad signature through the arrival node was accepted")
	}
	if p.arrival.RemoteWrites() != before {
		t.Errorf("the arrival node wrote a WRITE whose signature does not verify")
	}
	if err := first.CloseFile(fid); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(p.dir, "written.dat"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the file after WRITEs through both nodes: %d bytes, %v (equal: %v)", len(got), err, bytes.Equal(got, data))
	}

	// A memfs share: the arrival node's is another memfs, without the file.
	mem := servertest.Dial(t, p.arrival.Addr)
	mem.ClientGUID = first.ClientGUID
	if err := mem.Negotiate(smb2.Dialect311); err != nil {
		t.Fatal(err)
	}
	if err := mem.Bind(first.Session, servertest.Alice, servertest.AlicePassword); err != nil {
		t.Fatal(err)
	}
	mem.Sign = false
	if _, err := first.TreeConnect(servertest.ShareName); err != nil {
		t.Fatal(err)
	}
	mem.TreeID = first.TreeID
	mfid, err := first.Create("mem.dat")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := mem.Write(mfid, 0, data[:chunk]); err != nil || n != chunk {
		t.Fatalf("WRITE to a memfs file through the arrival node: %d, %v", n, err)
	}
	if got, err := first.Read(mfid, 0, chunk); err != nil || !bytes.Equal(got, data[:chunk]) {
		t.Fatalf("READ back of the memfs file: %v", err)
	}
	first.CloseFile(mfid)
}

// TestWritesOnAnotherMountRelayed: when the arrival node's share is
// another mount of the filesystem than the home node's (separate hosts),
// a handed-over channel's large WRITEs are written by the home node
// (two mounts writing one file contend for it) while its large READs are
// still read on the arrival node; the file holds every byte.
func TestWritesOnAnotherMountRelayed(t *testing.T) {
	p := newPairMounts(t, servertest.Options{}, "another-host")
	data := make([]byte, 1<<20)
	rand.Read(data)
	first, second := p.bind(t, false)
	fid, err := first.Create("relayed.dat")
	if err != nil {
		t.Fatal(err)
	}
	const chunk = 64 << 10
	for off := 0; off < len(data); off += chunk {
		if n, err := second.Write(fid, uint64(off), data[off:off+chunk]); err != nil || n != chunk {
			t.Fatalf("WRITE at %d through the arrival node: %d, %v", off, n, err)
		}
	}
	if got := p.arrival.RemoteWrites(); got != 0 {
		t.Errorf("WRITEs the arrival node wrote on its own mount: %d, want 0", got)
	}
	reads := p.arrival.RemoteReads()
	if got, err := second.Read(fid, 0, chunk); err != nil || !bytes.Equal(got, data[:chunk]) {
		t.Fatalf("READ through the arrival node: %v", err)
	}
	if p.arrival.RemoteReads() == reads {
		t.Error("a large READ through the arrival node was not read on its own mount")
	}
	if err := first.CloseFile(fid); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(p.dir, "relayed.dat"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the file after WRITEs relayed to the home node: %d bytes, %v (equal: %v)", len(got), err, bytes.Equal(got, data))
	}
}

// TestConnectionMovesWithItsSession: a connection that authenticated a
// session of its own on the arrival node (a tree, no open) binds a channel
// of the home node's session (smbtorture's smb2.session.bind1 does so):
// its session moves with it to the home node, which serves both on it;
// a session with an open stays, and the binding is refused.
func TestConnectionMovesWithItsSession(t *testing.T) {
	p := newPair(t, servertest.Options{})
	first := servertest.Connect(t, p.home.Addr, servertest.Alice, servertest.AlicePassword, servertest.DiskShareName, smb2.Dialect311)
	second := servertest.Connect(t, p.arrival.Addr, servertest.Bob, servertest.BobPassword, servertest.DiskShareName, smb2.Dialect311)
	own, ownTree := second.Session, second.TreeID
	if err := second.Bind(first.Session, servertest.Alice, servertest.AlicePassword); err != nil {
		t.Fatalf("bind through the arrival node from a connection with a session of its own: %v", err)
	}
	if !p.home.HoldsSession(own.ID) || p.arrival.HoldsSession(own.ID) {
		t.Fatalf("the connection's own session is held by home %v, arrival %v; want it moved home", p.home.HoldsSession(own.ID), p.arrival.HoldsSession(own.ID))
	}
	// The bound channel works...
	second.TreeID = first.TreeID
	if err := second.Echo(); err != nil {
		t.Fatal(err)
	}
	// ...and so does the connection's own session, with its own key.
	second.Session, second.TreeID = own, ownTree
	if err := second.UseSigningKey(own.Keys.Signing); err != nil {
		t.Fatal(err)
	}
	fid, err := second.Create("moved.txt")
	if err != nil {
		t.Fatalf("create through the moved session: %v", err)
	}
	if _, err := second.Write(fid, 0, []byte("moved")); err != nil {
		t.Fatal(err)
	}
	if err := second.CloseFile(fid); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(p.dir, "moved.txt")); err != nil || string(got) != "moved" {
		t.Fatalf("moved.txt: %q, %v", got, err)
	}

	// A session with an open does not move: the connection stays, a
	// channel of both sessions (relayed.go; TestConnectionChannelOfSessionsOnTwoNodes).
	third := servertest.Connect(t, p.arrival.Addr, servertest.Bob, servertest.BobPassword, servertest.DiskShareName, smb2.Dialect311)
	held, heldTree := third.Session, third.TreeID
	if _, err := third.Create("held.txt"); err != nil {
		t.Fatal(err)
	}
	if err := third.Bind(first.Session, servertest.Alice, servertest.AlicePassword); err != nil {
		t.Fatalf("bind from a connection whose session holds an open: %v", err)
	}
	if !p.arrival.HoldsSession(held.ID) || p.home.HoldsSession(held.ID) {
		t.Fatalf("the session with an open moved: arrival holds it %v, home %v", p.arrival.HoldsSession(held.ID), p.home.HoldsSession(held.ID))
	}
	third.Use(first.Session, first.TreeID)
	if err := third.Echo(); err != nil {
		t.Fatal(err)
	}
	third.Use(held, heldTree)
	if _, err := third.Create("still.txt"); err != nil {
		t.Fatalf("the connection's own session after binding another node's: %v", err)
	}
}

// TestBindAlgorithmsAcrossNodes: a channel bound through another node
// signs with every signing algorithm and seals with every cipher, as one
// bound on the same node: a 3.1.1 session of each signing algorithm
// (HMAC-SHA256, AES-CMAC, AES-GMAC) and 3.0.2's AES-CMAC, signed; every
// cipher on an encrypting server. The data written through the bound
// channel reads back through the first; the arrival node sends the READ's
// bytes (signed or sealed) and writes the WRITE's (sealed, or signed: it
// verifies the signature with the channel's key).
func TestBindAlgorithmsAcrossNodes(t *testing.T) {
	type variant struct {
		name    string
		dialect uint16
		algs    []uint16
		ciphers []uint16
		enc     server.EncryptionMode
	}
	var vs []variant
	for _, alg := range []uint16{signing.HMACSHA256, signing.AESCMAC, signing.AESGMAC} {
		vs = append(vs, variant{name: fmt.Sprintf("311-sign%d", alg), dialect: smb2.Dialect311, algs: []uint16{alg}})
	}
	vs = append(vs, variant{name: "302-cmac", dialect: smb2.Dialect302})
	for _, c := range []uint16{signing.AES128CCM, signing.AES128GCM, signing.AES256CCM, signing.AES256GCM} {
		vs = append(vs, variant{name: fmt.Sprintf("311-cipher%d", c), dialect: smb2.Dialect311, ciphers: []uint16{c}, enc: server.EncryptRequired})
	}
	for _, v := range vs {
		t.Run(v.name, func(t *testing.T) {
			p := newPair(t, servertest.Options{Encryption: v.enc})
			first := servertest.Dial(t, p.home.Addr)
			first.SigningAlgs, first.Ciphers = v.algs, v.ciphers
			if err := first.Negotiate(v.dialect); err != nil {
				t.Fatal(err)
			}
			if err := first.SessionSetup(servertest.Alice, servertest.AlicePassword); err != nil {
				t.Fatal(err)
			}
			if _, err := first.TreeConnect(servertest.DiskShareName); err != nil {
				t.Fatal(err)
			}
			second := servertest.Dial(t, p.arrival.Addr)
			second.ClientGUID, second.SigningAlgs, second.Ciphers = first.ClientGUID, v.algs, v.ciphers
			if err := second.Negotiate(v.dialect); err != nil {
				t.Fatal(err)
			}
			if err := second.Bind(first.Session, servertest.Alice, servertest.AlicePassword); err != nil {
				t.Fatalf("bind through the arrival node: %v", err)
			}
			second.TreeID = first.TreeID
			if v.enc == server.EncryptOff {
				first.Sign, second.Sign = true, true
			}
			fid, err := first.Create("algs.dat")
			if err != nil {
				t.Fatal(err)
			}
			data := make([]byte, 64<<10)
			rand.Read(data)
			if _, err := second.Write(fid, 0, data); err != nil {
				t.Fatalf("WRITE through the bound channel: %v", err)
			}
			if got, err := second.Read(fid, 0, len(data)); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("READ through the bound channel: %v", err)
			}
			if got, err := first.Read(fid, 0, len(data)); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("READ through the first channel: %v", err)
			}
			// The bytes moved through the arrival node, signed or sealed.
			if p.arrival.RemoteReads() == 0 {
				t.Errorf("the READ through the bound channel was not sent by the arrival node")
			}
			if p.arrival.RemoteWrites() == 0 {
				t.Errorf("the WRITE through the bound channel was not written by the arrival node")
			}
			if err := second.CloseFile(fid); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRelayTakesBadFrames: frames a handed-over channel's client sends
// that are too short for any header (here 0 to 3 bytes) or are not SMB go
// to the home node, which drops the connection as it would its own; the
// arrival node goes on serving.
func TestRelayTakesBadFrames(t *testing.T) {
	for n := range 4 {
		p := newPair(t, servertest.Options{})
		_, second := p.bind(t, false)
		frame := append([]byte{0, 0, 0, byte(n)}, make([]byte, n)...)
		if _, err := second.NetConn().Write(frame); err != nil {
			t.Fatal(err)
		}
		if err := second.WaitClosed(); err != nil {
			t.Fatalf("a %d-byte frame through the arrival node: %v", n, err)
		}
		// The arrival node still serves a new client.
		servertest.Connect(t, p.arrival.Addr, servertest.Alice, servertest.AlicePassword, servertest.DiskShareName)
	}
}
