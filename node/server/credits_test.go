package server_test

import (
	"bytes"
	"testing"

	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// outstanding is how many message ids the client may still use.
func outstanding(c *servertest.Conn) uint64 { return c.CreditLimit - c.NextMessageID }

// TestCreditsGranted: NEGOTIATE and SESSION_SETUP grant what the client
// asks for ([MS-SMB2] 3.3.1.2), so a client has credits to pipeline with.
func TestCreditsGranted(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	for _, d := range []uint16{smb2.Dialect202, smb2.Dialect311} {
		c := servertest.Dial(t, srv.Addr)
		c.CreditRequest = 10
		if err := c.Negotiate(d); err != nil {
			t.Fatal(err)
		}
		if got := outstanding(c); got != 10 {
			t.Errorf("%s: %d credits after NEGOTIATE, want 10", servertest.DialectName(d), got)
		}
		if err := c.SessionSetup(servertest.Alice, servertest.AlicePassword); err != nil {
			t.Fatal(err)
		}
		// Two SESSION_SETUP requests each used one credit and got ten.
		if got := outstanding(c); got != 28 {
			t.Errorf("%s: %d credits after SESSION_SETUP, want 28", servertest.DialectName(d), got)
		}
	}
}

// TestCreditsZeroRequest: a client asking for no credits is never left
// with none ([MS-SMB2] 3.3.1.2); like Samba, every response grants at
// least the one credit its request used.
func TestCreditsZeroRequest(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, "")
	c.CreditRequest = 0
	before := outstanding(c)
	for range 5 {
		if err := c.Echo(); err != nil {
			t.Fatal(err)
		}
		if got := outstanding(c); got == 0 || got > before {
			t.Fatalf("%d credits after asking for none (had %d)", got, before)
		}
	}
}

// TestMessageIDReusedDrops: a message id used twice ends the connection
// ([MS-SMB2] 3.3.5.2.3), and the server keeps serving others.
func TestMessageIDReusedDrops(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName)
	h := c.Header(smb2.CmdEcho)
	c.Send(h, servertest.Body(&smb2.EchoRequest{}))
	if _, err := c.Post(h, servertest.Body(&smb2.EchoRequest{})); err != nil {
		t.Fatal(err)
	}
	c.ExpectClosed()
	servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName).Echo()
}

// TestMessageIDOutsideWindowDrops: an id past the granted window, or one
// whose charge runs past it, ends the connection.
func TestMessageIDOutsideWindowDrops(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	for name, mod := range map[string]func(c *servertest.Conn, h *smb2.Header){
		"past the window": func(c *servertest.Conn, h *smb2.Header) { h.MessageID = c.CreditLimit + 5 },
		"at the limit":    func(c *servertest.Conn, h *smb2.Header) { h.MessageID = c.CreditLimit },
		"charge too big":  func(c *servertest.Conn, h *smb2.Header) { h.CreditCharge = uint16(outstanding(c) + 1) },
		"wraps around":    func(c *servertest.Conn, h *smb2.Header) { h.MessageID = ^uint64(0) - 1; h.CreditCharge = 4 },
		"already retired": func(c *servertest.Conn, h *smb2.Header) { h.MessageID = 1 },
	} {
		t.Run(name, func(t *testing.T) {
			c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, "")
			h := c.Header(smb2.CmdEcho)
			mod(c, &h)
			if _, err := c.Post(h, servertest.Body(&smb2.EchoRequest{})); err != nil {
				t.Fatal(err)
			}
			c.ExpectClosed()
		})
	}
}

// TestMultiCreditCharge: a READ or WRITE larger than 64 KiB must pay one
// credit per 64 KiB ([MS-SMB2] 3.3.5.2.5).
func TestMultiCreditCharge(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName)
	fid, err := c.Create("big")
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte{0x5a}, 3*65536)

	h := c.Header(smb2.CmdWrite)
	h.CreditCharge = 2
	rh, _ := c.Send(h, servertest.Body(&smb2.WriteRequest{FileID: fid, Data: data}))
	if st := smb2.Status(rh.Status); st != smb2.StatusInvalidParameter {
		t.Errorf("WRITE of 192 KiB charged 2: %v, want STATUS_INVALID_PARAMETER", st)
	}
	if n, err := c.Write(fid, 0, data); err != nil || n != len(data) {
		t.Fatalf("WRITE of 192 KiB charged 3: %d, %v", n, err)
	}

	h = c.Header(smb2.CmdRead)
	h.CreditCharge = 1
	rh, _ = c.Send(h, servertest.Body(&smb2.ReadRequest{FileID: fid, Length: 65537}))
	if st := smb2.Status(rh.Status); st != smb2.StatusInvalidParameter {
		t.Errorf("READ of 64 KiB + 1 charged 1: %v, want STATUS_INVALID_PARAMETER", st)
	}
	got, err := c.Read(fid, 0, len(data))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("READ charged 3: %d bytes, %v", len(got), err)
	}
	if err := c.CloseFile(fid); err != nil {
		t.Fatal(err)
	}
}

// TestCreditWindowMaximum: however much a client asks for, its window never
// exceeds Config.MaxCredits.
func TestCreditWindowMaximum(t *testing.T) {
	for _, max := range []uint16{64, 100, 130} {
		srv := servertest.Start(t, servertest.Options{MaxCredits: max})
		c := servertest.Dial(t, srv.Addr)
		c.CreditRequest = 1000
		if err := c.Negotiate(); err != nil {
			t.Fatal(err)
		}
		if err := c.SessionSetup(servertest.Alice, servertest.AlicePassword); err != nil {
			t.Fatal(err)
		}
		for range 5 {
			if err := c.Echo(); err != nil {
				t.Fatal(err)
			}
			if got := outstanding(c); got > uint64(max) {
				t.Fatalf("MaxCredits %d: window of %d credits", max, got)
			}
		}
	}
}

// TestManyCredits: a client can hold at least 512 credits and use them all
// at once: 512 requests in flight before reading any response.
func TestManyCredits(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c := servertest.Dial(t, srv.Addr)
	c.CreditRequest = 600
	if err := c.Negotiate(); err != nil {
		t.Fatal(err)
	}
	if err := c.SessionSetup(servertest.Alice, servertest.AlicePassword); err != nil {
		t.Fatal(err)
	}
	if got := outstanding(c); got < 512 {
		t.Fatalf("%d credits, want ≥ 512", got)
	}
	c.CreditRequest = 1
	n := int(outstanding(c))
	for range n {
		if _, err := c.Post(c.Header(smb2.CmdEcho), servertest.Body(&smb2.EchoRequest{})); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		hs, _, err := c.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if st := smb2.Status(hs[0].Status); st != smb2.StatusSuccess {
			t.Fatalf("ECHO: %v", st)
		}
	}
	if err := c.Echo(); err != nil {
		t.Fatal(err)
	}
}
