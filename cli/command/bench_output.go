package command

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/smbcluster/smbcluster/cli/loadgen"
)

// benchResult is bench's output; its JSON field names are stable.
type benchResult struct {
	Server    string  `json:"server"`
	Share     string  `json:"share"`
	File      string  `json:"file"`
	RW        string  `json:"rw"`
	RWMixRead int     `json:"rwmixread"`
	BlockSize int     `json:"bs"`
	Conns     int     `json:"conns"`
	IODepth   int     `json:"iodepth"`
	Size      int64   `json:"size"`
	WarmupS   float64 `json:"warmup_s"`
	RuntimeS  float64 `json:"runtime_s"`
	Dialect   string  `json:"dialect"`
	Sign      bool    `json:"sign"`
	Encrypt   bool    `json:"encrypt"`
	Client    string  `json:"client"`
	// Multichannel: the connections are channels of one session.
	Multichannel bool    `json:"multichannel,omitempty"`
	Total        opStats `json:"total"`
	Read         opStats `json:"read"`
	Write        opStats `json:"write"`
	Moved        int64   `json:"moved_bytes"` // read+written, warmup included
	Verified     int64   `json:"verified_blocks"`
	Mismatched   int64   `json:"mismatched_blocks"`
	ClientCPU    float64 `json:"client_cpu_s"` // smbctl's own CPU, layout and warmup included
	// Channels are what each channel of the session carried with
	// --multichannel, layout and warmup included.
	Channels []channelResult `json:"channels,omitempty"`
}

// channelResult is one channel's share of a --multichannel run.
type channelResult struct {
	Addr       string `json:"addr"`
	Reads      int64  `json:"reads"`
	Writes     int64  `json:"writes"`
	ReadBytes  int64  `json:"read_bytes"`
	WriteBytes int64  `json:"write_bytes"`
}

// tables adds the channels to the table of a --multichannel run.
func (r benchResult) tables() []table {
	ts := []table{r.table()}
	if len(r.Channels) == 0 {
		return ts
	}
	ct := table{header: []string{"CHANNEL", "ADDRESS", "READS", "READ MiB", "WRITES", "WRITE MiB", "SHARE"}}
	var total int64
	for _, c := range r.Channels {
		total += c.ReadBytes + c.WriteBytes
	}
	for i, c := range r.Channels {
		share := "-"
		if total > 0 {
			share = strconv.FormatFloat(100*float64(c.ReadBytes+c.WriteBytes)/float64(total), 'f', 1, 64) + "%"
		}
		ct.rows = append(ct.rows, []string{strconv.Itoa(i + 1), c.Addr, strconv.FormatInt(c.Reads, 10),
			strconv.FormatFloat(float64(c.ReadBytes)/(1<<20), 'f', 1, 64), strconv.FormatInt(c.Writes, 10),
			strconv.FormatFloat(float64(c.WriteBytes)/(1<<20), 'f', 1, 64), share})
	}
	return append(ts, ct)
}

// opStats are one direction's numbers (or both, for total).
type opStats struct {
	Ops     int64     `json:"ops"`
	Bytes   int64     `json:"bytes"`
	MiBps   float64   `json:"mib_s"`
	IOPS    float64   `json:"iops"`
	Latency latencyUS `json:"lat_us"`
}

// latencyUS are latency statistics in microseconds.
type latencyUS struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9"`
	Max  float64 `json:"max"`
}

func newBenchResult(j *benchJob, st *loadgen.Stats) benchResult {
	c, f := j.cfg, j.flags
	dialect := f.dialect
	if dialect == "" {
		dialect = "auto"
	}
	secs := st.Elapsed.Seconds()
	return benchResult{
		Server: strings.Join(j.smb.Addrs, ","), Share: f.share, File: f.file, RW: c.Workload.String(),
		RWMixRead: c.ReadPercent, BlockSize: c.BlockSize, Conns: c.Conns, IODepth: c.IODepth,
		Size: c.Size, WarmupS: c.Warmup.Seconds(), RuntimeS: c.Runtime.Seconds(),
		Dialect: dialect, Sign: f.sign, Encrypt: f.encrypt, Client: f.clientName(), Multichannel: f.multichannel,
		Total: newOpStats(st.ReadOps+st.WriteOps, st.ReadBytes+st.WriteBytes, secs, &st.Latency),
		Read:  newOpStats(st.ReadOps, st.ReadBytes, secs, &st.ReadLat),
		Write: newOpStats(st.WriteOps, st.WriteBytes, secs, &st.WriteLat),
		Moved: st.Moved, Verified: st.Verified, Mismatched: st.Mismatches,
	}
}

func newOpStats(ops, bytes int64, secs float64, h *loadgen.Histogram) opStats {
	us := func(ns uint64) float64 { return round3(float64(ns) / 1e3) }
	s := opStats{Ops: ops, Bytes: bytes}
	if secs > 0 {
		s.MiBps = round3(float64(bytes) / (1 << 20) / secs)
		s.IOPS = round3(float64(ops) / secs)
	}
	s.Latency = latencyUS{Mean: round3(h.Mean() / 1e3), P50: us(h.Quantile(0.5)),
		P99: us(h.Quantile(0.99)), P999: us(h.Quantile(0.999)), Max: us(h.Max())}
	return s
}

func round3(v float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', 3, 64), 64)
	return r
}

func (r benchResult) table() table {
	t := table{
		title: fmt.Sprintf("%s //%s/%s/%s bs=%s %s=%d iodepth=%d size=%s runtime=%gs dialect=%s sign=%t encrypt=%t client=%s",
			r.RW, r.Server, r.Share, r.File, fmtSize(int64(r.BlockSize)), r.connsName(), r.Conns, r.IODepth,
			fmtSize(r.Size), r.RuntimeS, r.Dialect, r.Sign, r.Encrypt, r.Client),
		header: []string{"OP", "MiB/s", "IOPS", "MEAN", "P50", "P99", "P99.9", "MAX", "VERIFIED", "BAD"},
	}
	row := func(name string, s opStats, verified, bad string) []string {
		l := s.Latency
		return []string{name, strconv.FormatFloat(s.MiBps, 'f', 1, 64), strconv.FormatFloat(s.IOPS, 'f', 0, 64),
			fmtUS(l.Mean), fmtUS(l.P50), fmtUS(l.P99), fmtUS(l.P999), fmtUS(l.Max), verified, bad}
	}
	if r.Read.Ops > 0 {
		t.rows = append(t.rows, row("read", r.Read, strconv.FormatInt(r.Verified, 10), strconv.FormatInt(r.Mismatched, 10)))
	}
	if r.Write.Ops > 0 {
		t.rows = append(t.rows, row("write", r.Write, "-", "-"))
	}
	if r.Read.Ops > 0 && r.Write.Ops > 0 || len(t.rows) == 0 {
		t.rows = append(t.rows, row("total", r.Total, strconv.FormatInt(r.Verified, 10), strconv.FormatInt(r.Mismatched, 10)))
	}
	return t
}

// connsName is what the title calls the connections: channels of one
// session with --multichannel.
func (r benchResult) connsName() string {
	if r.Multichannel {
		return "channels"
	}
	return "conns"
}

// fmtUS formats microseconds with a unit that keeps three digits.
func fmtUS(us float64) string {
	switch {
	case us >= 1e6:
		return strconv.FormatFloat(us/1e6, 'f', 2, 64) + "s"
	case us >= 1e3:
		return strconv.FormatFloat(us/1e3, 'f', 2, 64) + "ms"
	}
	return strconv.FormatFloat(us, 'f', 0, 64) + "µs"
}

// fmtSize formats a byte count with the largest exact binary suffix.
func fmtSize(n int64) string {
	for _, u := range []struct {
		s string
		v int64
	}{{"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10}} {
		if n >= u.v && n%u.v == 0 {
			return strconv.FormatInt(n/u.v, 10) + u.s
		}
	}
	return strconv.FormatInt(n, 10)
}

// progressLine draws a one-line progress bar on a terminal.
type progressLine struct {
	w         io.Writer
	lastBytes int64
	lastOps   int64
	last      time.Duration
}

func newProgressLine(w io.Writer) *progressLine { return &progressLine{w: w} }

func (p *progressLine) update(s loadgen.Progress) {
	dt := (s.Elapsed - p.last).Seconds()
	if dt <= 0 {
		return
	}
	mibs := float64(s.Bytes-p.lastBytes) / (1 << 20) / dt
	iops := float64(s.Ops-p.lastOps) / dt
	p.lastBytes, p.lastOps, p.last = s.Bytes, s.Ops, s.Elapsed
	const width = 30
	done := min(int(float64(width)*s.Elapsed.Seconds()/s.Total.Seconds()), width)
	bar := make([]byte, width)
	for i := range bar {
		bar[i] = ' '
		if i < done {
			bar[i] = '='
		}
	}
	phase := "run   "
	if s.Warmup {
		phase = "warmup"
	}
	fmt.Fprintf(p.w, "\r[%s] %s %5.1fs/%.0fs %9.1f MiB/s %9.0f IOPS\033[K",
		bar, phase, s.Elapsed.Seconds(), s.Total.Seconds(), mibs, iops)
}

// tcpResult is the loopback self-test's output.
type tcpResult struct {
	Streams  int     `json:"streams"`
	Seconds  float64 `json:"seconds"`
	Bytes    int64   `json:"bytes"`
	MiBps    float64 `json:"mib_s"`
	Loopback string  `json:"address"`
}

func (r tcpResult) table() table {
	return table{header: []string{"TCP STREAMS", "SECONDS", "MiB/s"}, rows: [][]string{{
		strconv.Itoa(r.Streams), strconv.FormatFloat(r.Seconds, 'f', 2, 64),
		strconv.FormatFloat(r.MiBps, 'f', 1, 64)}}}
}

// runTCPLoopback measures TCP over 127.0.0.1 with --conns streams for
// --runtime (hidden flag --tcp-loopback).
func runTCPLoopback(ctx context.Context, e *env, p *printer, f *benchFlags) int {
	if f.conns < 1 || f.conns > 256 || f.runtime <= 0 {
		return usageError(e, "bench", fmt.Errorf("--tcp-loopback needs 1..256 --conns and a positive --runtime"))
	}
	r, err := loadgen.TCPLoopback(ctx, f.conns, f.runtime)
	if err != nil {
		fmt.Fprintf(e.stderr, "smbctl bench: tcp loopback: %v\n", err)
		return ExitError
	}
	out := tcpResult{Streams: r.Streams, Seconds: round3(r.Elapsed.Seconds()), Bytes: r.Bytes,
		MiBps: round3(float64(r.Bytes) / (1 << 20) / r.Elapsed.Seconds()), Loopback: "127.0.0.1"}
	if err := p.print(out); err != nil {
		return ExitError
	}
	return ExitOK
}
