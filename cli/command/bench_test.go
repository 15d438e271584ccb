package command

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/cli/loadgen"
	"github.com/smbcluster/smbcluster/node/servertest"
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
	want := loadgen.SMBOptions{Addr: "fs1:445", Addrs: []string{"fs1:445"}, Share: "data", User: "alice", Domain: "CORP",
		Password: "pw", Dialect: 0x302, Credits: 16*16 + 32}
	if !reflect.DeepEqual(j.smb, want) {
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

// benchJSON runs smbctl bench -o json with args against the in-process
// server(s) and decodes its output.
func benchJSON(t *testing.T, v any, args ...string) string {
	t.Helper()
	args = append([]string{"bench", "--user", servertest.Alice, "--no-progress", "-o", "json", "--warmup", "0s"}, args...)
	code, stdout, stderr := runMain(args, map[string]string{"SMBCTL_PASSWORD": servertest.AlicePassword})
	if code != ExitOK {
		t.Fatalf("smbctl %s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	if err := json.Unmarshal([]byte(stdout), v); err != nil {
		t.Fatalf("%v in %s", err, stdout)
	}
	return stderr
}

func TestBenchOpen(t *testing.T) {
	root := t.TempDir()
	srv := servertest.Start(t, servertest.Options{DiskRoot: root})
	for _, variant := range [][]string{{"--files", "3"}, {"--hot-file"}} {
		var r openResult
		benchJSON(t, &r, append(variant, "--server", srv.Addr, "--share", servertest.DiskShareName,
			"--rw", "open", "--open-read", "--conns", "2", "--iodepth", "2", "--runtime", "300ms")...)
		if r.Ops == 0 || r.Rate <= 0 || r.Latency.P50 <= 0 || r.Verified < r.Ops || r.Mismatched != 0 || r.ReadSize != 4096 {
			t.Errorf("%v: %+v", variant, r)
		}
		if want := map[bool]int{false: 12, true: 1}[variant[0] == "--hot-file"]; r.Files != want {
			t.Errorf("%v: %d files, want %d", variant, r.Files, want)
		}
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
}

// TestBenchLeaseBreak: one server breaks every time; two servers that
// share a directory without coherence (the cluster's nodes today) never
// do, and the probe says so instead of giving a time.
func TestBenchLeaseBreak(t *testing.T) {
	root := t.TempDir()
	s1 := servertest.Start(t, servertest.Options{DiskRoot: root})
	s2 := servertest.Start(t, servertest.Options{DiskRoot: root})
	var one breakResult
	benchJSON(t, &one, "--server", s1.Addr, "--share", servertest.DiskShareName, "--rw", "leasebreak", "--breaks", "10")
	if one.Tries != 10 || one.Waited != 10 || one.Missing != 0 || one.BreakLat.P50 <= 0 || one.Granted != "RWH" {
		t.Errorf("one server: %+v", one)
	}
	var two breakResult
	stderr := benchJSON(t, &two, "--server", s1.Addr+","+s2.Addr, "--share", servertest.DiskShareName,
		"--rw", "leasebreak", "--breaks", "2")
	if two.Holder != s1.Addr || two.Other != s2.Addr || two.Missing != 2 || two.Breaks != 0 {
		t.Errorf("two servers: %+v", two)
	}
	if !strings.Contains(stderr, "2 of 2 conflicting opens completed with no lease break") {
		t.Errorf("stderr %q", stderr)
	}
}

func TestOpenPrinterGolden(t *testing.T) {
	f := benchFlags{server: "n1,n2:4450", share: "data", user: "alice", rw: "open", conns: 4, iodepth: 1,
		files: 100, openRead: true, runtime: 5 * time.Second, file: "smbctl-bench.dat", seed: 1}
	j, err := f.job(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	st := &loadgen.OpenStats{Elapsed: 5 * time.Second, Ops: 20000, ReadBytes: 20000 * 4096, Files: 400,
		Total: 21000, Verified: 21000}
	for i := range 20000 {
		st.Latency.Record(uint64(150+i/100) * 1000)
	}
	bs := &loadgen.BreakStats{Tries: 4, Granted: 7, Waited: 3, Missing: 1}
	for i := range 3 {
		bs.BreakLat.Record(uint64(200+i*100) * 1000)
	}
	for i := range 4 {
		bs.OpenLat.Record(uint64(400+i*100) * 1000)
	}
	f.rw, f.breaks = "leasebreak", 4
	jb, err := f.job(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"table", "json"} {
		var b bytes.Buffer
		p, _ := newPrinter(&b, format)
		p.print(newOpenResult(j, st))
		p.print(newBreakResult(jb, bs, 0x311))
		golden(t, "bench-open."+format+".golden", b.String())
	}
}

func TestOpenJob(t *testing.T) {
	env := func(string) string { return "" }
	f := benchFlags{server: "n1, n2:4450,n3", share: "data", user: "alice", rw: "open", conns: 6, iodepth: 2,
		files: 10, hotFile: true, openRead: true, runtime: time.Second, file: "x.dat", client: "native", breaks: 5}
	j, err := f.job(env)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"n1:445", "n2:4450", "n3:445"}; !reflect.DeepEqual(j.smb.Addrs, want) || j.smb.Addr != want[0] {
		t.Errorf("addresses %q (%q), want %q", j.smb.Addrs, j.smb.Addr, want)
	}
	if c := j.open; c == nil || c.Dir != "x.open" || !c.Hot || c.ReadSize != 4096 || c.Conns != 6 || c.IODepth != 2 {
		t.Errorf("open config %+v", c)
	}
	f.rw = "leasebreak"
	if j, err := f.job(env); err != nil || j.probe == nil || j.probe.Name != "x.lease" || j.probe.Count != 5 {
		t.Errorf("leasebreak job %+v, %v", j, err)
	}
	for _, bad := range []func(*benchFlags){
		func(f *benchFlags) { f.client = "go-smb2" },
		func(f *benchFlags) { f.dialect = "2.0.2" },
		func(f *benchFlags) { f.breaks = 0 },
		func(f *benchFlags) { f.server = "n1,,n2" },
		func(f *benchFlags) { f.rw, f.hotFile, f.files = "open", false, 0 },
	} {
		g := f
		bad(&g)
		if _, err := g.job(env); err == nil {
			t.Errorf("accepted %+v", g)
		}
	}
}

// listenAlso serves srv on host at srv's port as well, so its interface
// list offers host too.
func listenAlso(t *testing.T, srv *servertest.Server, host string) {
	t.Helper()
	_, port, _ := net.SplitHostPort(srv.Addr)
	l, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		t.Skipf("cannot listen on %s:%s: %v", host, port, err)
	}
	go srv.Serve(l)
}

// TestBenchMultichannel: --multichannel binds a channel per address the
// server's interface list offers (or per --conns, round robin), spreads
// the workload's requests over them and reports what each carried.
func TestBenchMultichannel(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	listenAlso(t, srv, "127.0.0.2")
	listenAlso(t, srv, "127.0.0.3")
	_, port, _ := net.SplitHostPort(srv.Addr)
	var r benchResult
	benchJSON(t, &r, "--server", srv.Addr, "--share", servertest.ShareName, "--multichannel",
		"--rw", "mixed", "--bs", "64k", "--size", "4m", "--iodepth", "4", "--runtime", "300ms")
	var addrs []string
	for _, c := range r.Channels {
		addrs = append(addrs, c.Addr)
		if c.Reads == 0 || c.Writes == 0 || c.ReadBytes == 0 || c.WriteBytes == 0 {
			t.Errorf("channel %s carried %+v", c.Addr, c)
		}
	}
	slices.Sort(addrs)
	want := []string{"127.0.0.1:" + port, "127.0.0.2:" + port, "127.0.0.3:" + port}
	if !slices.Equal(addrs, want) || r.Conns != 3 || !r.Multichannel || r.Mismatched != 0 || r.Verified == 0 {
		t.Errorf("channels %q (conns %d, multichannel %v, verified %d, bad %d), want %q",
			addrs, r.Conns, r.Multichannel, r.Verified, r.Mismatched, want)
	}
	// --conns 4 over the --server list: the first address gets two.
	benchJSON(t, &r, "--server", srv.Addr+",127.0.0.2:"+port, "--share", servertest.ShareName, "--multichannel",
		"--conns", "4", "--rw", "read", "--bs", "1m", "--size", "4m", "--runtime", "200ms")
	if len(r.Channels) != 4 || r.Channels[2].Addr != srv.Addr || r.Channels[3].Addr != "127.0.0.2:"+port {
		t.Errorf("channels %+v", r.Channels)
	}
	code, _, stderr := runMain([]string{"bench", "--server", srv.Addr, "--share", servertest.ShareName,
		"--user", servertest.Alice, "--multichannel", "--client", "go-smb2"}, nil)
	if code != ExitUsage || !strings.Contains(stderr, "--multichannel needs the native client") {
		t.Errorf("--multichannel --client go-smb2: exit %d, %s", code, stderr)
	}
}

// TestMultichannelPrinterGolden: a --multichannel result names its
// connections channels and lists what each carried.
func TestMultichannelPrinterGolden(t *testing.T) {
	f := benchFlags{server: "n1:445,n2:445,n3:445", share: "data", user: "alice", rw: "mixed", mix: 75,
		bs: "1m", size: "256m", conns: 3, iodepth: 2, runtime: 10 * time.Second, file: "smbctl-bench.dat",
		seed: 1, multichannel: true}
	j, err := f.job(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	res := newBenchResult(j, fixedStats())
	for i, addr := range []string{"n1:445", "n2:445", "n3:445"} {
		res.Channels = append(res.Channels, channelResult{Addr: addr, Reads: int64(1000 + i), Writes: int64(300 + i),
			ReadBytes: int64(1000+i) << 20, WriteBytes: int64(300+i) << 20})
	}
	for _, format := range []string{"table", "json"} {
		var b bytes.Buffer
		p, _ := newPrinter(&b, format)
		if err := p.print(res); err != nil {
			t.Fatal(err)
		}
		golden(t, "bench-multichannel."+format+".golden", b.String())
	}
}
