package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

const runsJSON = `
{"server":"ours","mode":"plain","rw":"read","bs":"4k","conns":1,"run":1,"exit":0,"cpu_s":1,"result":{"total":{"mib_s":100,"iops":25600,"lat_us":{"p99":50}},"moved_bytes":1073741824}}
{"server":"samba","mode":"plain","rw":"read","bs":"4k","conns":1,"run":1,"exit":0,"cpu_s":2,"result":{"total":{"mib_s":50,"iops":12800,"lat_us":{"p99":80}},"moved_bytes":1073741824}}
{"server":"samba","mode":"plain","rw":"read","bs":"4k","conns":1,"run":2,"exit":0,"cpu_s":2,"result":{"total":{"mib_s":80,"iops":20480,"lat_us":{"p99":70}},"moved_bytes":1073741824}}
{"server":"ours","mode":"plain","rw":"read","bs":"4k","conns":1,"run":2,"exit":1,"cpu_s":0,"result":null}
{"server":"ours","mode":"plain","rw":"write","bs":"4k","conns":1,"run":1,"exit":-1}
{"server":"samba","mode":"plain","rw":"write","bs":"4k","conns":1,"run":1,"exit":0,"cpu_s":1,"result":{"total":{"mib_s":10,"iops":2560,"lat_us":{"p99":900}},"moved_bytes":536870912}}
`

func TestReport(t *testing.T) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs.json")
	if err := os.WriteFile(runs, []byte(runsJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := report(runs, "", filepath.Join(dir, "latest")); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "latest.md"))
	for _, want := range []string{
		// Only run 1 pairs: ratio 100/50; ours' CPU 1 s/GiB vs Samba's 2.
		"| plain | read | 4k | 1 | 100.0 (1/2 ok) | 65.0 | 2.00× | 25600 (1/2 ok) | 16640 | 50 (1/2 ok) | 75 | 1.00 (1/2 ok) | 2.00 | 0.50× |",
		"| plain | write | 4k | 1 | fail | 10.0 | – |",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("latest.md lacks %q:\n%s", want, md)
		}
	}
	for _, ext := range []string{".json", ".csv", ".dat", ".gp"} {
		if _, err := os.Stat(filepath.Join(dir, "latest"+ext)); err != nil {
			t.Error(err)
		}
	}
}
