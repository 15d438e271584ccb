package server_test

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"testing"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/signing"
)

// roundTrip creates, writes, reads back and closes a file and checks that
// every response came encrypted.
func roundTrip(t *testing.T, c *servertest.Conn, name string) {
	t.Helper()
	fid, err := c.Create(name)
	if err != nil {
		t.Fatalf("CREATE: %v", err)
	}
	if !c.LastEncrypted {
		t.Fatal("CREATE response not encrypted")
	}
	data := bytes.Repeat([]byte("secret!"), 20000)
	if n, err := c.Write(fid, 0, data); err != nil || n != len(data) {
		t.Fatalf("WRITE: %d, %v", n, err)
	}
	got, err := c.Read(fid, 0, len(data))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("READ: %d bytes, %v", len(got), err)
	}
	if !c.LastEncrypted {
		t.Fatal("READ response not encrypted")
	}
	if err := c.CloseFile(fid); err != nil {
		t.Fatal(err)
	}
}

// TestEncryption30: 3.0 and 3.0.2 encrypt with AES-128-CCM when the client
// has SMB2_GLOBAL_CAP_ENCRYPTION ([MS-SMB2] 3.3.5.4, 3.1.4.3).
func TestEncryption30(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{Encryption: server.EncryptDesired})
	for _, d := range []uint16{smb2.Dialect300, smb2.Dialect302} {
		t.Run(servertest.DialectName(d), func(t *testing.T) {
			c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName, d)
			if c.Cipher != signing.AES128CCM || !c.Encrypt {
				t.Fatalf("cipher %d, encrypting %v: want AES-128-CCM", c.Cipher, c.Encrypt)
			}
			if c.Session.Flags&smb2.SessionFlagEncryptData == 0 {
				t.Fatal("SESSION_SETUP response lacks SMB2_SESSION_FLAG_ENCRYPT_DATA")
			}
			roundTrip(t, c, "enc30")
		})
	}
}

// TestEncryption311Ciphers: each cipher of the encryption context
// ([MS-SMB2] 2.2.3.1.2) carries a round trip.
func TestEncryption311Ciphers(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{Encryption: server.EncryptDesired})
	for _, cipher := range []uint16{signing.AES128CCM, signing.AES128GCM, signing.AES256CCM, signing.AES256GCM} {
		t.Run(cipherName(cipher), func(t *testing.T) {
			c := servertest.Dial(t, srv.Addr)
			c.Ciphers = []uint16{cipher}
			if err := c.Negotiate(smb2.Dialect311); err != nil {
				t.Fatal(err)
			}
			if c.Cipher != cipher {
				t.Fatalf("server chose cipher %d", c.Cipher)
			}
			if err := c.SessionSetup(servertest.Alice, servertest.AlicePassword); err != nil {
				t.Fatal(err)
			}
			if _, err := c.TreeConnect(servertest.ShareName); err != nil {
				t.Fatal(err)
			}
			roundTrip(t, c, "enc311-"+cipherName(cipher))
		})
	}
}

func cipherName(id uint16) string {
	return map[uint16]string{1: "AES-128-CCM", 2: "AES-128-GCM", 3: "AES-256-CCM", 4: "AES-256-GCM"}[id]
}

// TestEncryptedShare: a share with SMB2_SHAREFLAG_ENCRYPT_DATA on a server
// that does not encrypt everything: the tree's requests must be encrypted.
func TestEncryptedShare(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, "", smb2.Dialect311)
	if c.Encrypt {
		t.Fatal("session encrypted though the server does not require it")
	}
	resp, err := c.TreeConnect(servertest.EncShareName)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ShareFlags&smb2.ShareFlagEncryptData == 0 || !c.Encrypt {
		t.Fatalf("share flags %#x: want SMB2_SHAREFLAG_ENCRYPT_DATA", resp.ShareFlags)
	}
	roundTrip(t, c, "encshare-file")
	c.Encrypt = false
	h, _ := c.Call(smb2.CmdCreate, servertest.CreateRequest("plain"))
	if st := smb2.Status(h.Status); st != smb2.StatusAccessDenied {
		t.Fatalf("unencrypted CREATE on an encrypted share: %v, want STATUS_ACCESS_DENIED", st)
	}
}

// TestUnencryptedRequestRefused: on a session that encrypts, a plaintext
// request (even signed) fails with STATUS_ACCESS_DENIED ([MS-SMB2] 3.3.5.2.9).
func TestUnencryptedRequestRefused(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{Encryption: server.EncryptRequired})
	for _, d := range []uint16{smb2.Dialect300, smb2.Dialect311} {
		c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName, d)
		c.Encrypt = false
		h, _ := c.Call(smb2.CmdCreate, servertest.CreateRequest("plain"))
		if st := smb2.Status(h.Status); st != smb2.StatusAccessDenied {
			t.Errorf("%s: plaintext CREATE: %v, want STATUS_ACCESS_DENIED", servertest.DialectName(d), st)
		}
	}
}

// TestEncryptionRequiredRefusesPlainClient: a 2.1 client cannot encrypt,
// so a server that requires encryption refuses its session.
func TestEncryptionRequiredRefusesPlainClient(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{Encryption: server.EncryptRequired})
	c := servertest.Dial(t, srv.Addr)
	if err := c.Negotiate(smb2.Dialect210); err != nil {
		t.Fatal(err)
	}
	if err := c.SessionSetup(servertest.Alice, servertest.AlicePassword); err != smb2.StatusAccessDenied {
		t.Fatalf("SESSION_SETUP: %v, want STATUS_ACCESS_DENIED", err)
	}
}

// TestGarbageTransform: a transform message that does not decrypt drops
// the connection ([MS-SMB2] 3.3.5.2.1.1).
func TestGarbageTransform(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{Encryption: server.EncryptDesired})
	transform := func(sid uint64, n int, flags uint16) []byte {
		msg := make([]byte, signing.TransformHeaderSize+n)
		rand.Read(msg)
		binary.LittleEndian.PutUint32(msg, smb2.TransformProtocolID)
		binary.LittleEndian.PutUint32(msg[36:], uint32(n))
		binary.LittleEndian.PutUint16(msg[40:], 0)
		binary.LittleEndian.PutUint16(msg[42:], flags)
		binary.LittleEndian.PutUint64(msg[44:], sid)
		return msg
	}
	cases := map[string]func(c *servertest.Conn) []byte{
		"random ciphertext": func(c *servertest.Conn) []byte { return transform(c.Session.ID, 100, 1) },
		"unknown session":   func(c *servertest.Conn) []byte { return transform(c.Session.ID+1000, 100, 1) },
		"bad flags":         func(c *servertest.Conn) []byte { return transform(c.Session.ID, 100, 2) },
		"size mismatch": func(c *servertest.Conn) []byte {
			m := transform(c.Session.ID, 100, 1)
			binary.LittleEndian.PutUint32(m[36:], 99)
			return m
		},
		"header only": func(c *servertest.Conn) []byte { return transform(c.Session.ID, 0, 1)[:signing.TransformHeaderSize] },
		"short":       func(c *servertest.Conn) []byte { return transform(c.Session.ID, 0, 1)[:20] },
	}
	for name, build := range cases {
		t.Run(name, func(t *testing.T) {
			c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName, smb2.Dialect311)
			if err := c.SendFrame(build(c)); err != nil {
				t.Fatal(err)
			}
			c.ExpectClosed()
		})
	}
	t.Run("tampered", func(t *testing.T) {
		c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, servertest.ShareName, smb2.Dialect300)
		// Flip a bit of the ciphertext: the server sees a well-formed
		// transform whose tag fails.
		c.MangleWire = func(msg []byte) { msg[len(msg)-1] ^= 1 }
		if _, err := c.Post(c.Header(smb2.CmdEcho), servertest.Body(&smb2.EchoRequest{})); err != nil {
			t.Fatal(err)
		}
		c.ExpectClosed()
	})
	t.Run("on 2.1", func(t *testing.T) {
		c := servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, "", smb2.Dialect210)
		if err := c.SendFrame(transform(c.Session.ID, 100, 1)); err != nil {
			t.Fatal(err)
		}
		c.ExpectClosed()
	})
	mustEcho(t, servertest.Connect(t, srv.Addr, servertest.Alice, servertest.AlicePassword, ""))
}
