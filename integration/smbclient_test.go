package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/smbcluster/smbcluster/integration/framework"
)

// dialects are the smbclient protocol names of every SMB2/3 dialect.
var dialects = []string{"SMB2_02", "SMB2_10", "SMB3_00", "SMB3_02", "SMB3_11"}

// TestSMBClient drives smbclient at every dialect, then with signing and
// encryption required, over the same share.
func TestSMBClient(t *testing.T) {
	framework.RequireTool(t, "smbclient")
	n := framework.Start(t, framework.Options{})
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			c := framework.SMBClient{Node: n, User: user, Password: password(), Protocol: d}
			checkList(t, c)
			checkFileSession(t, c)
		})
	}
	for _, p := range []string{"sign", "encrypt"} {
		for _, d := range []string{"SMB3_11", "SMB3_00"} {
			t.Run(p+"/"+d, func(t *testing.T) {
				c := framework.SMBClient{Node: n, User: user, Password: password(), Protocol: d, Protection: p}
				checkList(t, c)
				checkFileSession(t, c)
			})
		}
	}
}

// TestSMBClientWrongPassword checks that a bad password is refused with
// STATUS_LOGON_FAILURE ([MS-SMB2] 3.3.5.5.3).
func TestSMBClientWrongPassword(t *testing.T) {
	framework.RequireTool(t, "smbclient")
	n := framework.Start(t, framework.Options{})
	c := framework.SMBClient{Node: n, User: user, Password: password() + "-wrong"}
	r := c.Script(t, t.TempDir(), shareNm, "ls")
	if r.ExitCode == 0 || !strings.Contains(r.Output(), "NT_STATUS_LOGON_FAILURE") {
		t.Errorf("want non-zero exit and NT_STATUS_LOGON_FAILURE:\n%s", r)
	}
	r = c.List(t)
	if r.ExitCode == 0 || !strings.Contains(r.Output(), "NT_STATUS_LOGON_FAILURE") {
		t.Errorf("-L: want non-zero exit and NT_STATUS_LOGON_FAILURE:\n%s", r)
	}
}

// checkList runs smbclient -L and expects the test share and IPC$.
func checkList(t *testing.T, c framework.SMBClient) {
	t.Helper()
	r := c.List(t)
	if r.ExitCode != 0 {
		t.Fatalf("smbclient -L failed:\n%s", r)
	}
	for _, re := range []*regexp.Regexp{listed, regexp.MustCompile(`(?m)^\s+IPC\$\s+IPC\b`)} {
		if !re.MatchString(r.Stdout) {
			t.Errorf("share list does not match %s:\n%s", re, r)
		}
	}
}

// listed matches the test share's line in smbclient -L's output.
var listed = regexp.MustCompile(`(?m)^\s+` + shareNm + `\s+Disk\b`)

// step is one smbclient command and what it must leave behind.
type step struct {
	cmd   string
	out   string             // regexp the session's output must match
	check func(t *testing.T) // the disk (and local files) after the command
}

// checkFileSession runs mkdir/put/ls/get/rename/allinfo/del/rmdir, first one
// command per session with the disk checked after each, then all of them in
// one session.
func checkFileSession(t *testing.T, c framework.SMBClient) {
	local := t.TempDir()
	const size = mib + 1
	sum := writeRandomFile(t, filepath.Join(local, "up.bin"), size, 1)
	root := c.Node.SharePath(shareNm)
	d, f, g := filepath.Join(root, "d"), filepath.Join(root, "d", "f"), filepath.Join(root, "d", "g")
	sizeRE := fmt.Sprint(size)
	steps := []step{
		{cmd: `mkdir d`, check: func(t *testing.T) { assertDir(t, d) }},
		{cmd: `put up.bin d\f`, out: `putting file up.bin as \\d\\f`, check: func(t *testing.T) { assertSum(t, f, sum, size) }},
		{cmd: `ls d\*`, out: `(?m)^\s+f\s+A?\s*` + sizeRE + `\s`},
		{cmd: `get d\f down.bin`, out: `getting file \\d\\f of size ` + sizeRE + ` as down.bin`,
			check: func(t *testing.T) { assertSum(t, filepath.Join(local, "down.bin"), sum, size) }},
		{cmd: `rename d\f d\g`, check: func(t *testing.T) { assertAbsent(t, f); assertSum(t, g, sum, size) }},
		{cmd: `allinfo d\g`, out: `(?s)write_time:.*stream: \[::\$DATA\], ` + sizeRE + ` bytes`},
		{cmd: `del d\g`, check: func(t *testing.T) { assertAbsent(t, g); assertDir(t, d) }},
		{cmd: `rmdir d`, check: func(t *testing.T) { assertAbsent(t, d) }},
	}
	var all []string
	for _, s := range steps {
		all = append(all, s.cmd)
		r := c.Script(t, local, shareNm, s.cmd)
		checkStep(t, s, r)
		if t.Failed() {
			t.FailNow()
		}
	}
	os.Remove(filepath.Join(local, "down.bin"))
	r := c.Script(t, local, shareNm, all...)
	for _, s := range steps {
		checkStep(t, step{cmd: s.cmd, out: s.out}, r)
	}
	assertSum(t, filepath.Join(local, "down.bin"), sum, size)
	assertAbsent(t, d)
}

// checkStep asserts a step's exit code, output and disk state.
func checkStep(t *testing.T, s step, r framework.Result) {
	t.Helper()
	if r.ExitCode != 0 || strings.Contains(r.Output(), "NT_STATUS_") {
		t.Errorf("%q failed:\n%s", s.cmd, r)
		return
	}
	if s.out != "" && !regexp.MustCompile(s.out).MatchString(r.Output()) {
		t.Errorf("%q: output does not match %s:\n%s", s.cmd, s.out, r)
	}
	if s.check != nil {
		s.check(t)
	}
}

func assertDir(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil || !fi.IsDir() {
		t.Errorf("%s: want a directory, got %v, %v", path, fi, err)
	}
}

func assertSum(t *testing.T, path, sum string, size int64) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	got, n := fileSum(t, path)
	if got != sum || n != size {
		t.Errorf("%s: sha256 %s size %d, want %s size %d", path, got, n, sum, size)
	}
}

// TestSMBClientEncryptedShare checks a share that requires encryption
// ([MS-SMB2] 3.3.5.7: SMB2_SHAREFLAG_ENCRYPT_DATA): SMB 3.x clients encrypt
// without being asked, SMB 2.x clients are refused.
func TestSMBClientEncryptedShare(t *testing.T) {
	framework.RequireTool(t, "smbclient")
	n := framework.Start(t, framework.Options{Shares: []framework.Share{
		{Name: shareNm}, {Name: "secret", Encrypt: true},
	}})
	for _, d := range []string{"SMB3_00", "SMB3_11"} {
		c := framework.SMBClient{Node: n, User: user, Password: password(), Protocol: d}
		local := t.TempDir()
		sum := writeRandomFile(t, filepath.Join(local, "up.bin"), 64*kib+7, 4)
		r := c.Script(t, local, "secret", `put up.bin s.bin`, `get s.bin down.bin`, `del s.bin`)
		checkStep(t, step{cmd: d + " put/get/del on the encrypted share"}, r)
		assertSum(t, filepath.Join(local, "down.bin"), sum, 64*kib+7)
		assertAbsent(t, filepath.Join(n.SharePath("secret"), "s.bin"))
	}
	c := framework.SMBClient{Node: n, User: user, Password: password(), Protocol: "SMB2_10"}
	r := c.Script(t, t.TempDir(), "secret", "ls")
	if r.ExitCode == 0 || !strings.Contains(r.Output(), "NT_STATUS_ACCESS_DENIED") {
		t.Errorf("SMB2_10 on an encrypted share: want NT_STATUS_ACCESS_DENIED:\n%s", r)
	}
}

// TestSMBClientSigningRequired checks that a server requiring signing
// serves clients at SMB 2.0.2 and 3.1.1 (they must sign: [MS-SMB2]
// 3.2.5.2). No standard client can be made to skip signing against such a
// server, so refusing unsigned requests is left to the server's own tests.
func TestSMBClientSigningRequired(t *testing.T) {
	framework.RequireTool(t, "smbclient")
	n := framework.Start(t, framework.Options{SigningRequired: true})
	for _, d := range []string{"SMB2_02", "SMB3_11"} {
		c := framework.SMBClient{Node: n, User: user, Password: password(), Protocol: d}
		checkStep(t, step{cmd: d + " ls", out: `blocks available`}, c.Script(t, t.TempDir(), shareNm, "ls"))
	}
}
