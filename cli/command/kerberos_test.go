package command

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/keytab"
)

// writeKeytab writes a keytab with keys for spns in realm TEST.REALM.
func writeKeytab(t *testing.T, path string, spns ...string) {
	t.Helper()
	kt := keytab.New()
	for _, spn := range spns {
		for _, et := range []int32{etypeID.AES256_CTS_HMAC_SHA1_96, etypeID.AES128_CTS_HMAC_SHA1_96} {
			if err := kt.AddEntry(spn, "TEST.REALM", "service-password", testNow, 2, et); err != nil {
				t.Fatal(err)
			}
		}
	}
	b, err := kt.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestKerberos(t *testing.T) {
	c := newCoord(t)
	c.want(ExitNotFound, "kerberos", "get")
	kt := filepath.Join(c.tmp, "files.keytab")
	writeKeytab(t, kt, "cifs/files.test", "cifs/node1.test")
	c.want(ExitOK, "kerberos", "set-keytab", kt, "--spn", "cifs/files.test")
	c.want(ExitOK, "kerberos", "get", "-o", "json")
	c.want(ExitUsage, "kerberos", "set-keytab", kt, "--spn", "cifs/other.test")
	c.want(ExitUsage, "kerberos", "set-keytab", filepath.Join(c.tmp, "absent.keytab"))
	if err := os.WriteFile(filepath.Join(c.tmp, "junk"), []byte("\x05\x02junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.want(ExitUsage, "kerberos", "set-keytab", filepath.Join(c.tmp, "junk"))
	c.want(ExitOK, "kerberos", "set-keytab", kt)
	c.want(ExitOK, "kerberos", "get")
	c.want(ExitOK, "kerberos", "rm")
	c.want(ExitNotFound, "kerberos", "rm")

	// A user's principals.
	c.want(ExitOK, "user", "add", "alice", "--password", "pw")
	c.want(ExitOK, "user", "principals", "alice", "alice@TEST.REALM", "a.smith@CORP.EXAMPLE")
	c.want(ExitOK, "user", "ls", "-o", "json")
	c.want(ExitUsage, "user", "principals", "alice", "no-realm")
	c.want(ExitUsage, "user", "principals")
	c.want(ExitNotFound, "user", "principals", "nobody", "x@TEST.REALM")
	c.want(ExitOK, "user", "principals", "alice")
	golden(t, "admin/kerberos.golden", c.out.String())
}
