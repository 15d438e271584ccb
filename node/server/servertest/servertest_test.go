package servertest

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/smbcluster/smbcluster/node/auth"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// TestNTLMv2Vectors checks the initiator against [MS-NLMP] 4.2.4.1.3
// (temp), 4.2.4.2.2 (NTProofStr) and 4.2.4.1.2 (SessionBaseKey).
func TestNTLMv2Vectors(t *testing.T) {
	var av []byte
	av = append(av, 2, 0, 12, 0)
	av = append(av, utf16le("Domain")...)
	av = append(av, 1, 0, 12, 0)
	av = append(av, utf16le("Server")...)
	av = append(av, 0, 0, 0, 0)
	server := [8]byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}
	client := [8]byte{0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa}
	nt, base := ntlmv2(auth.NTHash("Password"), "User", "Domain", server, client, 0, av)
	if got, want := hex.EncodeToString(nt[:16]), "68cd0ab851e51c96aabc927bebef6a1c"; got != want {
		t.Errorf("NTProofStr = %s, want %s", got, want)
	}
	if got, want := hex.EncodeToString(base), "8de40ccadbc14a82f15cb0ad0de95ca3"; got != want {
		t.Errorf("SessionBaseKey = %s, want %s", got, want)
	}
	enc := rc4K(base, bytes.Repeat([]byte{0x55}, 16))
	if got, want := hex.EncodeToString(enc), "c5dad2544fc9799094ce1ce90bc9d03e"; got != want {
		t.Errorf("EncryptedRandomSessionKey = %s, want %s", got, want)
	}
}

// TestClientEveryDialect is the smoke test of the raw client: each dialect
// negotiates, authenticates, writes, reads back and closes.
func TestClientEveryDialect(t *testing.T) {
	srv := Start(t, Options{})
	for _, d := range AllDialects {
		t.Run(DialectName(d), func(t *testing.T) {
			c := Connect(t, srv.Addr, Alice, AlicePassword, ShareName, d)
			if c.Dialect != d {
				t.Fatalf("dialect %s, want %s", DialectName(c.Dialect), DialectName(d))
			}
			fid, err := c.Create("f-" + DialectName(d))
			if err != nil {
				t.Fatal(err)
			}
			data := bytes.Repeat([]byte("abcdefgh"), 1000)
			if n, err := c.Write(fid, 0, data); err != nil || n != len(data) {
				t.Fatalf("write: %d, %v", n, err)
			}
			got, err := c.Read(fid, 0, len(data))
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("read: %d bytes, %v", len(got), err)
			}
			if err := c.CloseFile(fid); err != nil {
				t.Fatal(err)
			}
			if err := c.Logoff(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestWrongPassword fails the logon.
func TestWrongPassword(t *testing.T) {
	srv := Start(t, Options{})
	c := Dial(t, srv.Addr)
	if err := c.Negotiate(); err != nil {
		t.Fatal(err)
	}
	if err := c.SessionSetup(Alice, "nope"); err != smb2.StatusLogonFailure {
		t.Fatalf("got %v, want STATUS_LOGON_FAILURE", err)
	}
}

// FuzzParseChallenge: the CHALLENGE_MESSAGE decoder never panics.
func FuzzParseChallenge(f *testing.F) {
	f.Add([]byte("NTLMSSP\x00\x02\x00\x00\x00" + string(make([]byte, 40))))
	f.Fuzz(func(t *testing.T, b []byte) {
		ch, err := parseChallenge(b)
		if err == nil {
			avTimestamp(ch.TargetInfo)
		}
	})
}
