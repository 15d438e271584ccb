package handoff_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/smbcluster/smbcluster/node/handoff"
	"github.com/smbcluster/smbcluster/node/mesh"
	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
	"google.golang.org/grpc"
)

// newNodes starts n nodes over one directory, each able to hand
// connections to the others over gRPC on an in-memory mesh.
func newNodes(t *testing.T, n int, opts servertest.Options) ([]*servertest.Server, string) {
	t.Helper()
	dir := t.TempDir()
	mem := mesh.NewMemory()
	addrs := map[string]string{}
	var ls []net.Listener
	for i := range n {
		l := mem.Listen(fmt.Sprintf("node%d", i+1))
		ls = append(ls, l)
		addrs[fmt.Sprintf("node%d", i+1)] = l.Addr().String()
	}
	opts.DiskRoot = dir
	var nodes []*servertest.Server
	for i := range n {
		self := fmt.Sprintf("node%d", i+1)
		others := map[string]string{}
		for name, a := range addrs {
			if name != self {
				others[name] = a
			}
		}
		m := mesh.New(self, func() map[string]string { return others }, mem.Dial, nil)
		t.Cleanup(m.Close)
		peers := handoff.New(m, nil)
		g := grpc.NewServer()
		peerv1.RegisterSessionServiceServer(g, peers.Service())
		go g.Serve(ls[i])
		t.Cleanup(g.Stop)
		o := opts
		configure := opts.Configure
		o.Configure = func(c *server.Config) {
			if configure != nil {
				configure(c)
			}
			c.SessionPeers = peers
			c.SessionTag = handoff.Tag(self)
		}
		s := servertest.Start(t, o)
		peers.Attach(s.Server)
		nodes = append(nodes, s)
	}
	return nodes, dir
}

// connectAs connects to addr as another connection of client guid, with a
// session of user's and a tree of the disk share (SMB 3.1.1).
func connectAs(t *testing.T, addr string, guid [16]byte, user, password string) *servertest.Conn {
	t.Helper()
	c := servertest.Dial(t, addr)
	c.ClientGUID = guid
	if err := c.Negotiate(smb2.Dialect311); err != nil {
		t.Fatal(err)
	}
	if err := c.SessionSetup(user, password); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TreeConnect(servertest.DiskShareName); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestConnectionChannelOfSessionsOnTwoNodes: one connection, made on a
// third node, is a channel of two sessions that two other nodes hold,
// each with an open (so neither can move): it is handed to the first
// session's node, which relays the second session's frames to its node.
// Both sessions work on it — signed or sealed, through many times the
// credits first granted, in compounds — each answered by its own node;
// the connection's end costs each session that channel only.
func TestConnectionChannelOfSessionsOnTwoNodes(t *testing.T) {
	for _, enc := range []server.EncryptionMode{server.EncryptOff, server.EncryptRequired} {
		t.Run(map[server.EncryptionMode]string{server.EncryptOff: "Signed", server.EncryptRequired: "Sealed"}[enc], func(t *testing.T) {
			nodes, dir := newNodes(t, 3, servertest.Options{Encryption: enc})
			a, b, c := nodes[0], nodes[1], nodes[2]
			first := servertest.Connect(t, a.Addr, servertest.Alice, servertest.AlicePassword, servertest.DiskShareName, smb2.Dialect311)
			second := connectAs(t, b.Addr, first.ClientGUID, servertest.Bob, servertest.BobPassword)
			s1, t1, s2, t2 := first.Session, first.TreeID, second.Session, second.TreeID
			first.Sign, second.Sign = true, true
			f1, err := first.Create("one.dat")
			if err != nil {
				t.Fatal(err)
			}
			f2, err := second.Create("two.dat")
			if err != nil {
				t.Fatal(err)
			}

			third := servertest.Dial(t, c.Addr)
			third.ClientGUID = first.ClientGUID
			if err := third.Negotiate(smb2.Dialect311); err != nil {
				t.Fatal(err)
			}
			if err := third.Bind(s1, servertest.Alice, servertest.AlicePassword); err != nil {
				t.Fatalf("bind to node 1's session through node 3: %v", err)
			}
			// Before the binding, a request of the other session on this
			// connection is refused as on one node.
			third.Session, third.TreeID, third.Sign, third.Encrypt, third.SkipVerify = s2, t2, false, false, true
			if _, err := third.Read(f2, 0, 10); !errors.Is(err, smb2.StatusUserSessionDeleted) {
				t.Fatalf("a READ of node 2's session on a connection not bound to it: %v, want STATUS_USER_SESSION_DELETED", err)
			}
			third.SkipVerify = false
			third.Use(s1, t1)
			if err := third.Bind(s2, servertest.Bob, servertest.BobPassword); err != nil {
				t.Fatalf("bind to node 2's session on the same connection: %v", err)
			}
			if !a.HoldsSession(s1.ID) || !b.HoldsSession(s2.ID) || c.HoldsSession(s1.ID) || c.HoldsSession(s2.ID) || a.HoldsSession(s2.ID) {
				t.Fatalf("sessions moved: node 1 holds s1 %v s2 %v, node 2 holds s2 %v, node 3 holds s1 %v s2 %v",
					a.HoldsSession(s1.ID), a.HoldsSession(s2.ID), b.HoldsSession(s2.ID), c.HoldsSession(s1.ID), c.HoldsSession(s2.ID))
			}
			third.Sign = true

			// Alternate between the sessions for several times the first
			// grant's credits: each node's answers carry the credits the
			// connection's window grants.
			d1, d2 := make([]byte, 64<<10), make([]byte, 64<<10)
			rand.Read(d1)
			rand.Read(d2)
			for i := range 300 {
				if i%2 == 0 {
					third.Use(s1, t1)
					if _, err := third.Write(f1, uint64(i/2%4)*4096, d1[i/2%4*4096:][:4096]); err != nil {
						t.Fatalf("WRITE %d of node 1's session: %v", i, err)
					}
				} else {
					third.Use(s2, t2)
					if _, err := third.Write(f2, uint64(i/2%4)*4096, d2[i/2%4*4096:][:4096]); err != nil {
						t.Fatalf("WRITE %d of node 2's session: %v", i, err)
					}
				}
			}
			third.Use(s2, t2)
			if _, err := third.Write(f2, 0, d2); err != nil {
				t.Fatalf("a 64 KiB WRITE of node 2's session: %v", err)
			}
			if got, err := third.Read(f2, 0, len(d2)); err != nil || !bytes.Equal(got, d2) {
				t.Fatalf("a 64 KiB READ of node 2's session: %v (equal %v)", err, bytes.Equal(got, d2))
			}
			// A related compound (CREATE, WRITE, CLOSE) of the relayed
			// session.
			req := servertest.CreateRequest("compound.dat")
			req.CreateDisposition = smb2.FileOverwriteIf
			hc, hw, hx := third.Header(smb2.CmdCreate), third.Header(smb2.CmdWrite), third.Header(smb2.CmdClose)
			hw.MessageID, hx.MessageID = hc.MessageID+1, hc.MessageID+2
			hw.Flags |= smb2.FlagRelatedOperations
			hx.Flags |= smb2.FlagRelatedOperations
			related := smb2.FileID{Persistent: ^uint64(0), Volatile: ^uint64(0)}
			w := &smb2.WriteRequest{DataOffset: 0x70, FileID: related, Data: []byte("compound")}
			x := &smb2.CloseRequest{FileID: related}
			hs, _ := third.SendCompound([]smb2.Header{hc, hw, hx}, [][]byte{servertest.Body(req), servertest.Body(w), servertest.Body(x)})
			for i, h := range hs {
				if smb2.Status(h.Status) != smb2.StatusSuccess {
					t.Fatalf("compound element %d: %v", i, smb2.Status(h.Status))
				}
			}
			if got, err := os.ReadFile(filepath.Join(dir, "compound.dat")); err != nil || string(got) != "compound" {
				t.Fatalf("compound.dat: %q, %v", got, err)
			}

			// Each session sees what the other channel wrote.
			first.Use(s1, t1)
			if got, err := first.Read(f1, 0, 4*4096); err != nil || !bytes.Equal(got, d1[:4*4096]) {
				t.Fatalf("node 1's session reads what the relayed channel wrote: %v", err)
			}
			if got, err := second.Read(f2, 0, len(d2)); err != nil || !bytes.Equal(got, d2) {
				t.Fatalf("node 2's session reads what the relayed channel wrote: %v", err)
			}

			// The connection's end costs each session that channel only.
			third.Close()
			if _, err := first.Read(f1, 0, 10); err != nil {
				t.Fatalf("node 1's session after the connection ended: %v", err)
			}
			if _, err := second.Read(f2, 0, 10); err != nil {
				t.Fatalf("node 2's session after the connection ended: %v", err)
			}
			if err := second.CloseFile(f2); err != nil {
				t.Fatal(err)
			}
			if err := first.CloseFile(f1); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRelayedBindRefusals: a binding relayed to another node is refused
// there as on one node — a wrong password — and the connection goes on
// serving its own session.
func TestRelayedBindRefusals(t *testing.T) {
	nodes, _ := newNodes(t, 2, servertest.Options{})
	a, b := nodes[0], nodes[1]
	first := servertest.Connect(t, a.Addr, servertest.Alice, servertest.AlicePassword, servertest.DiskShareName, smb2.Dialect311)
	second := connectAs(t, b.Addr, first.ClientGUID, servertest.Bob, servertest.BobPassword)
	own, ownTree := second.Session, second.TreeID
	fid, err := second.Create("held.txt") // the session cannot move
	if err != nil {
		t.Fatal(err)
	}
	if err := second.Bind(first.Session, servertest.Alice, "wrong"); !errors.Is(err, smb2.StatusLogonFailure) {
		t.Fatalf("bind with a wrong password through a session relay: %v, want STATUS_LOGON_FAILURE", err)
	}
	second.Use(own, ownTree)
	if _, err := second.Write(fid, 0, []byte("still here")); err != nil {
		t.Fatalf("the connection's own session after a refused relayed bind: %v", err)
	}
}

// TestNodeGoneEndsItsRelays: when the cluster says the home node's
// incarnation ended, the arrival node closes the channels it handed
// there, even if the home node never closed them (stopped, not killed):
// the client reconnects instead of waiting on it.
func TestNodeGoneEndsItsRelays(t *testing.T) {
	p := newPair(t, servertest.Options{})
	_, second := p.bind(t, true)
	if err := second.Echo(); err != nil {
		t.Fatal(err)
	}
	p.arrivalMesh.NodeGone("home")
	if err := second.WaitClosed(); err != nil {
		t.Fatalf("the handed-over channel after its home node was declared gone: %v", err)
	}
}

// TestRelayedSessionBadFrames: malformed messages naming a relayed
// session — a header cut short, a compound whose next command points past
// the end, a sealed message that does not open — end the connection at
// the node relaying it, as they would on one node; both nodes go on
// serving.
func TestRelayedSessionBadFrames(t *testing.T) {
	p := newPair(t, servertest.Options{})
	first := servertest.Connect(t, p.home.Addr, servertest.Alice, servertest.AlicePassword, servertest.DiskShareName, smb2.Dialect311)
	sid := first.Session.ID
	short := make([]byte, smb2.HeaderSize-8)
	binary.LittleEndian.PutUint32(short, smb2.ProtocolID)
	cut := make([]byte, smb2.HeaderSize+8)
	h := smb2.Header{Command: smb2.CmdEcho, SessionID: sid, NextCommand: 4096, Credits: 1}
	h.Encode(cut)
	sealed := make([]byte, 52+64)
	binary.LittleEndian.PutUint32(sealed, smb2.TransformProtocolID)
	binary.LittleEndian.PutUint32(sealed[36:], 64)  // OriginalMessageSize
	binary.LittleEndian.PutUint16(sealed[42:], 1)   // Flags: encrypted
	binary.LittleEndian.PutUint64(sealed[44:], sid) // SessionId
	for name, msg := range map[string][]byte{"Short": append(short[:40:40], binary.LittleEndian.AppendUint64(nil, sid)...), "Cut": cut, "Sealed": sealed} {
		t.Run(name, func(t *testing.T) {
			third := connectAs(t, p.arrival.Addr, first.ClientGUID, servertest.Bob, servertest.BobPassword)
			if _, err := third.Create(name + ".txt"); err != nil { // its session cannot move
				t.Fatal(err)
			}
			if err := third.Bind(first.Session, servertest.Alice, servertest.AlicePassword); err != nil {
				t.Fatal(err)
			}
			if err := third.SendFrame(msg); err != nil {
				t.Fatal(err)
			}
			if err := third.WaitClosed(); err != nil {
				t.Fatalf("a malformed message of the relayed session: %v", err)
			}
			if err := first.Echo(); err != nil {
				t.Fatalf("the home node after it: %v", err)
			}
			servertest.Connect(t, p.arrival.Addr, servertest.Alice, servertest.AlicePassword, servertest.DiskShareName)
		})
	}
}

// TestFencedNodeRelaysNothing: a node whose fencing ended (its lease
// deadline passed) passes no frame of a relayed session on — not a
// WRITE to a file — and drops the connection, as it drops one whose
// request it would serve; the session's node, not fenced, is left alone.
func TestFencedNodeRelaysNothing(t *testing.T) {
	ctl := &server.Control{}
	started := 0
	p := newPair(t, servertest.Options{Configure: func(c *server.Config) {
		if started++; started == 2 { // the arrival node: the one relaying
			c.Control = ctl
		}
	}})
	first := servertest.Connect(t, p.home.Addr, servertest.Alice, servertest.AlicePassword, servertest.DiskShareName, smb2.Dialect311)
	third := connectAs(t, p.arrival.Addr, first.ClientGUID, servertest.Bob, servertest.BobPassword)
	if _, err := third.Create("held.txt"); err != nil { // its session cannot move
		t.Fatal(err)
	}
	if err := third.Bind(first.Session, servertest.Alice, servertest.AlicePassword); err != nil {
		t.Fatal(err)
	}
	third.TreeID = first.TreeID
	if err := third.Echo(); err != nil {
		t.Fatal(err)
	}
	fid, err := first.Create("fenced.txt")
	if err != nil {
		t.Fatal(err)
	}
	ctl.SetValid(func() bool { return false })
	w := &smb2.WriteRequest{DataOffset: 0x70, FileID: fid, Data: []byte("fenced")}
	if _, err := third.PostCompound([]smb2.Header{third.Header(smb2.CmdWrite)}, [][]byte{servertest.Body(w)}); err != nil {
		t.Fatal(err)
	}
	if err := third.WaitClosed(); err != nil {
		t.Fatalf("a relayed session's WRITE through a fenced node: %v", err)
	}
	if err := first.Echo(); err != nil {
		t.Fatalf("the session's node after it: %v", err)
	}
	if got, err := first.Read(fid, 0, 10); !errors.Is(err, smb2.StatusEndOfFile) {
		t.Fatalf("fenced.txt after a WRITE through a fenced node: %q, %v, want it empty", got, err)
	}
}

// TestFencedArrivalNodeRelaysNothing: a fenced node carries nothing more
// of a channel it handed to another node — not a large WRITE, whose
// payload it would write itself — and drops the connection.
func TestFencedArrivalNodeRelaysNothing(t *testing.T) {
	ctl := &server.Control{}
	started := 0
	p := newPair(t, servertest.Options{Configure: func(c *server.Config) {
		if started++; started == 2 { // the arrival node
			c.Control = ctl
		}
	}})
	first, second := p.bind(t, true)
	fid, err := first.Create("fenced.dat")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := second.Write(fid, 0, make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	ctl.SetValid(func() bool { return false })
	data := bytes.Repeat([]byte{'x'}, 64<<10)
	w := &smb2.WriteRequest{DataOffset: 0x70, FileID: fid, Data: data}
	if _, err := second.PostCompound([]smb2.Header{second.Header(smb2.CmdWrite)}, [][]byte{servertest.Body(w)}); err != nil {
		t.Fatal(err)
	}
	if err := second.WaitClosed(); err != nil {
		t.Fatalf("a WRITE through a fenced arrival node: %v", err)
	}
	if got, err := first.Read(fid, 0, 64<<10); err != nil || bytes.Contains(got, []byte{'x'}) {
		t.Fatalf("the file after a WRITE through a fenced arrival node: %v (written: %v)", err, bytes.Contains(got, []byte{'x'}))
	}
}

// TestBadGrantsEndTheRelay: the home node takes the credits a relaying
// node grants (RelayMessage.grants) only as the server can (at most a
// compound's worth, each a 16-bit count, and only on a connection whose
// window the relaying node keeps); other grants end the relay.
func TestBadGrantsEndTheRelay(t *testing.T) {
	grants := func(n int, credits uint32) []*peerv1.RelayGrant {
		g := make([]*peerv1.RelayGrant, n)
		for i := range g {
			g[i] = &peerv1.RelayGrant{MessageId: uint64(i + 1), Credits: credits}
		}
		return g
	}
	for name, tc := range map[string]struct {
		atRelay bool
		grants  []*peerv1.RelayGrant
	}{
		"TooMany":         {true, grants(65, 1)},
		"TooLarge":        {true, grants(1, 1<<16)},
		"OwnCreditWindow": {false, grants(1, 1)},
	} {
		t.Run(name, func(t *testing.T) {
			p := newPair(t, servertest.Options{})
			cc, err := p.arrivalMesh.Node("home")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), servertest.DefaultTimeout)
			defer cancel()
			stream, err := peerv1.NewSessionServiceClient(cc).Relay(ctx)
			if err != nil {
				t.Fatal(err)
			}
			h := &peerv1.Handoff{Dialect: uint32(smb2.Dialect311), ClientGuid: make([]byte, 16), PreauthHash: make([]byte, 64),
				CreditsAtRelay: tc.atRelay, ClientAddr: "client", Node: "arrival", RelayId: 1}
			if !tc.atRelay { // a fresh window of the home node's size
				h.CreditsHigh = 1
				h.CreditsUsed = make([]uint64, (int(p.home.Config().MaxCredits)+63)/64)
			}
			if err := stream.Send(&peerv1.RelayMessage{Handoff: h}); err != nil {
				t.Fatal(err)
			}
			if err := stream.Send(&peerv1.RelayMessage{Grants: tc.grants}); err != nil {
				t.Fatal(err)
			}
			for {
				_, err := stream.Recv()
				switch {
				case err == nil:
					continue
				case ctx.Err() != nil:
					t.Fatal("the relay outlived its bad grants")
				case !errors.Is(err, io.EOF):
					t.Fatalf("the relay ended with %v, not as the home node ends a connection", err)
				}
				return
			}
		})
	}
}
