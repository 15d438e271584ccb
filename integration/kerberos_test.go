package integration

import (
	"strings"
	"testing"

	"github.com/smbcluster/smbcluster/integration/framework"
)

// krbRealm and krbSPN are the throw-away realm and the one service
// principal of the Kerberos tests.
const (
	krbRealm = "TEST.REALM"
	krbHost  = "files.test"
	krbSPN   = "cifs/" + krbHost
)

// kerberosRealm starts a KDC with user alice (framework.DefaultUsers'
// password) and the service principal krbSPN, and returns it with the
// path of the service's keytab and alice's credential cache.
func kerberosRealm(t *testing.T) (kdc *framework.KDC, keytab, ccache string) {
	t.Helper()
	kdc = framework.StartKDC(t, krbRealm)
	kdc.AddUser(t, user, password())
	kdc.AddService(t, krbSPN)
	keytab = kdc.Keytab(t, krbSPN)
	ccache = kdc.Kinit(t, user+"@"+krbRealm, password())
	return kdc, keytab, ccache
}

// TestKerberosSMBClient logs on to one node with smbclient
// --use-kerberos=required and lists, puts and gets.
func TestKerberosSMBClient(t *testing.T) {
	framework.RequireTool(t, "smbclient")
	kdc, keytab, ccache := kerberosRealm(t)
	n := framework.StartNode(t, framework.Options{Args: []string{"--keytab", keytab, "--spn", krbSPN}})
	c := framework.SMBClient{Node: n, User: user, Kerberos: ccache, Env: kdc.ClientEnv(ccache), ServerName: krbHost}
	checkList(t, c)
	r := c.Script(t, t.TempDir(), shareNm, "ls")
	if r.ExitCode != 0 || strings.Contains(r.Output(), "NT_STATUS_") {
		t.Fatalf("ls: %s\nnode log:\n%s", r, n.Log())
	}
	t.Log(n.Log())
}
