package command

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/smbcluster/smbcluster/cli/loadgen"
)

// FuzzParseSize: parseSize never panics, and what it accepts is positive
// and survives fmtSize/parseSize unchanged.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"4k", "64K", "1MiB", "256mb", "2g", "0", "-1", "9223372036854775807", "1tb", "k"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseSize(s)
		if err != nil {
			return
		}
		if v <= 0 {
			t.Fatalf("parseSize(%q) = %d", s, v)
		}
		if back, err := parseSize(fmtSize(v)); err != nil || back != v {
			t.Fatalf("fmtSize(%d) = %q parses to %d, %v", v, fmtSize(v), back, err)
		}
	})
}

// FuzzBenchArgs: no command line makes bench panic or reach the network
// with an invalid configuration.
func FuzzBenchArgs(f *testing.F) {
	f.Add("mixed", "4k", "256m", "3.1.1", 50, 1, 16)
	f.Add("read", "1m", "1", "", 0, 0, 0)
	f.Fuzz(func(t *testing.T, rw, bs, size, dialect string, mix, conns, depth int) {
		fl := benchFlags{server: "h", share: "s", user: "u", rw: rw, bs: bs, size: size,
			dialect: dialect, mix: mix, conns: conns, iodepth: depth, runtime: 1, seed: 1}
		j, err := fl.job(func(string) string { return "" })
		if err != nil {
			return
		}
		if err := j.cfg.Validate(); err != nil {
			t.Fatalf("job accepted an invalid config: %v", err)
		}
		if _, err := loadgen.ParseDialect(dialect); err != nil {
			t.Fatal("job accepted a bad dialect")
		}
	})
}

// FuzzAdminArgs: no command line makes an admin command panic, and every
// one ends with a documented exit code. The coordinator is unreachable
// (every dial fails at once), so nothing leaves the process.
func FuzzAdminArgs(f *testing.F) {
	for _, s := range []string{"share add data /srv/data --read-only", "share set data --comment x --if-revision 3",
		"node drain n1 --timeout 5m", "session close 0x42 --timeout -1s", "open close n1 0xffffffffffffffff",
		"open ls --session 1e3", "user add alice --password x", "--endpoint [::1] --insecure status -o json",
		"share add -- -x /y", "node add n1 --address ,,, -o", "completion fish", "status extra"} {
		f.Add(s)
	}
	refuse := func(context.Context, string) (net.Conn, error) { return nil, errors.New("no network in fuzzing") }
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Fields(line)
		if len(args) > 0 && args[0] == "bench" {
			return // FuzzBenchArgs covers bench
		}
		var out, errb strings.Builder
		e := &env{stdout: &out, stderr: &errb, getenv: func(string) string { return "" },
			stdin: strings.NewReader(""), dial: refuse,
			readSecret: func(string) (string, error) { return "", errors.New("no terminal") }}
		code := run(context.Background(), e, args)
		if code < ExitOK || code > ExitIncomplete {
			t.Fatalf("%q: exit code %d", line, code)
		}
		if code != ExitOK && errb.Len() == 0 {
			t.Fatalf("%q: exit %d without a message", line, code)
		}
	})
}
