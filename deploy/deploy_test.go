package deploy

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/smbcluster/smbcluster/node/nodemain"
)

// binaries are smbnode, smbcoord and smbctl, built once.
var binaries struct {
	once sync.Once
	dir  string
	err  error
}

func buildBinaries(t *testing.T) string {
	t.Helper()
	binaries.once.Do(func() {
		binaries.dir, binaries.err = os.MkdirTemp("", "deploy-test-")
		if binaries.err != nil {
			return
		}
		for name, pkg := range map[string]string{"smbnode": "./node", "smbcoord": "./coordinator", "smbctl": "./cli"} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(binaries.dir, name), pkg)
			cmd.Dir = ".."
			if out, err := cmd.CombinedOutput(); err != nil {
				binaries.err = &buildError{pkg, string(out)}
				return
			}
		}
	})
	if binaries.err != nil {
		t.Fatal(binaries.err)
	}
	return binaries.dir
}

type buildError struct{ pkg, out string }

func (e *buildError) Error() string { return "go build " + e.pkg + ":\n" + e.out }

func TestMain(m *testing.M) {
	code := m.Run()
	if binaries.dir != "" {
		os.RemoveAll(binaries.dir)
	}
	os.Exit(code)
}

// helpFlagRE matches a flag in a help text: Go's "  -name" or "  --name".
var helpFlagRE = regexp.MustCompile(`(?m)^\s+--?([a-z][a-z0-9-]*)`)

// flagsOf returns the flags a binary's help texts list.
func flagsOf(t *testing.T, bin string, helps ...[]string) map[string]bool {
	t.Helper()
	flags := map[string]bool{"help": true}
	for _, args := range helps {
		out, _ := exec.Command(bin, args...).CombinedOutput()
		for _, m := range helpFlagRE.FindAllStringSubmatch(string(out), -1) {
			flags[m[1]] = true
		}
		// smbctl's flag lists: "--cert FILE, --key FILE".
		for _, m := range regexp.MustCompile(`--([a-z][a-z0-9-]*)`).FindAllStringSubmatch(string(out), -1) {
			flags[m[1]] = true
		}
	}
	return flags
}

// deployFiles are the files whose flags and syntax are checked.
func deployFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, glob := range []string{"systemd/*.service", "compose/*.yaml", "kubernetes/*.yaml", "config/*.json"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 8 {
		t.Fatalf("deploy files: %v", files)
	}
	return files
}

var tokenSep = regexp.MustCompile(`[\s"'\[\],]+`)

// TestFlagsExist: every --flag in the files is one of the binary's that
// it follows (smbnode, smbcoord, smbctl; etcd's are not checked).
func TestFlagsExist(t *testing.T) {
	dir := buildBinaries(t)
	known := map[string]map[string]bool{
		"smbnode":  flagsOf(t, filepath.Join(dir, "smbnode"), []string{"--help"}),
		"smbcoord": flagsOf(t, filepath.Join(dir, "smbcoord"), []string{"--help"}),
		"smbctl": flagsOf(t, filepath.Join(dir, "smbctl"), []string{"--help"}, []string{"node", "add", "--help"},
			[]string{"share", "add", "--help"}, []string{"user", "add", "--help"}, []string{"status", "--help"}),
	}
	for _, f := range deployFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		current, checked := "", 0
		for _, tok := range tokenSep.Split(string(b), -1) {
			switch base := filepath.Base(tok); base {
			case "smbnode", "smbcoord", "smbctl", "etcd":
				current = base
				continue
			}
			if !strings.HasPrefix(tok, "--") || len(tok) < 3 || tok[2] < 'a' || tok[2] > 'z' || known[current] == nil {
				continue
			}
			name, _, _ := strings.Cut(tok[2:], "=")
			if !known[current][name] {
				t.Errorf("%s: %s has no flag --%s", f, current, name)
			}
			checked++
		}
		t.Logf("%s: %d flags checked", f, checked)
	}
}

// TestNodeConfigDecodes: the example node.json is a valid smbnode --config.
func TestNodeConfigDecodes(t *testing.T) {
	b, err := os.ReadFile("config/node.json")
	if err != nil {
		t.Fatal(err)
	}
	var cfg nodemain.Config
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		t.Fatalf("node.json: %v", err)
	}
	if cfg.Etcd == "" || cfg.Name == "" || cfg.JoinTokenFile == "" || cfg.SecretFile == "" {
		t.Errorf("node.json does not join a cluster: %+v", cfg)
	}
}

// TestSystemdUnits: the units pass systemd-analyze verify (with ExecStart
// pointing at the built binaries), or a plain INI check without systemd.
func TestSystemdUnits(t *testing.T) {
	units, _ := filepath.Glob("systemd/*.service")
	for _, u := range units {
		b, err := os.ReadFile(u)
		if err != nil {
			t.Fatal(err)
		}
		checkINI(t, u, string(b))
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed: INI check only")
	}
	dir := buildBinaries(t)
	tmp := t.TempDir()
	for _, u := range units {
		b, _ := os.ReadFile(u)
		s := strings.ReplaceAll(string(b), "/usr/local/bin/", dir+"/")
		path := filepath.Join(tmp, filepath.Base(u))
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(analyze, "verify", "--man=no", path).CombinedOutput(); err != nil {
			t.Errorf("systemd-analyze verify %s: %v\n%s", u, err, out)
		}
	}
}

// checkINI checks a unit's shape: sections, Key=Value lines, continuations.
func checkINI(t *testing.T, name, s string) {
	t.Helper()
	sections := map[string]bool{}
	cont := false
	for i, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		wasCont := cont
		cont = strings.HasSuffix(line, `\`)
		switch {
		case wasCont, line == "", line[0] == '#' || line[0] == ';':
		case line[0] == '[' && line[len(line)-1] == ']':
			sections[line] = true
		case strings.Contains(line, "=") && len(sections) > 0:
		default:
			t.Errorf("%s:%d: not a section, Key=Value or comment: %q", name, i+1, line)
		}
	}
	for _, want := range []string{"[Unit]", "[Service]", "[Install]"} {
		if !sections[want] {
			t.Errorf("%s: no %s section", name, want)
		}
	}
}

// TestYAML: YAML files have no tabs, every Kubernetes document names its
// apiVersion, kind and metadata.name, and, where Python's yaml module is
// installed, every file parses.
func TestYAML(t *testing.T) {
	files, _ := filepath.Glob("*/*.yaml")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.IndexByte(b, '\t'); i >= 0 {
			t.Errorf("%s: tab at byte %d (YAML indents with spaces)", f, i)
		}
		if strings.HasPrefix(f, "kubernetes/") {
			for n, doc := range strings.Split(string(b), "\n---\n") {
				for _, key := range []string{"\napiVersion: ", "\nkind: ", "\nmetadata:\n  name: "} {
					if !strings.Contains("\n"+doc, key) {
						t.Errorf("%s: document %d has no %q", f, n+1, strings.TrimSpace(key))
					}
				}
			}
		}
	}
	py := "/usr/bin/python3"
	if exec.Command(py, "-c", "import yaml").Run() != nil {
		t.Skip("python3 yaml module not installed: structural checks only")
	}
	for _, f := range files {
		out, err := exec.Command(py, "-c", "import sys, yaml\nfor d in yaml.safe_load_all(open(sys.argv[1])):\n    assert d is None or isinstance(d, dict), type(d)", f).CombinedOutput()
		if err != nil {
			t.Errorf("%s does not parse as YAML: %v\n%s", f, err, out)
		}
	}
}
