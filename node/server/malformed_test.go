package server_test

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"

	"github.com/smbcluster/smbcluster/node/auth"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// requestBodies are valid encodings of every request ([MS-SMB2] 2.2.3 –
// 2.2.31), the file ones naming fid. The fuzz corpus starts from them.
func requestBodies(fid smb2.FileID) map[smb2.Command][]byte {
	b := servertest.Body
	q := &smb2.QueryInfoRequest{InfoType: 1, FileInfoClass: 5, OutputBufferLength: 4096, FileID: fid}
	return map[smb2.Command][]byte{
		smb2.CmdNegotiate:      b(&smb2.NegotiateRequest{SecurityMode: 1, Dialects: []uint16{smb2.Dialect202, smb2.Dialect302}}),
		smb2.CmdSessionSetup:   b(&smb2.SessionSetupRequest{SecurityMode: 1, SecurityBuffer: auth.NTLMNegotiate(true)}),
		smb2.CmdLogoff:         b(&smb2.LogoffRequest{}),
		smb2.CmdTreeConnect:    b(&smb2.TreeConnectRequest{Path: `\\127.0.0.1\share`}),
		smb2.CmdTreeDisconnect: b(&smb2.TreeDisconnectRequest{}),
		smb2.CmdCreate:         b(servertest.CreateRequest(`dir\name.txt`)),
		smb2.CmdClose:          b(&smb2.CloseRequest{Flags: smb2.ClosePostQueryAttrib, FileID: fid}),
		smb2.CmdFlush:          b(&smb2.FlushRequest{FileID: fid}),
		smb2.CmdRead:           b(&smb2.ReadRequest{Length: 1024, FileID: fid}),
		smb2.CmdWrite:          b(&smb2.WriteRequest{FileID: fid, Data: []byte("fuzz data")}),
		smb2.CmdLock:           b(&smb2.LockRequest{FileID: fid, Locks: []smb2.LockElement{{Offset: 0, Length: 10, Flags: 2}}}),
		smb2.CmdIoctl:          b(&smb2.IoctlRequest{CtlCode: smb2.FsctlQueryNetworkInterfaceInfo, FileID: fid, MaxOutputResponse: 4096, Flags: smb2.IoctlIsFsctl}),
		smb2.CmdCancel:         b(&smb2.CancelRequest{}),
		smb2.CmdEcho:           b(&smb2.EchoRequest{}),
		smb2.CmdQueryDirectory: b(&smb2.QueryDirectoryRequest{FileInformationClass: 37, FileID: fid, OutputBufferLength: 4096, FileName: "*"}),
		smb2.CmdChangeNotify:   b(&smb2.ChangeNotifyRequest{OutputBufferLength: 4096, FileID: fid, CompletionFilter: 0x17}),
		smb2.CmdQueryInfo:      b(q),
		smb2.CmdSetInfo:        b(&smb2.SetInfoRequest{InfoType: 1, FileInfoClass: 20, Buffer: make([]byte, 8), FileID: fid}),
		smb2.CmdOplockBreak:    b(&smb2.OplockBreakAck{FileID: fid}),
	}
}

// fixture is an authenticated connection with a tree and an open file.
type fixture struct {
	c   *servertest.Conn
	fid smb2.FileID
}

func newFixture(t testing.TB, srv *servertest.Server) *fixture {
	t.Helper()
	c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName)
	fid, err := c.Create("fixture")
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{c: c, fid: fid}
}

// answerOrClose reads what the server does after a bad request: any
// message counts as an answer; the connection may also close. It reports
// whether the connection is still open and fails on a timeout.
func answerOrClose(t testing.TB, c *servertest.Conn) (open bool) {
	t.Helper()
	_, err := c.ReadFrame()
	switch {
	case err == nil:
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server neither answered nor closed the connection: %v", err)
	}
	return false // reset
}

// TestMalformedFrames: bad NetBIOS framing, foreign protocol ids and SMB1
// after negotiation close the connection; the server goes on serving.
func TestMalformedFrames(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	smb1 := smb2.EncodeSMB1Negotiate([]string{"NT LM 0.12", "SMB 2.002", "SMB 2.???"})
	cases := map[string][]byte{
		"NetBIOS length 0":        {0, 0, 0, 0},
		"NetBIOS length 3":        {0, 0, 0, 3, 0xfe, 'S', 'M'},
		"NetBIOS length too big":  {0, 0xff, 0xff, 0xff},
		"NetBIOS keepalive":       {0x85, 0, 0, 0},
		"NetBIOS session request": {0x81, 0, 0, 4, 1, 2, 3, 4},
		"truncated header":        frame([]byte{0xfe, 'S', 'M', 'B', 64, 0, 0, 0, 0, 0}),
		"bad header size":         frame(append([]byte{0xfe, 'S', 'M', 'B', 63, 0}, make([]byte, 100)...)),
		"compression transform":   frame(append([]byte{0xfc, 'S', 'M', 'B'}, make([]byte, 60)...)),
		"unknown protocol":        frame(append([]byte{0xfa, 'S', 'M', 'B'}, make([]byte, 60)...)),
		"SMB1 after NEGOTIATE":    frame(smb1),
		"second NEGOTIATE":        nil, // built below
	}
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName)
			if raw == nil {
				h := c.Header(smb2.CmdNegotiate)
				if _, err := c.Post(h, servertest.Body(c.NegotiateRequest())); err != nil {
					t.Fatal(err)
				}
			} else if err := c.SendRaw(raw); err != nil {
				t.Fatal(err)
			}
			c.ExpectClosed()
		})
	}
	t.Run("request before NEGOTIATE", func(t *testing.T) {
		c := servertest.Dial(t, srv.Addr)
		if _, err := c.Post(c.Header(smb2.CmdEcho), servertest.Body(&smb2.EchoRequest{})); err != nil {
			t.Fatal(err)
		}
		c.ExpectClosed()
	})
	t.Run("SMB1 NEGOTIATE first", func(t *testing.T) {
		c := servertest.Dial(t, srv.Addr)
		if err := c.SendFrame(smb1); err != nil {
			t.Fatal(err)
		}
		hs, pdus, err := c.Recv()
		var resp smb2.NegotiateResponse
		if err != nil || resp.Decode(pdus[0]) != nil || hs[0].Status != 0 || resp.DialectRevision != smb2.DialectWildcard {
			t.Fatalf("SMB1 NEGOTIATE: %v %+v", err, resp)
		}
		c.NextMessageID = 1
		if err := c.Negotiate(smb2.Dialect311); err != nil {
			t.Fatal(err)
		}
		if err := c.SessionSetup(servertest.Alice, servertest.AlicePassword); err != nil {
			t.Fatal(err)
		}
	})
	mustEcho(t, servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, ""))
}

func frame(msg []byte) []byte {
	b := smb2.AppendTransportHeader(nil, len(msg))
	return append(b, msg...)
}

// TestBadStructureSize: a body whose StructureSize is wrong for its
// command fails with STATUS_INVALID_PARAMETER ([MS-SMB2] 3.3.5.2.6... each
// command's processing); an empty body likewise.
func TestBadStructureSize(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	f := newFixture(t, srv)
	bodies := requestBodies(f.fid)
	for cmd := smb2.CmdLogoff; cmd < smb2.NumCommands; cmd++ {
		if cmd == smb2.CmdCancel {
			continue
		}
		for _, mod := range []struct {
			name string
			body func([]byte) []byte
		}{
			{"size+2", func(b []byte) []byte { binary.LittleEndian.PutUint16(b, binary.LittleEndian.Uint16(b)+2); return b }},
			{"size 0", func(b []byte) []byte { binary.LittleEndian.PutUint16(b, 0); return b }},
			{"empty body", func([]byte) []byte { return nil }},
			{"one byte", func(b []byte) []byte { return b[:1] }},
		} {
			body := mod.body(append([]byte(nil), bodies[cmd]...))
			if cmd == smb2.CmdLogoff || cmd == smb2.CmdTreeDisconnect {
				// Checked on their own connection below: success would end the
				// session or tree.
				continue
			}
			h, _ := f.c.Send(f.c.Header(cmd), body)
			if st := smb2.Status(h.Status); st == smb2.StatusSuccess {
				t.Errorf("%v with %s: success, want an error", cmd, mod.name)
			}
		}
	}
	for _, cmd := range []smb2.Command{smb2.CmdLogoff, smb2.CmdTreeDisconnect} {
		c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName)
		h, _ := c.Send(c.Header(cmd), []byte{5, 0, 0, 0})
		if st := smb2.Status(h.Status); st != smb2.StatusInvalidParameter {
			t.Errorf("%v with StructureSize 5: %v, want STATUS_INVALID_PARAMETER", cmd, st)
		}
	}
	mustEcho(t, f.c)
}

// TestAbsurdFields: every 2- and 4-byte field of every request body set to
// all ones or a large offset: the server answers or closes, never hangs or
// panics, and keeps serving.
func TestAbsurdFields(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	f := newFixture(t, srv)
	for cmd, body := range requestBodies(f.fid) {
		if cmd == smb2.CmdNegotiate || cmd == smb2.CmdCancel || cmd == smb2.CmdLogoff || cmd == smb2.CmdSessionSetup {
			continue
		}
		for off := 2; off+2 <= len(body); off += 2 {
			for _, v := range []uint32{0xffffffff, 0x7fff, 0x10000} {
				b := append([]byte(nil), body...)
				binary.LittleEndian.PutUint16(b[off:], uint16(v))
				if off+4 <= len(b) && v > 0xffff {
					binary.LittleEndian.PutUint32(b[off:], v)
				}
				h := f.c.Header(cmd)
				if _, err := f.c.Post(h, b); err != nil {
					t.Fatal(err)
				}
				if !answerOrClose(t, f.c) {
					t.Logf("%v with %#x at %d closed the connection", cmd, v, off)
					f = newFixture(t, srv)
				}
			}
		}
	}
	mustEcho(t, f.c)
}
