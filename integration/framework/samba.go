package framework

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// nssWrapperGlob finds the library that gives smbd the test's users
// without touching /etc/passwd (Debian package libnss-wrapper).
const nssWrapperGlob = "/usr/lib/*/libnss_wrapper.so"

// StartSamba starts a private smbd on opts.Addr with a generated smb.conf
// and all its state under a temporary directory, and waits until it accepts
// connections. opts.Args are extra lines for the [global] section, such as
// "server signing = mandatory". Users exist only for this smbd: their Unix
// accounts come from nss_wrapper files and files are accessed as root.
func StartSamba(t testing.TB, opts Options) *Node {
	t.Helper()
	return startSamba(t, nil, withDefaults(t, opts))
}

// StartSambaOn starts such an smbd on bed host h, in its network and mount
// namespaces: opts.Addr is one of h's addresses and the shares' paths are
// paths of h's mounts (a node host's SharePath, to compare smbd with the
// node over the same mount). opts.Shares need their Path.
func StartSambaOn(t testing.TB, h *Host, opts Options) *Node {
	t.Helper()
	if opts.Users == nil {
		opts.Users = DefaultUsers
	}
	return startSamba(t, h, opts)
}

// startSamba runs smbd with opts, on host h when not nil.
func startSamba(t testing.TB, h *Host, opts Options) *Node {
	t.Helper()
	smbd := RequireTool(t, "smbd")
	smbpasswd := RequireTool(t, "smbpasswd")
	libs, _ := filepath.Glob(nssWrapperGlob)
	if len(libs) == 0 {
		t.Skipf("nss_wrapper not installed (apt-get install libnss-wrapper): no %s", nssWrapperGlob)
	}
	command := exec.Command
	dir := t.TempDir()
	if h != nil {
		command, dir = h.Command, h.TempDir(t)
	}
	for _, d := range []string{"lock", "state", "cache", "pid", "private", "ncalrpc", "binddns", "log"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := sambaEnv(t, dir, libs[0], opts.Users)
	conf := filepath.Join(dir, "smb.conf")
	if err := os.WriteFile(conf, []byte(sambaConf(dir, opts)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, u := range sortedKeys(opts.Users) {
		pw := opts.Users[u]
		cmd := command(smbpasswd, "-c", conf, "-a", "-s", u)
		cmd.Env = env
		cmd.Stdin = strings.NewReader(pw + "\n" + pw + "\n")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("smbpasswd -a %s: %v\n%s", u, err, out)
		}
	}
	n := newNode("samba", opts)
	n.cmd = command(smbd, "--foreground", "--no-process-group",
		"--debug-stdout", "--debuglevel=1", "--configfile="+conf)
	n.cmd.Env = env
	n.sigtermOK = true
	n.extra = func() { killPidFile(t, filepath.Join(dir, "pid", "samba-dcerpcd.pid")) }
	n.launch(t)
	return n
}

// sambaEnv writes nss_wrapper passwd and group files holding root, nobody
// and one account per user, and returns the environment that uses them.
func sambaEnv(t testing.TB, dir, nssWrapper string, users map[string]string) []string {
	t.Helper()
	passwd := "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
	group := "root:x:0:\nnogroup:x:65534:\n"
	for i, u := range sortedKeys(users) {
		id := 30001 + i
		passwd += fmt.Sprintf("%s:x:%d:%d:%s:/nonexistent:/bin/false\n", u, id, id, u)
		group += fmt.Sprintf("%s:x:%d:\n", u, id)
	}
	pf, gf := filepath.Join(dir, "passwd"), filepath.Join(dir, "group")
	if err := os.WriteFile(pf, []byte(passwd), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gf, []byte(group), 0o644); err != nil {
		t.Fatal(err)
	}
	return append(os.Environ(), "LD_PRELOAD="+nssWrapper,
		"NSS_WRAPPER_PASSWD="+pf, "NSS_WRAPPER_GROUP="+gf)
}

// sambaConf renders smb.conf for a standalone server whose every state
// directory lives under dir.
func sambaConf(dir string, opts Options) string {
	host, port, _ := strings.Cut(opts.Addr, ":")
	var b strings.Builder
	fmt.Fprintf(&b, "[global]\n")
	lines := []string{
		"server role = standalone server",
		"smb ports = " + port,
		"interfaces = " + host,
		"bind interfaces only = yes",
		"disable netbios = yes",
		"server min protocol = SMB2_02",
		"map to guest = never",
		"load printers = no",
		"printcap name = /dev/null",
		"disable spoolss = yes",
		"usershare max shares = 0",
		"passdb backend = tdbsam:" + filepath.Join(dir, "private", "passdb.tdb"),
		"log file = " + filepath.Join(dir, "log", "log.%m"),
		"kernel oplocks = no",
		"idmap config * : backend = tdb",
		"idmap config * : range = 1000000-1999999",
		"ea support = yes",
		"store dos attributes = yes",
	}
	for _, d := range []string{"lock", "state", "cache", "pid"} {
		lines = append(lines, d+" directory = "+filepath.Join(dir, d))
	}
	for _, d := range []string{"private", "ncalrpc", "binddns"} {
		lines = append(lines, d+" dir = "+filepath.Join(dir, d))
	}
	if opts.SigningRequired {
		lines = append(lines, "server signing = mandatory")
	}
	lines = append(lines, opts.Args...)
	for _, l := range lines {
		fmt.Fprintf(&b, "\t%s\n", l)
	}
	for _, s := range opts.Shares {
		fmt.Fprintf(&b, "[%s]\n\tpath = %s\n\tread only = %s\n\tforce user = root\n",
			s.Name, s.Path, yesNo(s.ReadOnly))
		if s.Encrypt {
			fmt.Fprintf(&b, "\tsmb encrypt = required\n")
		}
	}
	return b.String()
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

// killPidFile terminates the helper process smbd spawned and recorded in
// path (samba-dcerpcd outlives smbd otherwise).
func killPidFile(t testing.TB, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 1 {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
}
