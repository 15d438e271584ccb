package nodemain

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()
	cases := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"defaults", nil, ""},
		{"full", []string{"--listen", "127.0.0.1:0", "--share", "data=" + dir + ",readonly,encrypt,comment=a, b", "--user", "alice:pw:with:colons", "--encryption", "desired", "--log-level", "debug"}, ""},
		{"share without path", []string{"--share", "data"}, "want NAME=PATH"},
		{"share path missing", []string{"--share", "data=" + filepath.Join(dir, "nope")}, "no such file"},
		{"share path is a file", []string{"--share", "data=" + file}, "not a directory"},
		{"unknown share option", []string{"--share", "data=" + dir + ",fast"}, `unknown option "fast"`},
		{"bad share name", []string{"--share", "da/ta=" + dir}, "invalid name"},
		{"IPC$ reserved", []string{"--share", "ipc$=" + dir}, "built in"},
		{"duplicate share", []string{"--share", "a=" + dir, "--share", "A=" + dir}, "defined twice"},
		{"bad user", []string{"--user", "alice"}, "want NAME:PASSWORD"},
		{"bad encryption", []string{"--encryption", "sometimes"}, "want off, desired or required"},
		{"bad log level", []string{"--log-level", "loud"}, "--log-level"},
		{"negative shutdown timeout", []string{"--shutdown-timeout", "-1s"}, "--shutdown-timeout must be positive"},
		{"stray argument", []string{"extra"}, "unexpected argument"},
		{"bad auth", []string{"--auth", "kerberos5"}, "want both, kerberos or ntlm"},
		{"kerberos only", []string{"--auth", "kerberos", "--keytab", file, "--spn", "cifs/files.test"}, ""},
		{"negative clock skew", []string{"--krb-clock-skew", "-1s"}, "--krb-clock-skew must be positive"},
		{"unknown flag", []string{"--nope"}, "not defined"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := parseFlags(c.args, devnull)
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if len(cfg.Listen) == 0 {
					t.Fatal("no listen address")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err = %v, want it to mention %q", err, c.wantErr)
			}
		})
	}
}

func TestParseShareOptions(t *testing.T) {
	sc, err := parseShare(`data=/srv/data,readonly,encrypt,comment=team, shared`)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Name != "data" || sc.Path != "/srv/data" || !sc.ReadOnly || !sc.Encrypt || sc.Comment != "team, shared" {
		t.Fatalf("%+v", sc)
	}
}

func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "node.json")
	os.WriteFile(path, []byte(`{"listen":["127.0.0.1:0"],"shares":[{"name":"d","path":"`+dir+`"}],"users":[{"name":"u","password":"p"}],"encryption":"required"}`), 0o644)
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()
	cfg, err := parseFlags([]string{"--config", path, "--user", "v:q"}, devnull)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Shares) != 1 || len(cfg.Users) != 2 || cfg.Encryption != "required" {
		t.Fatalf("%+v", cfg)
	}
	os.WriteFile(path, []byte(`{"shutdown_timeout":"45s"}`), 0o644)
	if cfg, err := parseFlags([]string{"--config", path}, devnull); err != nil || cfg.ShutdownTimeout != Duration(45*time.Second) {
		t.Fatalf("shutdown_timeout from the file: %v, %v", cfg, err)
	}
	if cfg, err := parseFlags([]string{"--config", path, "--shutdown-timeout", "3s"}, devnull); err != nil || cfg.ShutdownTimeout != Duration(3*time.Second) {
		t.Fatalf("--shutdown-timeout over the file: %v, %v", cfg, err)
	}
	os.WriteFile(path, []byte(`{"shares":[],"colour":"blue"}`), 0o644)
	if _, err := parseFlags([]string{"--config", path}, devnull); err == nil || !strings.Contains(err.Error(), "colour") {
		t.Fatalf("unknown field accepted: %v", err)
	}
}

// TestLimitSettings: the limits come from the JSON file, flags override
// it, zero means the default and a negative value none.
func TestLimitSettings(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "node.json")
	os.WriteFile(path, []byte(`{"handshake_timeout":"10s","idle_timeout":"5m","max_connections":100,"max_opens":-1,"max_opens_per_session":50}`), 0o644)
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()
	cfg, err := parseFlags([]string{"--config", path, "--max-connections", "200", "--handshake-timeout", "-1s"}, devnull)
	if err != nil {
		t.Fatal(err)
	}
	if got := limitDuration(cfg.HandshakeTimeout, defaultHandshakeTimeout); got != 0 {
		t.Errorf("--handshake-timeout -1s: %v, want none", got)
	}
	if got := limitDuration(cfg.IdleTimeout, 0); got != 5*time.Minute {
		t.Errorf("idle_timeout: %v", got)
	}
	if got := limitCount(cfg.MaxConnections, defaultMaxConnections); got != 200 {
		t.Errorf("max_connections 100, --max-connections 200: %d", got)
	}
	if got := limitCount(cfg.MaxOpens, defaultMaxOpens()); got != 0 {
		t.Errorf("max_opens -1: %d, want unlimited", got)
	}
	if got := limitCount(cfg.MaxOpensPerSession, defaultMaxOpensPerSession); got != 50 {
		t.Errorf("max_opens_per_session: %d", got)
	}
	cfg, err = parseFlags(nil, devnull)
	if err != nil {
		t.Fatal(err)
	}
	if limitDuration(cfg.HandshakeTimeout, defaultHandshakeTimeout) != 30*time.Second || limitDuration(cfg.IdleTimeout, 0) != 0 ||
		limitCount(cfg.MaxConnections, defaultMaxConnections) != 4096 || limitCount(cfg.MaxOpensPerSession, defaultMaxOpensPerSession) != 16384 {
		t.Errorf("defaults: %+v", cfg)
	}
	var lim syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	if got := defaultMaxOpens(); got != int(lim.Cur/2) {
		t.Errorf("default max opens %d, want half of RLIMIT_NOFILE %d", got, lim.Cur)
	}
}

func TestParseLinkSpeed(t *testing.T) {
	for in, want := range map[string]uint64{"": 0, "10G": 10e9, "2.5g": 2.5e9, "100M": 100e6, "1000000": 1e6, "40T": 40e12, "9k": 9000} {
		if got, err := parseLinkSpeed(in); err != nil || got != want {
			t.Errorf("parseLinkSpeed(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"G", "fast", "-1G", "0", "10X", "NaN", "2000T"} {
		if _, err := parseLinkSpeed(in); err == nil {
			t.Errorf("parseLinkSpeed(%q) accepted", in)
		}
	}
}
