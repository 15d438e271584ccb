package command

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update to accept):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// runMain runs smbctl with args and a fixed environment.
func runMain(args []string, envVars map[string]string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb, getenv: func(k string) string { return envVars[k] }}
	code = run(context.Background(), e, args)
	return code, out.String(), errb.String()
}

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"no-args", nil, ExitUsage},
		{"help", []string{"--help"}, ExitOK},
		{"unknown-command", []string{"frobnicate"}, ExitUsage},
		{"bench-help", []string{"bench", "--help"}, ExitOK},
		{"bench-missing-server", []string{"bench", "--share", "s", "--user", "u"}, ExitUsage},
		{"bench-bad-flag", []string{"bench", "--colour"}, ExitUsage},
		{"bench-bad-rw", []string{"bench", "--server", "h", "--share", "s", "--user", "u", "--rw", "sideways"}, ExitUsage},
		{"bench-bad-bs", []string{"bench", "--server", "h", "--share", "s", "--user", "u", "--bs", "3x"}, ExitUsage},
		{"bench-odd-bs", []string{"bench", "--server", "h", "--share", "s", "--user", "u", "--bs", "1000"}, ExitUsage},
		{"bench-bad-dialect", []string{"bench", "--server", "h", "--share", "s", "--user", "u", "--dialect", "1.0"}, ExitUsage},
		{"bench-encrypt-smb2", []string{"bench", "--server", "h", "--share", "s", "--user", "u", "--encrypt", "--dialect", "2.1"}, ExitUsage},
		{"bench-bad-output", []string{"bench", "-o", "yaml"}, ExitUsage},
		{"bench-zero-conns", []string{"bench", "--server", "h", "--share", "s", "--user", "u", "--conns", "0"}, ExitUsage},
		{"bench-extra-arg", []string{"bench", "--server", "h", "stray"}, ExitUsage},
		{"version-bad-output", []string{"version", "-o", "xml"}, ExitUsage},
		{"share-no-verb", []string{"share"}, ExitUsage},
		{"share-help", []string{"share", "--help"}, ExitOK},
		{"share-unknown-verb", []string{"share", "frob"}, ExitUsage},
		{"share-add-help", []string{"share", "add", "--help"}, ExitOK},
		{"share-set-help", []string{"share", "set", "-h"}, ExitOK},
		{"share-add-bad-flag", []string{"share", "add", "--colour", "x", "/x"}, ExitUsage},
		{"share-ls-bad-output", []string{"share", "ls", "-o", "yaml"}, ExitUsage},
		{"share-rm-extra-arg", []string{"share", "rm", "a", "b"}, ExitUsage},
		{"node-help", []string{"node", "help"}, ExitOK},
		{"node-add-help", []string{"node", "add", "--help"}, ExitOK},
		{"node-drain-help", []string{"node", "drain", "--help"}, ExitOK},
		{"user-add-help", []string{"user", "add", "--help"}, ExitOK},
		{"session-help", []string{"session", "--help"}, ExitOK},
		{"open-close-help", []string{"open", "close", "--help"}, ExitOK},
		{"lock-ls-help", []string{"lock", "ls", "--help"}, ExitOK},
		{"global-bad-flag", []string{"--colour", "share", "ls"}, ExitUsage},
		{"global-help", []string{"--endpoint", "x", "--help"}, ExitOK},
		{"completion-help", []string{"completion", "--help"}, ExitOK},
		{"completion-bad-shell", []string{"completion", "tcsh"}, ExitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runMain(tc.args, nil)
			if code != tc.code {
				t.Errorf("exit code %d, want %d", code, tc.code)
			}
			golden(t, "usage/"+tc.name+".golden", "stdout:\n"+stdout+"stderr:\n"+stderr)
		})
	}
}

func TestVersion(t *testing.T) {
	old := Version
	Version = "v9.9.9-test"
	defer func() { Version = old }()
	code, stdout, _ := runMain([]string{"version", "-o", "json"}, nil)
	if code != ExitOK || !strings.Contains(stdout, `"version": "v9.9.9-test"`) {
		t.Errorf("code %d, output %q", code, stdout)
	}
	code, stdout, _ = runMain([]string{"version"}, nil)
	if code != ExitOK || !strings.Contains(stdout, "v9.9.9-test") {
		t.Errorf("code %d, output %q", code, stdout)
	}
}

func TestConnectionRefused(t *testing.T) {
	// Port 1 on loopback refuses: a runtime error, exit code 1.
	code, stdout, stderr := runMain([]string{"bench", "--server", "127.0.0.1:1", "--share", "s",
		"--user", "u", "--no-progress"}, map[string]string{"SMBCTL_PASSWORD": "pw"})
	if code != ExitError || stdout != "" || !strings.Contains(stderr, "127.0.0.1:1") {
		t.Errorf("code %d stdout %q stderr %q", code, stdout, stderr)
	}
}
