package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ClientTimeout bounds one run of an external client.
const ClientTimeout = 5 * time.Minute

// Result is the outcome of running an external client.
type Result struct {
	Cmd      string
	Stdout   string
	Stderr   string
	ExitCode int // -1 if the process did not exit normally
}

// Output is stdout followed by stderr, for assertions that do not care
// which stream a client chose.
func (r Result) Output() string { return r.Stdout + r.Stderr }

func (r Result) String() string {
	return fmt.Sprintf("$ %s\nexit %d\n--- stdout\n%s--- stderr\n%s", r.Cmd, r.ExitCode, r.Stdout, r.Stderr)
}

// Run runs a program with a deadline and returns its outputs and exit code.
// Failing to start the program at all fails the test.
func Run(t testing.TB, dir string, name string, args ...string) Result {
	t.Helper()
	return RunAs(t, nil, nil, dir, name, args...)
}

// RunAs is Run with env added to the environment and, if cred is set, as
// that user (the test must run as root).
func RunAs(t testing.TB, cred *syscall.Credential, env []string, dir string, name string, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ClientTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = OwnGroup()
	cmd.SysProcAttr.Credential = cred
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := Result{Cmd: shellQuote(name, args), Stdout: stdout.String(), Stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.ExitCode = ee.ExitCode()
	default:
		t.Fatalf("%s: %v", r.Cmd, err)
	}
	if ctx.Err() != nil {
		t.Errorf("%s: killed after %v", r.Cmd, ClientTimeout)
	}
	return r
}

func shellQuote(name string, args []string) string {
	parts := []string{name}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t'\"\\;$*?") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// SMBClient runs Samba's smbclient against a server.
type SMBClient struct {
	Node     *Node
	User     string
	Password string
	// Protocol, if set, pins both client min and max protocol (SMB2_02,
	// SMB2_10, SMB3_00, SMB3_02, SMB3_11).
	Protocol string
	// Protection is passed as --client-protection: "sign", "encrypt" or
	// "off"; empty leaves smbclient's default.
	Protection string
	Extra      []string
	// Kerberos, if set, is the credential cache smbclient logs on with
	// (--use-kerberos=required); Env then holds the realm's KRB5_CONFIG
	// (KDC.ClientEnv).
	Kerberos string
	Env      []string
	// ServerName, if set, is the name in the UNC path (the Kerberos
	// service principal's host, cifs/ServerName); smbclient connects to
	// Node.Host all the same (-I).
	ServerName string
}

func (c SMBClient) args() []string {
	args := []string{
		"--configfile=" + os.DevNull,
		"-p", strconv.Itoa(c.Node.Port),
	}
	if c.Kerberos != "" {
		args = append(args, "--use-kerberos=required", "--use-krb5-ccache="+c.Kerberos, "-U", c.User)
	} else {
		args = append(args, "-U", c.User+"%"+c.Password)
	}
	if c.ServerName != "" {
		args = append(args, "-I", c.Node.Host)
	}
	if c.Protocol != "" {
		args = append(args,
			"--option=client min protocol="+c.Protocol,
			"--option=client max protocol="+c.Protocol)
	}
	if c.Protection != "" {
		args = append(args, "--client-protection="+c.Protection)
	}
	return append(args, c.Extra...)
}

// List runs smbclient -L against the server.
func (c SMBClient) List(t testing.TB) Result {
	t.Helper()
	bin := RequireTool(t, "smbclient")
	return RunAs(t, nil, c.Env, "", bin, append(c.args(), "-L", "//"+c.server())...)
}

func (c SMBClient) server() string {
	if c.ServerName != "" {
		return c.ServerName
	}
	return c.Node.Host
}

// Script runs commands (joined with ";") in one smbclient session on share,
// in the local directory dir (used for relative put/get paths).
func (c SMBClient) Script(t testing.TB, dir, share string, commands ...string) Result {
	t.Helper()
	bin := RequireTool(t, "smbclient")
	args := append(c.args(), "//"+c.server()+"/"+share, "-c", strings.Join(commands, "; "))
	return RunAs(t, nil, c.Env, dir, bin, args...)
}

// Python is the interpreter the tests run scripts with: the distribution's,
// where the Debian python3-* packages are importable.
const Python = "/usr/bin/python3"

// RequirePythonModule skips the test unless Python can import module.
func RequirePythonModule(t testing.TB, module string) {
	t.Helper()
	if _, err := os.Stat(Python); err != nil {
		t.Skipf("%s is not installed", Python)
	}
	if err := exec.Command(Python, "-c", "import "+module).Run(); err != nil {
		t.Skipf("python module %s is not installed (CI installs python3-impacket): %v", module, err)
	}
}

// RunPython runs a script with /usr/bin/python3.
func RunPython(t testing.TB, script string, args ...string) Result {
	t.Helper()
	return Run(t, "", Python, append([]string{script}, args...)...)
}

// OwnGroup makes a child the leader of its own process group, killed with
// the test process. A tool that signals its whole group (smbd does unless
// told not to) then cannot reach the go command, which counts a SIGINT or
// SIGQUIT as a failed run without naming a test: a CI run ended in a bare
// "FAIL" with every package ok, the mark of such an interrupt; which child
// sent it was not found, so none shares the go command's group now.
func OwnGroup() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
