package nodemain

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smbcluster/smbcluster/node/auth"
)

// TestMapPrincipal: a cluster user's listed principals first, then realm
// stripping for the realms configured; the user must exist, and service
// principals and foreign realms map to no one.
func TestMapPrincipal(t *testing.T) {
	u := newUserDB()
	u.static["carol"] = auth.NTHash("x")
	u.SetUser("Alice", auth.NTHash("y"))
	u.SetPrincipals("Alice", []string{"a.smith@CORP.EXAMPLE"})
	u.setMapRealms([]string{"TEST.REALM"})
	for _, tc := range []struct {
		name, realm, want string
		ok                bool
	}{
		{"a.smith", "CORP.EXAMPLE", "Alice", true}, // listed principal, foreign realm
		{"A.Smith", "corp.example", "Alice", true}, // any case
		{"alice", "TEST.REALM", "alice", true},     // realm stripped, cluster user
		{"carol", "test.realm", "carol", true},     // realm stripped, --user
		{"dave", "TEST.REALM", "", false},          // no such user
		{"alice", "OTHER.REALM", "", false},        // realm not stripped
		{"cifs/alice", "TEST.REALM", "", false},    // a service principal
		{"a.smith", "TEST.REALM", "", false},       // listed only in CORP.EXAMPLE
	} {
		got, ok := u.MapPrincipal(tc.name, tc.realm)
		if got != tc.want || ok != tc.ok {
			t.Errorf("MapPrincipal(%s@%s) = %q, %v; want %q, %v", tc.name, tc.realm, got, ok, tc.want, tc.ok)
		}
	}
	u.DeleteUser("alice")
	if _, ok := u.MapPrincipal("a.smith", "CORP.EXAMPLE"); ok {
		t.Error("a deleted user's principal still maps")
	}
	u.setMapRealms([]string{"*"})
	if got, ok := u.MapPrincipal("carol", "ANY.REALM"); !ok || got != "carol" {
		t.Errorf("with * : %q, %v", got, ok)
	}
}

// TestKerberosFor: --auth kerberos needs a keytab (from --keytab or the
// cluster); --auth ntlm has no acceptor; a keytab that does not parse
// stops the node.
func TestKerberosFor(t *testing.T) {
	junk := filepath.Join(t.TempDir(), "junk.keytab")
	os.WriteFile(junk, []byte("\x05\x02junk"), 0o600)
	for _, tc := range []struct {
		cfg     Config
		wantNil bool
		wantErr string
	}{
		{Config{Auth: authNTLM}, true, ""},
		{Config{Auth: authBoth}, false, ""},
		{Config{Auth: authKerberos}, false, "--auth kerberos needs --keytab"},
		{Config{Auth: authKerberos, Etcd: "http://127.0.0.1:2379"}, false, ""},
		{Config{Auth: authBoth, Keytab: junk}, false, "--keytab"},
	} {
		k, err := kerberosFor(&tc.cfg, newUserDB())
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%+v: err %v, want %q", tc.cfg, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("%+v: %v", tc.cfg, err)
		case (k == nil) != tc.wantNil:
			t.Errorf("%+v: acceptor %v", tc.cfg, k)
		}
	}
}
