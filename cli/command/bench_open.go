package command

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/smbcluster/smbcluster/cli/loadgen"
	"github.com/smbcluster/smbcluster/cli/smbc"
)

// openReadSize is what --open-read reads after each open.
const openReadSize = 4096

// openJob validates the flags of --rw open and --rw leasebreak.
func (f *benchFlags) openJob() (*benchJob, error) {
	dialect, err := f.checkConn()
	if err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(f.file, ".dat")
	j := &benchJob{flags: f, smb: f.smbOptions(dialect, f.iodepth)}
	if f.rw == "leasebreak" {
		if f.clientName() != "native" {
			return nil, errors.New("--rw leasebreak needs --client native")
		}
		if dialect != 0 && dialect < 0x210 {
			return nil, fmt.Errorf("--rw leasebreak needs SMB 2.1 or later, not dialect %s", f.dialect)
		}
		if f.breaks < 1 || f.breaks > 1<<20 {
			return nil, fmt.Errorf("--breaks %d out of range 1..%d", f.breaks, 1<<20)
		}
		j.probe = &loadgen.BreakConfig{Count: f.breaks, Name: base + ".lease"}
		return j, nil
	}
	cfg := loadgen.OpenConfig{Conns: f.conns, IODepth: f.iodepth, Files: f.files, Hot: f.hotFile,
		Dir: base + ".open", Keep: f.keep, Warmup: f.warmup, Runtime: f.runtime, Seed: f.seed}
	if f.openRead {
		cfg.ReadSize = openReadSize
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	j.open = &cfg
	return j, nil
}

// runOpen runs the open/close workload and prints the result.
func (j *benchJob) runOpen(ctx context.Context, e *env, p *printer) int {
	var t loadgen.OpenTarget = loadgen.NewNativeOpenTarget(j.smb)
	if j.flags.clientName() == "go-smb2" {
		t = loadgen.NewSMBOpenTarget(j.smb)
	}
	cpu0 := cpuSeconds()
	st, err := loadgen.RunOpen(ctx, t, *j.open)
	clientCPU := cpuSeconds() - cpu0
	if st == nil {
		fmt.Fprintf(e.stderr, "smbctl bench: %v\n", err)
		return ExitError
	}
	res := newOpenResult(j, st)
	res.ClientCPU = round3(clientCPU)
	if perr := p.print(res); perr != nil {
		return ExitError
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "smbctl bench: %v\n", err)
		if errors.Is(err, loadgen.ErrMismatch) {
			return ExitVerify
		}
		return ExitError
	}
	return ExitOK
}

// openResult is the open/close workload's output; its JSON field names
// are stable. One operation is an open, the optional read and a close.
type openResult struct {
	Server     string    `json:"server"`
	Share      string    `json:"share"`
	Dir        string    `json:"dir"`
	RW         string    `json:"rw"`
	Variant    string    `json:"variant"` // "files" or "hot"
	Files      int       `json:"files"`   // distinct files opened
	ReadSize   int       `json:"read_bytes_per_open"`
	Conns      int       `json:"conns"`
	IODepth    int       `json:"iodepth"`
	WarmupS    float64   `json:"warmup_s"`
	RuntimeS   float64   `json:"runtime_s"`
	Dialect    string    `json:"dialect"`
	Sign       bool      `json:"sign"`
	Encrypt    bool      `json:"encrypt"`
	Client     string    `json:"client"`
	Ops        int64     `json:"ops"`   // open(+read)+close sequences measured
	Rate       float64   `json:"ops_s"` // of them per second
	Latency    latencyUS `json:"lat_us"`
	Total      int64     `json:"total_ops"` // warmup included
	Verified   int64     `json:"verified_reads"`
	Mismatched int64     `json:"mismatched_reads"`
	ClientCPU  float64   `json:"client_cpu_s"`
}

func newOpenResult(j *benchJob, st *loadgen.OpenStats) openResult {
	c, f := j.open, j.flags
	variant := "files"
	if c.Hot {
		variant = "hot"
	}
	ops := newOpStats(st.Ops, st.ReadBytes, st.Elapsed.Seconds(), &st.Latency)
	return openResult{
		Server: strings.Join(j.smb.Addrs, ","), Share: f.share, Dir: c.Dir, RW: "open", Variant: variant,
		Files: st.Files, ReadSize: c.ReadSize, Conns: c.Conns, IODepth: c.IODepth,
		WarmupS: c.Warmup.Seconds(), RuntimeS: c.Runtime.Seconds(), Dialect: dialectName(f.dialect),
		Sign: f.sign, Encrypt: f.encrypt, Client: f.clientName(), Ops: st.Ops, Rate: ops.IOPS,
		Latency: ops.Latency, Total: st.Total, Verified: st.Verified, Mismatched: st.Mismatches,
	}
}

func dialectName(d string) string {
	if d == "" {
		return "auto"
	}
	return d
}

func (r openResult) table() table {
	op := "open+close"
	if r.ReadSize > 0 {
		op = "open+read+close"
	}
	t := table{
		title: fmt.Sprintf("open %s //%s/%s/%s files=%d conns=%d iodepth=%d runtime=%gs dialect=%s sign=%t encrypt=%t client=%s",
			r.Variant, r.Server, r.Share, r.Dir, r.Files, r.Conns, r.IODepth, r.RuntimeS, r.Dialect, r.Sign, r.Encrypt, r.Client),
		header: []string{"OP", "OPS/S", "MEAN", "P50", "P99", "P99.9", "MAX", "VERIFIED", "BAD"},
	}
	l := r.Latency
	verified, bad := "-", "-"
	if r.ReadSize > 0 {
		verified, bad = strconv.FormatInt(r.Verified, 10), strconv.FormatInt(r.Mismatched, 10)
	}
	t.rows = [][]string{{op, strconv.FormatFloat(r.Rate, 'f', 0, 64), fmtUS(l.Mean), fmtUS(l.P50),
		fmtUS(l.P99), fmtUS(l.P999), fmtUS(l.Max), verified, bad}}
	return t
}

// runProbe runs the lease-break probe and prints the result.
func (j *benchJob) runProbe(ctx context.Context, e *env, p *printer) int {
	o := j.smb
	var conns [2]*smbc.Conn
	for i := range conns {
		addr := o.AddrOf(i)
		c, err := smbc.Dial(ctx, smbc.Options{Addr: addr, Share: o.Share, User: o.User, Password: o.Password,
			Domain: o.Domain, Dialect: o.Dialect, Sign: o.Sign, Encrypt: o.Encrypt, Credits: o.Credits})
		if err != nil {
			fmt.Fprintf(e.stderr, "smbctl bench: %s: %v\n", addr, err)
			return ExitError
		}
		defer c.Close()
		conns[i] = c
	}
	st, err := loadgen.ProbeBreaks(ctx, conns[0], conns[1], *j.probe)
	if err != nil {
		fmt.Fprintf(e.stderr, "smbctl bench: lease-break probe: %v\n", err)
		return ExitError
	}
	res := newBreakResult(j, st, conns[0].Dialect())
	if perr := p.print(res); perr != nil {
		return ExitError
	}
	if st.Missing > 0 {
		fmt.Fprintf(e.stderr, "smbctl bench: %d of %d conflicting opens completed with no lease break\n", st.Missing, st.Tries)
	}
	return ExitOK
}

// breakResult is the lease-break probe's output; its JSON field names are
// stable. Latencies are from the conflicting CREATE being sent.
type breakResult struct {
	Holder   string    `json:"holder_server"`
	Other    string    `json:"other_server"`
	Share    string    `json:"share"`
	File     string    `json:"file"`
	Dialect  string    `json:"dialect"`
	Tries    int       `json:"tries"`
	Granted  string    `json:"granted"` // lease state the holder got
	Breaks   int       `json:"breaks"`  // waited + late
	Waited   int       `json:"waited"`  // the conflicting open waited for the break
	Late     int       `json:"late"`    // the break came after the open completed
	Missing  int       `json:"missing"` // no break at all
	BreakLat latencyUS `json:"break_lat_us"`
	OpenLat  latencyUS `json:"open_lat_us"`
}

func newBreakResult(j *benchJob, st *loadgen.BreakStats, dialect uint16) breakResult {
	lat := func(h *loadgen.Histogram) latencyUS { return newOpStats(0, 0, 0, h).Latency }
	return breakResult{
		Holder: j.smb.AddrOf(0), Other: j.smb.AddrOf(1), Share: j.flags.share, File: j.probe.Name,
		Dialect: fmt.Sprintf("%d.%d.%d", dialect>>8, dialect>>4&0xF, dialect&0xF), Tries: st.Tries,
		Granted: loadgen.LeaseString(st.Granted), Breaks: st.Waited + st.Late, Waited: st.Waited,
		Late: st.Late, Missing: st.Missing, BreakLat: lat(&st.BreakLat), OpenLat: lat(&st.OpenLat),
	}
}

func (r breakResult) table() table {
	t := table{
		title: fmt.Sprintf("leasebreak holder //%s other //%s share=%s file=%s dialect=%s granted=%s",
			r.Holder, r.Other, r.Share, r.File, r.Dialect, r.Granted),
		header: []string{"TRIES", "BREAKS", "WAITED", "LATE", "MISSING", "BREAK P50", "BREAK P99", "BREAK MAX", "OPEN P50", "OPEN P99"},
	}
	b := []string{"-", "-", "-"}
	if r.Breaks > 0 {
		b = []string{fmtUS(r.BreakLat.P50), fmtUS(r.BreakLat.P99), fmtUS(r.BreakLat.Max)}
	}
	t.rows = [][]string{{strconv.Itoa(r.Tries), strconv.Itoa(r.Breaks), strconv.Itoa(r.Waited), strconv.Itoa(r.Late),
		strconv.Itoa(r.Missing), b[0], b[1], b[2], fmtUS(r.OpenLat.P50), fmtUS(r.OpenLat.P99)}}
	return t
}
