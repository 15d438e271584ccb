package nodemain

import (
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
