package server_test

import (
	"net"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
)

// waitFor polls cond until it holds; the server closes opens of a dropped
// connection asynchronously.
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

// openFiles creates n files and checks that the server and the file
// system both count them.
func openFiles(t *testing.T, srv *servertest.Server, c *servertest.Conn, n int) {
	t.Helper()
	before := srv.OpenCount()
	for i := range n {
		if _, err := c.Create("f" + string(rune('a'+i))); err != nil {
			t.Fatal(err)
		}
	}
	if got := srv.OpenCount(); got != before+n {
		t.Fatalf("%d opens, want %d", got, before+n)
	}
}

func noOpens(t *testing.T, srv *servertest.Server) {
	t.Helper()
	if n, f := srv.OpenCount(), srv.Tracker.Open(); n != 0 || f != 0 {
		t.Fatalf("%d opens and %d open files remain: %v", n, f, srv.Tracker.OpenNames())
	}
}

// TestLogoffClosesOpens ([MS-SMB2] 3.3.5.6): and the session id is gone.
func TestLogoffClosesOpens(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName)
	openFiles(t, srv, c, 3)
	if err := c.Logoff(); err != nil {
		t.Fatal(err)
	}
	noOpens(t, srv)
	h, _ := c.Call(smb2.CmdCreate, servertest.CreateRequest("after"))
	if st := smb2.Status(h.Status); st != smb2.StatusUserSessionDeleted {
		t.Fatalf("CREATE after LOGOFF: %v, want STATUS_USER_SESSION_DELETED", st)
	}
}

// TestTreeDisconnectClosesOpens ([MS-SMB2] 3.3.5.8): and the tree id is gone.
func TestTreeDisconnectClosesOpens(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName)
	openFiles(t, srv, c, 3)
	if err := c.TreeDisconnect(); err != nil {
		t.Fatal(err)
	}
	noOpens(t, srv)
	h, _ := c.Call(smb2.CmdCreate, servertest.CreateRequest("after"))
	if st := smb2.Status(h.Status); st != smb2.StatusNetworkNameDeleted {
		t.Fatalf("CREATE after TREE_DISCONNECT: %v, want STATUS_NETWORK_NAME_DELETED", st)
	}
	mustEcho(t, c)
}

// TestConnectionDropClosesOpens ([MS-SMB2] 3.3.7.1).
func TestConnectionDropClosesOpens(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	for _, d := range []uint16{smb2.Dialect202, smb2.Dialect311} {
		c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName, d)
		openFiles(t, srv, c, 4)
		c.Close()
		waitFor(t, "the opens of a closed connection to close", func() bool {
			return srv.OpenCount() == 0 && srv.Tracker.Open() == 0
		})
	}
}

// TestUnknownIDs: the status for each kind of stale id.
func TestUnknownIDs(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName)
	check := func(what string, h smb2.Header, want smb2.Status) {
		t.Helper()
		if st := smb2.Status(h.Status); st != want {
			t.Errorf("%s: %v, want %v", what, st, want)
		}
	}
	c.Sign = false // a made-up session has no key
	hdr := c.Header(smb2.CmdTreeConnect)
	hdr.SessionID ^= 0x5a5a
	h, _ := c.Send(hdr, servertest.Body(&smb2.TreeConnectRequest{Path: `\\127.0.0.1\share`}))
	check("unknown session", h, smb2.StatusUserSessionDeleted)
	// A SESSION_SETUP naming a session the server does not know (no
	// binding) is refused the same way ([MS-SMB2] 3.3.5.5, as smbd
	// answers), and the connection's own session goes on.
	hdr = c.Header(smb2.CmdSessionSetup)
	hdr.SessionID ^= 0x5a5a
	h, _ = c.Send(hdr, servertest.Body(&smb2.SessionSetupRequest{SecurityMode: 1, SecurityBuffer: []byte{0x60, 0}}))
	check("SESSION_SETUP of an unknown session", h, smb2.StatusUserSessionDeleted)
	c.Sign = true
	if err := c.Echo(); err != nil {
		t.Fatalf("the connection after a SESSION_SETUP of an unknown session: %v", err)
	}
	if _, err := c.Create("after-unknown-setup"); err != nil {
		t.Fatalf("the session after a SESSION_SETUP of an unknown session: %v", err)
	}

	hdr = c.Header(smb2.CmdCreate)
	hdr.TreeID += 77
	h, _ = c.Send(hdr, servertest.Body(servertest.CreateRequest("x")))
	check("unknown tree", h, smb2.StatusNetworkNameDeleted)

	fid := smb2.FileID{Persistent: 12345, Volatile: 12345}
	h, _ = c.Call(smb2.CmdRead, &smb2.ReadRequest{FileID: fid, Length: 10})
	check("READ of an unknown FileId", h, smb2.StatusFileClosed)
	h, _ = c.Call(smb2.CmdClose, &smb2.CloseRequest{FileID: fid})
	check("CLOSE of an unknown FileId", h, smb2.StatusFileClosed)

	real, err := c.Create("real")
	if err != nil {
		t.Fatal(err)
	}
	h, _ = c.Call(smb2.CmdWrite, &smb2.WriteRequest{FileID: smb2.FileID{Persistent: real.Persistent + 1, Volatile: real.Volatile}, Data: []byte("x")})
	check("WRITE with a wrong persistent half", h, smb2.StatusFileClosed)
	if err := c.CloseFile(real); err != nil {
		t.Fatal(err)
	}
	h, _ = c.Call(smb2.CmdClose, &smb2.CloseRequest{FileID: real})
	check("second CLOSE", h, smb2.StatusFileClosed)

	// Another session on the same connection cannot use alice's open.
	fid2, err := c.Create("alices")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SessionSetup(servertest.Bob, servertest.BobPassword); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TreeConnect(servertest.ShareName); err != nil {
		t.Fatal(err)
	}
	h, _ = c.Call(smb2.CmdRead, &smb2.ReadRequest{FileID: fid2, Length: 1})
	check("READ of another session's open", h, smb2.StatusFileClosed)
}

// TestWrongPasswordAndUnknownUser: STATUS_LOGON_FAILURE, and the
// connection can authenticate again.
func TestWrongPasswordAndUnknownUser(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c := servertest.Dial(t, srv.Addr)
	if err := c.Negotiate(); err != nil {
		t.Fatal(err)
	}
	for user, pass := range map[string]string{servertest.Alice: "wrong", "mallory": "x", servertest.Bob: servertest.AlicePassword} {
		if err := c.SessionSetup(user, pass); err != smb2.StatusLogonFailure {
			t.Errorf("%s: %v, want STATUS_LOGON_FAILURE", user, err)
		}
	}
	if err := c.SessionSetup(servertest.Alice, servertest.AlicePassword); err != nil {
		t.Fatal(err)
	}
	if len(srv.Sessions()) != 1 {
		t.Errorf("%d sessions, want 1", len(srv.Sessions()))
	}
}

// TestValidateNegotiate: 3.0 and 3.0.2 validate the negotiation
// ([MS-SMB2] 3.3.5.15.12); any mismatch drops the connection.
func TestValidateNegotiate(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	dialects := []uint16{smb2.Dialect202, smb2.Dialect210, smb2.Dialect300, smb2.Dialect302}
	for _, d := range []uint16{smb2.Dialect300, smb2.Dialect302} {
		t.Run(servertest.DialectName(d), func(t *testing.T) {
			c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName, dialects[:d&0xf/2+3]...)
			if c.Dialect != d {
				t.Fatalf("negotiated %s", servertest.DialectName(c.Dialect))
			}
			h, pdu := c.Send(ioctlValidate(c, nil))
			if h.Status != 0 {
				t.Fatalf("VALIDATE_NEGOTIATE_INFO: %v", smb2.Status(h.Status))
			}
			var resp smb2.IoctlResponse
			var out fscc.ValidateNegotiateInfoResponse
			if err := resp.Decode(pdu); err != nil || out.Decode(resp.Output) != nil {
				t.Fatalf("response: %v", err)
			}
			if out.Dialect != d || out.GUID != c.NegResponse.ServerGUID || out.Capabilities != c.NegResponse.Capabilities || out.SecurityMode != c.NegResponse.SecurityMode {
				t.Errorf("response %+v does not match NEGOTIATE %+v", out, c.NegResponse)
			}
		})
	}
	for name, mod := range map[string]func(*fscc.ValidateNegotiateInfoRequest){
		"dialects":      func(v *fscc.ValidateNegotiateInfoRequest) { v.Dialects = v.Dialects[1:] },
		"guid":          func(v *fscc.ValidateNegotiateInfoRequest) { v.GUID[0] ^= 1 },
		"capabilities":  func(v *fscc.ValidateNegotiateInfoRequest) { v.Capabilities ^= smb2.CapEncryption },
		"security mode": func(v *fscc.ValidateNegotiateInfoRequest) { v.SecurityMode ^= smb2.NegotiateSigningRequired },
		"truncated":     func(v *fscc.ValidateNegotiateInfoRequest) { v.Dialects = nil },
	} {
		t.Run("mismatch "+name, func(t *testing.T) {
			c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName, dialects...)
			if _, err := c.Post(ioctlValidate(c, mod)); err != nil {
				t.Fatal(err)
			}
			c.ExpectClosed()
		})
	}
}

// TestValidateNegotiate311 drops the connection: 3.1.1 protects the
// negotiation with the preauth hash instead ([MS-SMB2] 3.3.5.15.12).
func TestValidateNegotiate311(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName, smb2.Dialect311)
	if _, err := c.Post(ioctlValidate(c, nil)); err != nil {
		t.Fatal(err)
	}
	c.ExpectClosed()
}

// ioctlValidate is the header and body of a VALIDATE_NEGOTIATE_INFO request.
func ioctlValidate(c *servertest.Conn, mod func(*fscc.ValidateNegotiateInfoRequest)) (smb2.Header, []byte) {
	in := &fscc.ValidateNegotiateInfoRequest{Capabilities: c.Capabilities, GUID: c.ClientGUID, SecurityMode: c.SecurityMode, Dialects: c.Dialects}
	if mod != nil {
		mod(in)
	}
	b := make([]byte, in.Size())
	in.Encode(b)
	return c.Header(smb2.CmdIoctl), servertest.Body(&smb2.IoctlRequest{
		CtlCode: smb2.FsctlValidateNegotiateInfo, FileID: smb2.AnyFileID, Input: b, MaxOutputResponse: 24, Flags: smb2.IoctlIsFsctl})
}

// TestQueryNetworkInterfaces: FSCTL_QUERY_NETWORK_INTERFACE_INFO lists the
// listener's address ([MS-SMB2] 3.3.5.15.11).
func TestQueryNetworkInterfaces(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName, smb2.Dialect311)
	out, err := c.Ioctl(smb2.FsctlQueryNetworkInterfaceInfo, smb2.AnyFileID, nil, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	ifs, err := fscc.DecodeNetworkInterfaces(out)
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ := net.SplitHostPort(srv.Addr)
	found := false
	for _, i := range ifs {
		found = found || i.IP.Equal(net.ParseIP(host))
	}
	if !found {
		t.Fatalf("interfaces %+v do not list %s", ifs, host)
	}
	if _, err := c.Ioctl(smb2.FsctlQueryNetworkInterfaceInfo, smb2.AnyFileID, nil, 10); err != smb2.StatusBufferTooSmall {
		t.Errorf("10-byte output buffer: %v, want STATUS_BUFFER_TOO_SMALL", err)
	}
}
