package server_test

import (
	"testing"

	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/signing"
)

func mustEcho(t *testing.T, c *servertest.Conn) {
	t.Helper()
	if err := c.Echo(); err != nil {
		t.Fatalf("ECHO: %v", err)
	}
}

// signingCases are the signing algorithms per dialect family
// ([MS-SMB2] 3.1.4.1): HMAC-SHA256 for 2.x, AES-CMAC for 3.0 and 3.0.2,
// and for 3.1.1 the one the signing context negotiates (AES-CMAC without it).
var signingCases = []struct {
	name    string
	dialect uint16
	offer   []uint16 // 3.1.1 SigningAlgs; nil → the client default
	want    uint16
}{
	{"2.0.2", smb2.Dialect202, nil, signing.HMACSHA256},
	{"2.1", smb2.Dialect210, nil, signing.HMACSHA256},
	{"3.0", smb2.Dialect300, nil, signing.AESCMAC},
	{"3.0.2", smb2.Dialect302, nil, signing.AESCMAC},
	{"3.1.1 GMAC", smb2.Dialect311, []uint16{signing.AESGMAC}, signing.AESGMAC},
	{"3.1.1 CMAC", smb2.Dialect311, []uint16{signing.AESCMAC}, signing.AESCMAC},
	{"3.1.1 both", smb2.Dialect311, []uint16{signing.AESCMAC, signing.AESGMAC}, signing.AESGMAC},
	{"3.1.1 HMAC only", smb2.Dialect311, []uint16{signing.HMACSHA256}, signing.HMACSHA256},
	{"3.1.1 no context", smb2.Dialect311, []uint16{}, signing.AESCMAC},
}

// connectWith dials and authenticates alice with 3.1.1 signing algorithms
// offered (nil → default), then connects to the share.
func connectWith(t *testing.T, srv *servertest.Server, dialect uint16, algs []uint16) *servertest.Conn {
	t.Helper()
	c := servertest.Dial(t, srv.Addr)
	c.SigningAlgs = algs
	if err := c.Negotiate(dialect); err != nil {
		t.Fatal(err)
	}
	if err := c.SessionSetup(servertest.Alice, servertest.AlicePassword); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TreeConnect(servertest.ShareName); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSigning: signed requests are verified and their responses signed
// with the negotiated algorithm; a flipped bit is refused with
// STATUS_ACCESS_DENIED ([MS-SMB2] 3.3.5.2.4, 3.3.4.1.1).
func TestSigning(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	for _, tc := range signingCases {
		t.Run(tc.name, func(t *testing.T) {
			c := connectWith(t, srv, tc.dialect, tc.offer)
			if c.SigningAlg != tc.want {
				t.Fatalf("signing algorithm %d, want %d", c.SigningAlg, tc.want)
			}
			fid, err := c.Create("signed")
			if err != nil {
				t.Fatal(err)
			}
			h, _ := c.Call(smb2.CmdWrite, &smb2.WriteRequest{FileID: fid, Data: []byte("signed data")})
			if h.Status != 0 || h.Flags&smb2.FlagSigned == 0 {
				t.Fatalf("WRITE: %v, flags %#x: want a signed success", smb2.Status(h.Status), h.Flags)
			}
			c.Mangle = func(msg []byte) { msg[len(msg)-1] ^= 0x01 } // inside the data
			h, _ = c.Call(smb2.CmdWrite, &smb2.WriteRequest{FileID: fid, Data: []byte("signed data")})
			if st := smb2.Status(h.Status); st != smb2.StatusAccessDenied {
				t.Errorf("tampered WRITE: %v, want STATUS_ACCESS_DENIED", st)
			}
			c.Mangle = func(msg []byte) { msg[50] ^= 0x80 } // inside the signature
			h, _ = c.Call(smb2.CmdFlush, &smb2.FlushRequest{FileID: fid})
			if st := smb2.Status(h.Status); st != smb2.StatusAccessDenied {
				t.Errorf("FLUSH with a bad signature: %v, want STATUS_ACCESS_DENIED", st)
			}
			c.Mangle = nil
			if err := c.CloseFile(fid); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSigningRequired: with signing required, an unsigned request of a
// session is refused and the server signs its responses.
func TestSigningRequired(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{SigningRequired: true})
	for _, d := range []uint16{smb2.Dialect202, smb2.Dialect300, smb2.Dialect311} {
		t.Run(servertest.DialectName(d), func(t *testing.T) {
			c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, "", d)
			if c.NegResponse.SecurityMode&smb2.NegotiateSigningRequired == 0 {
				t.Errorf("NEGOTIATE response SecurityMode %#x lacks SIGNING_REQUIRED", c.NegResponse.SecurityMode)
			}
			c.Sign = false
			h, _ := c.Call(smb2.CmdTreeConnect, &smb2.TreeConnectRequest{Path: `\\127.0.0.1\share`})
			if st := smb2.Status(h.Status); st != smb2.StatusAccessDenied {
				t.Errorf("unsigned TREE_CONNECT: %v, want STATUS_ACCESS_DENIED", st)
			}
			c.Sign = true
			h, _ = c.Call(smb2.CmdTreeConnect, &smb2.TreeConnectRequest{Path: `\\127.0.0.1\share`})
			if h.Status != 0 || h.Flags&smb2.FlagSigned == 0 {
				t.Errorf("signed TREE_CONNECT: %v, flags %#x: want a signed success", smb2.Status(h.Status), h.Flags)
			}
		})
	}
}
