package framework

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// KDC is a throw-away MIT Kerberos realm: a krb5kdc process on a free
// loopback port with its database, configuration and logs under a
// temporary directory. Nothing outside that directory is read or written:
// every command runs with KRB5_CONFIG and KRB5_KDC_PROFILE pointing into
// it. Principals are made with kadmin.local.
type KDC struct {
	Realm string
	Addr  string // host:port of the KDC (UDP and TCP)
	Dir   string
	// Config is the krb5.conf clients use (KRB5_CONFIG).
	Config string

	profile string // kdc.conf (KRB5_KDC_PROFILE)
	cmd     *exec.Cmd
	log     string
}

// kdcTools are the programs StartKDC needs (Debian krb5-kdc,
// krb5-admin-server, krb5-user).
var kdcTools = []string{"krb5kdc", "kdb5_util", "kadmin.local", "kinit"}

// findKDCTool finds a Kerberos program on PATH or in /usr/sbin.
func findKDCTool(name string) (string, bool) {
	if p, err := exec.LookPath(name); err == nil {
		return p, true
	}
	p := filepath.Join("/usr/sbin", name)
	if _, err := os.Stat(p); err == nil {
		return p, true
	}
	return "", false
}

// StartKDC creates realm (e.g. "TEST.REALM") and starts its KDC. The test
// is skipped when the MIT KDC is not installed (apt-get install krb5-kdc
// krb5-admin-server krb5-user).
func StartKDC(t testing.TB, realm string) *KDC {
	t.Helper()
	for _, tool := range kdcTools {
		if _, ok := findKDCTool(tool); !ok {
			t.Skipf("MIT Kerberos not installed (apt-get install krb5-kdc krb5-admin-server krb5-user): no %s", tool)
		}
	}
	k := &KDC{Realm: realm, Dir: t.TempDir()}
	k.Addr = FreeAddr(t, "127.0.0.1")
	k.Config = filepath.Join(k.Dir, "krb5.conf")
	k.profile = filepath.Join(k.Dir, "kdc.conf")
	k.log = filepath.Join(k.Dir, "kdc.log")
	writeFile(t, k.Config, k.krb5Conf())
	writeFile(t, k.profile, k.kdcConf())
	writeFile(t, filepath.Join(k.Dir, "kadm5.acl"), "")
	k.mustRun(t, "kdb5_util", "create", "-s", "-r", realm, "-P", "master-"+strconv.Itoa(os.Getpid()))
	bin, _ := findKDCTool("krb5kdc")
	k.cmd = exec.Command(bin, "-n", "-r", realm)
	k.cmd.Env = k.Env()
	k.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out := &logBuffer{}
	k.cmd.Stdout, k.cmd.Stderr = out, out
	if err := k.cmd.Start(); err != nil {
		t.Fatalf("start krb5kdc: %v", err)
	}
	exited := make(chan struct{})
	go func() { k.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		k.cmd.Process.Kill()
		<-exited
		if t.Failed() {
			b, _ := os.ReadFile(k.log)
			t.Logf("krb5kdc output:\n%s\nkdc.log:\n%s", out.String(), b)
		}
	})
	WaitFor(t, 10*time.Second, "krb5kdc listening on "+k.Addr, func() bool {
		select {
		case <-exited:
			t.Fatalf("krb5kdc exited: %s", out.String())
		default:
		}
		c, err := net.DialTimeout("tcp", k.Addr, time.Second)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
	return k
}

func (k *KDC) krb5Conf() string {
	return fmt.Sprintf(`[libdefaults]
	default_realm = %[1]s
	dns_lookup_kdc = false
	dns_lookup_realm = false
	dns_canonicalize_hostname = false
	rdns = false
	udp_preference_limit = 1
	default_ccache_name = FILE:%[3]s/ccache
[realms]
	%[1]s = {
		kdc = %[2]s
	}
[domain_realm]
	.test = %[1]s
	test = %[1]s
`, k.Realm, k.Addr, k.Dir)
}

func (k *KDC) kdcConf() string {
	_, port, _ := net.SplitHostPort(k.Addr)
	return fmt.Sprintf(`[kdcdefaults]
	kdc_listen = 127.0.0.1:%[2]s
	kdc_tcp_listen = 127.0.0.1:%[2]s
[realms]
	%[1]s = {
		database_name = %[3]s/principal
		key_stash_file = %[3]s/stash
		acl_file = %[3]s/kadm5.acl
		max_life = 10h
		max_renewable_life = 0
		supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
	}
[logging]
	kdc = FILE:%[4]s
`, k.Realm, port, k.Dir, k.log)
}

// Env is the environment of a program that uses this realm: KRB5_CONFIG,
// KRB5_KDC_PROFILE, and a credential cache of the realm's own.
func (k *KDC) Env() []string {
	return append(os.Environ(), "KRB5_CONFIG="+k.Config, "KRB5_KDC_PROFILE="+k.profile,
		"KRB5CCNAME=FILE:"+filepath.Join(k.Dir, "ccache"))
}

func (k *KDC) mustRun(t testing.TB, tool string, args ...string) string {
	t.Helper()
	bin, _ := findKDCTool(tool)
	cmd := exec.Command(bin, args...)
	cmd.Env = k.Env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", shellQuote(tool, args), err, out)
	}
	return string(out)
}

// Kadmin runs one kadmin.local query ("addprinc -pw secret alice").
func (k *KDC) Kadmin(t testing.TB, query string) string {
	t.Helper()
	return k.mustRun(t, "kadmin.local", "-r", k.Realm, "-q", query)
}

// AddUser creates the user principal name@Realm with password.
func (k *KDC) AddUser(t testing.TB, name, password string) {
	t.Helper()
	k.Kadmin(t, fmt.Sprintf("addprinc -pw %s %s", password, name))
}

// AddService creates service principal spn ("cifs/files.test") with a
// random key, if it does not exist yet.
func (k *KDC) AddService(t testing.TB, spn string) {
	t.Helper()
	k.Kadmin(t, "addprinc -randkey "+spn)
}

// Keytab extracts spn's keys into a new keytab file (kadmin ktadd, which
// gives the principal fresh keys: a keytab extracted before no longer
// decrypts new tickets) and returns its path.
func (k *KDC) Keytab(t testing.TB, spn string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), strings.ReplaceAll(spn, "/", "_")+".keytab")
	k.Kadmin(t, fmt.Sprintf("ktadd -k %s %s", path, spn))
	return path
}

// Kinit gets a ticket-granting ticket for principal into a new credential
// cache and returns the cache's path; extra are kinit options ("-l", "10s").
func (k *KDC) Kinit(t testing.TB, principal, password string, extra ...string) string {
	t.Helper()
	ccache := filepath.Join(t.TempDir(), "ccache")
	bin, _ := findKDCTool("kinit")
	cmd := exec.Command(bin, append(append([]string{"-c", "FILE:" + ccache}, extra...), principal)...)
	cmd.Env = k.Env()
	cmd.Stdin = strings.NewReader(password + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kinit %s: %v\n%s", principal, err, out)
	}
	return ccache
}

// ClientEnv is what a Kerberos client using ccache adds to its
// environment (RunAs, SMBClient.Env).
func (k *KDC) ClientEnv(ccache string) []string {
	return []string{"KRB5_CONFIG=" + k.Config, "KRB5CCNAME=" + ccache} // a path: impacket takes no FILE: prefix
}
