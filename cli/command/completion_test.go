package command

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCompletion records the generated scripts and has each shell that is
// installed check its script's syntax.
func TestCompletion(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		code, stdout, stderr := runMain([]string{"completion", sh}, nil)
		if code != ExitOK || stderr != "" {
			t.Fatalf("completion %s: exit %d, stderr %q", sh, code, stderr)
		}
		golden(t, "completion/"+sh+".golden", stdout)
		for _, want := range []string{"share", "passwd", "--read-only", "--address", "--password-stdin", "--endpoint"} {
			if !strings.Contains(stdout, strings.TrimPrefix(want, "--")) {
				t.Errorf("%s script lacks %s", sh, want)
			}
		}
		path, err := exec.LookPath(sh)
		if err != nil {
			continue
		}
		script := filepath.Join(t.TempDir(), "smbctl."+sh)
		os.WriteFile(script, []byte(stdout), 0o644)
		if out, err := exec.Command(path, "-n", script).CombinedOutput(); err != nil {
			t.Errorf("%s -n: %v\n%s", sh, err, out)
		}
	}
}

// TestBashCompletion runs the bash script's function on command lines.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	_, script, _ := runMain([]string{"completion", "bash"}, nil)
	for line, want := range map[string]string{
		"smbctl sh":                 "share",
		"smbctl share ":             "add rm set ls get move",
		"smbctl share add --re":     "--read-only --request-timeout",
		"smbctl user passwd --pass": "--password --password-stdin",
		"smbctl status -":           "--ca --cert --endpoint --insecure --key --request-timeout --token --token-file -o",
		"smbctl bench --ser":        "--server",
	} {
		words := strings.Fields(line)
		if strings.HasSuffix(line, " ") {
			words = append(words, "")
		}
		prog := script + "\nCOMP_WORDS=(" + strings.Join(quoteAll(words), " ") + ")\n" +
			"COMP_CWORD=" + strconv.Itoa(len(words)-1) + "\n_smbctl\necho \"${COMPREPLY[*]}\"\n"
		out, err := exec.Command(bash, "-c", prog).Output()
		if got := strings.TrimSpace(string(out)); err != nil || got != want {
			t.Errorf("%q completes to %q (%v), want %q", line, got, err, want)
		}
	}
}

func quoteAll(words []string) []string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = "'" + w + "'"
	}
	return q
}
