package command

import (
	"bytes"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/cli/loadgen"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"512": 512, "4k": 4096, "64K": 64 << 10, "1m": 1 << 20,
		"1MiB": 1 << 20, "256mb": 256 << 20, "2g": 2 << 30, "1t": 1 << 40} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "k", "-4k", "0", "4x", "1.5m", "99999999t"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) accepted", in)
		}
	}
}

func TestJob(t *testing.T) {
	f := benchFlags{server: "fs1", share: "data", user: `CORP\alice`, rw: "mixed", mix: 70,
		bs: "1m", size: "10m", conns: 2, iodepth: 16, runtime: time.Second, dialect: "3.0.2", seed: 1}
	j, err := f.job(func(k string) string { return map[string]string{"SMBCTL_PASSWORD": "pw"}[k] })
	if err != nil {
		t.Fatal(err)
	}
	want := loadgen.SMBOptions{Addr: "fs1:445", Share: "data", User: "alice", Domain: "CORP",
		Password: "pw", Dialect: 0x302, Credits: 16*16 + 32}
	if j.smb != want {
		t.Errorf("smb options %+v, want %+v", j.smb, want)
	}
	if j.cfg.Size != 10<<20 || j.cfg.BlockSize != 1<<20 || j.cfg.Workload != loadgen.Mixed || j.cfg.ReadPercent != 70 {
		t.Errorf("config %+v", j.cfg)
	}
	f.password = "flag"
	if j, _ := f.job(func(string) string { return "env" }); j.smb.Password != "flag" {
		t.Errorf("--password did not win over $SMBCTL_PASSWORD")
	}
}

// fixedStats returns Stats whose every number is known.
func fixedStats() *loadgen.Stats {
	st := &loadgen.Stats{Elapsed: 10 * time.Second, ReadOps: 3000, WriteOps: 1000,
		ReadBytes: 3000 << 16, WriteBytes: 1000 << 16, Moved: 4800 << 16, Verified: 3600, FirstBad: -1}
	for i := range 3000 {
		st.ReadLat.Record(uint64(100+i) * 1000) // 100 µs .. 3.1 ms
	}
	for i := range 1000 {
		st.WriteLat.Record(uint64(200+i*2) * 1000)
	}
	st.Latency.Merge(&st.ReadLat)
	st.Latency.Merge(&st.WriteLat)
	return st
}

func TestPrinterGolden(t *testing.T) {
	f := benchFlags{server: "fs1", share: "data", user: "alice", rw: "mixed", mix: 75,
		bs: "64k", size: "256m", conns: 2, iodepth: 16, runtime: 10 * time.Second,
		warmup: 2 * time.Second, file: "smbctl-bench.dat", sign: true, seed: 1}
	j, err := f.job(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	res := newBenchResult(j, fixedStats())
	for _, format := range []string{"table", "json"} {
		var b bytes.Buffer
		p, err := newPrinter(&b, format)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.print(res); err != nil {
			t.Fatal(err)
		}
		golden(t, "bench-mixed."+format+".golden", b.String())
	}
	// A read-only run prints one row.
	st := fixedStats()
	st.WriteOps, st.WriteBytes, st.WriteLat = 0, 0, loadgen.Histogram{}
	st.Latency = st.ReadLat
	st.Mismatches, st.FirstBad = 2, 65536
	var b bytes.Buffer
	p, _ := newPrinter(&b, "table")
	p.print(newBenchResult(j, st))
	golden(t, "bench-read.table.golden", b.String())

	b.Reset()
	p.print(tcpResult{Streams: 4, Seconds: 3, Bytes: 3 << 30, MiBps: 1024, Loopback: "127.0.0.1"})
	golden(t, "tcp.table.golden", b.String())
}
