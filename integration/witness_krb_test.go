package integration

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/smbcluster/smbcluster/integration/framework"
)

// krbHostSPN is the principal a DCE/RPC client asks a ticket for: Samba's
// client names the "host" service of the binding's target_hostname.
const krbHostSPN = "host/" + krbHost

// TestWitnessKerberos: smbtorture's rpc.witness binds to a node's witness
// service over ncacn_ip_tcp with Kerberos (auth_type 16, DCE style: the
// AP-REP of the bind_ack answered by the client's AP-REP in auth3) and in
// SPNEGO (auth_type 9, the client's AP-REP and mechListMIC in
// alter_context), at packet integrity and at packet privacy; a ticket for
// a principal the node's keytab lacks is refused without harming the
// node; NTLMSSP in SPNEGO still works.
func TestWitnessKerberos(t *testing.T) {
	framework.RequireTool(t, "smbtorture")
	kdc := framework.StartKDC(t, krbRealm)
	kdc.AddUser(t, user, password())
	kdc.AddService(t, krbHostSPN)
	kdc.AddService(t, krbSPN) // Register's srvsvc over SMB
	kdc.AddService(t, "host/other.test")
	keytab := filepath.Join(t.TempDir(), "node.keytab")
	kdc.Kadmin(t, "ktadd -k "+keytab+" "+krbHostSPN+" "+krbSPN)
	ccache := kdc.Kinit(t, user+"@"+krbRealm, password())
	wport := framework.CommonFreePort(t, 1)
	n := framework.StartNode(t, framework.Options{Args: []string{"--keytab", keytab, "--witness-port", strconv.Itoa(wport)}})
	kerberos := "--use-kerberos=required"
	torture := func(host, opts string, tests ...string) (string, error) {
		binding := "ncacn_ip_tcp:127.0.0.1[" + strconv.Itoa(wport) + "," + opts + ",target_hostname=" + host + "]"
		args := []string{binding, kerberos, "--realm=" + krbRealm, "-U", user + "%" + password(), "-p", strconv.Itoa(n.Port),
			"--option=torture:net_name=SMBCLUSTER"}
		for _, name := range tests {
			args = append(args, "rpc.witness.witness."+name)
		}
		cmd := exec.Command("smbtorture", args...)
		cmd.Env = append(cmd.Environ(), kdc.ClientEnv(ccache)...)
		out, err := cmd.CombinedOutput()
		for _, name := range tests {
			if !strings.Contains(string(out), "success: witness."+name+"\n") {
				err = fmt.Errorf("witness.%s did not succeed (%v)", name, err)
			}
		}
		if err != nil {
			return string(out), fmt.Errorf("smbtorture %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}
	for _, prot := range []string{"krb5,sign", "krb5,seal", "spnego,sign", "spnego,seal"} {
		if _, err := torture(krbHost, prot, "GetInterfaceList", "Register", "UnRegister", "RegisterEx"); err != nil {
			t.Fatalf("Kerberos, %s: %v\nnode log:\n%s", prot, err, n.Log())
		}
	}
	// A ticket for host/other.test: the keytab has no key for it.
	for _, prot := range []string{"krb5,seal", "spnego,sign"} {
		if out, err := torture("other.test", prot, "GetInterfaceList"); err == nil {
			t.Fatalf("%s: a ticket for host/other.test was accepted:\n%s", prot, out)
		}
	}
	// Each refusal is logged with its Kerberos reason.
	if !strings.Contains(n.Log(), `refused" component=witness`) || !strings.Contains(n.Log(), "host/other.test") {
		t.Errorf("the refusals of a ticket for host/other.test are not logged with their reason:\n%s", n.Log())
	}
	// The node still serves.
	if _, err := torture(krbHost, "krb5,seal", "GetInterfaceList"); err != nil {
		t.Fatalf("after the refusal: %v\nnode log:\n%s", err, n.Log())
	}
	// NTLMSSP in SPNEGO still works next to Kerberos.
	kerberos = "--use-kerberos=disabled"
	if _, err := torture(krbHost, "spnego,seal", "GetInterfaceList", "Register"); err != nil {
		t.Fatalf("NTLMSSP: %v", err)
	}
}
