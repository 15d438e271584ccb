package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/smbcluster/smbcluster/cli/loadgen"
)

const benchUsage = `Usage: smbctl bench --server HOST[:PORT][,HOST[:PORT]...] --share NAME --user USER [flags]

Run a fio-like workload against one file on an SMB share and report
throughput, IOPS and latency percentiles. Every connection is its own SMB
session; --iodepth requests are in flight on each. Reads are checked against
the deterministic pattern the file is laid out with (and that writes write);
any mismatch exits with code 3.

--rw open measures opening and closing files instead; --rw leasebreak
measures how long a conflicting open takes to break another client's lease.

Connection:
  --server ADDRS        server address (port 445 if omitted); several,
                        comma-separated, spread the connections: connection
                        i goes to server i mod n (the nodes of a cluster)
  --share NAME          share name
  --user USER           user name (DOMAIN\USER or USER)
  --password PASS       password (default $SMBCTL_PASSWORD)
  --sign                require message signing
  --encrypt             encrypt every request (needs dialect 3.x); without
                        it requests are encrypted when the server or the
                        share demands it. The go-smb2 client cannot ask for
                        encryption: point it at a share that demands it
  --dialect D           3.1.1, 3.0.2, 3.0, 2.1 or 2.0.2 (default: negotiate)
  --client NAME         native (default): smbctl's own pipelined client, one
                        copy per byte read and none per byte written;
                        go-smb2: github.com/cloudsoda/go-smb2, a client
                        written elsewhere, for a second opinion
  --multichannel        one session with several channels (native client,
                        SMB 3.x): log on at the first server, bind a channel
                        per connection — to the servers of --server when it
                        names several, else to the addresses the first
                        server's interface list offers (one per interface),
                        connection i to address i mod n — and spread every
                        request of the one open over the channels, the one
                        with the fewest in flight first. --conns defaults to
                        one channel per address. Reports what each channel
                        carried; a channel whose connection dies is left
                        out and its requests go to the others

Workload:
  --rw MODE             read, write, randread, randwrite, mixed (random
                        reads and writes), open or leasebreak (default read)
  --rwmixread PCT       percentage of reads in mixed (default 50)
  --bs SIZE             block size, a multiple of 512: 4k, 64k, 1m … (default 64k)
  --conns N             connections (default 1)
  --iodepth N           requests in flight per connection (default 16)
  --size SIZE           file size (default 256m)
  --runtime DUR         measured time (default 10s)
  --warmup DUR          unmeasured time before it (default 2s)
  --file NAME           file in the share (default smbctl-bench.dat); laid
                        out with the pattern unless it already holds it
  --keep                keep the file afterwards

Open/close workload (--rw open): every worker (--conns × --iodepth) opens
a file (CREATE of an existing file, read access, no lease), optionally
reads it, and closes it, again and again; one operation is that sequence.
The files are in the directory --file minus ".dat" plus ".open".
  --files N             files per worker, opened in turn (default 100)
  --hot-file            every worker opens the same one file instead
  --open-read           read the first 4 KiB after each open (checked)

Lease-break probe (--rw leasebreak, native client, SMB 2.1+): a holder
connection on the first server opens a file with a Read-Write-Handle lease;
a second connection, on the second server when there are two, opens it for
writing; the time from that CREATE being sent to the holder receiving the
lease break notification is measured, the holder acknowledges at once.
Repeated --breaks times. A conflicting open that completes with no break
arriving within 50 ms counts as missing: the servers did not keep the
lease coherent.
  --breaks N            attempts (default 100)

Output:
  -o FORMAT             table or json (default table)
  --no-progress         no progress line on stderr (shown only on a terminal)

Exit codes: 0 ok, 1 runtime error, 2 usage error, 3 data verification failed.
`

// benchFlags are bench's command line.
type benchFlags struct {
	server, share, user, password, domain string
	rw, bs, size, dialect, file, output   string
	client                                string
	mix, conns, iodepth                   int
	runtime, warmup                       time.Duration
	sign, encrypt, keep, noProgress       bool
	seed                                  uint64
	tcpLoopback                           bool
	files, breaks                         int
	hotFile, openRead                     bool
	multichannel, connsSet                bool
}

func (f *benchFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.server, "server", "", "")
	fs.StringVar(&f.share, "share", "", "")
	fs.StringVar(&f.user, "user", "", "")
	fs.StringVar(&f.password, "password", "", "")
	fs.StringVar(&f.rw, "rw", "read", "")
	fs.IntVar(&f.mix, "rwmixread", 50, "")
	fs.StringVar(&f.bs, "bs", "64k", "")
	fs.IntVar(&f.conns, "conns", 1, "")
	fs.IntVar(&f.iodepth, "iodepth", 16, "")
	fs.StringVar(&f.size, "size", "256m", "")
	fs.DurationVar(&f.runtime, "runtime", 10*time.Second, "")
	fs.DurationVar(&f.warmup, "warmup", 2*time.Second, "")
	fs.BoolVar(&f.sign, "sign", false, "")
	fs.BoolVar(&f.encrypt, "encrypt", false, "")
	fs.StringVar(&f.dialect, "dialect", "", "")
	fs.StringVar(&f.client, "client", "native", "")
	fs.StringVar(&f.file, "file", "smbctl-bench.dat", "")
	fs.BoolVar(&f.keep, "keep", false, "")
	fs.BoolVar(&f.multichannel, "multichannel", false, "")
	fs.IntVar(&f.files, "files", 100, "")
	fs.BoolVar(&f.hotFile, "hot-file", false, "")
	fs.BoolVar(&f.openRead, "open-read", false, "")
	fs.IntVar(&f.breaks, "breaks", 100, "")
	fs.StringVar(&f.output, "o", "table", "")
	fs.BoolVar(&f.noProgress, "no-progress", false, "")
	// Hidden: the pattern seed, and the loopback TCP self-test that
	// make bench reports as the machine's ceiling.
	fs.Uint64Var(&f.seed, "seed", 1, "")
	fs.BoolVar(&f.tcpLoopback, "tcp-loopback", false, "")
}

// benchJob is a validated command line: an I/O workload (cfg), or an
// open/close workload (open) or a lease-break probe (probe) when set.
type benchJob struct {
	cfg   loadgen.Config
	smb   loadgen.SMBOptions
	flags *benchFlags
	open  *loadgen.OpenConfig
	probe *loadgen.BreakConfig
}

// runBench implements smbctl bench.
func runBench(ctx context.Context, e *env, args []string) int {
	var f benchFlags
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	f.register(fs)
	if code, ok := parseFlags(e, fs, benchUsage, args); !ok {
		return code
	}
	fs.Visit(func(fl *flag.Flag) { f.connsSet = f.connsSet || fl.Name == "conns" })
	p, err := newPrinter(e.stdout, f.output)
	if err != nil {
		return usageError(e, "bench", err)
	}
	if f.tcpLoopback {
		return runTCPLoopback(ctx, e, p, &f)
	}
	job, err := f.job(e.getenv)
	if err != nil {
		return usageError(e, "bench", err)
	}
	if !f.noProgress && e.stderrTTY {
		job.cfg.Progress = newProgressLine(e.stderr).update
		defer fmt.Fprint(e.stderr, "\r\033[K")
	}
	return job.run(ctx, e, p)
}

// clientName is --client, native when unset.
func (f *benchFlags) clientName() string {
	if f.client == "" {
		return "native"
	}
	return f.client
}

// job validates the flags and turns them into a run description.
func (f *benchFlags) job(getenv func(string) string) (*benchJob, error) {
	if f.server == "" || f.share == "" || f.user == "" {
		return nil, errors.New("--server, --share and --user are required")
	}
	if f.password == "" {
		f.password = getenv("SMBCTL_PASSWORD")
	}
	if f.rw == "open" || f.rw == "leasebreak" {
		return f.openJob()
	}
	wl, err := loadgen.ParseWorkload(f.rw)
	if err != nil {
		return nil, fmt.Errorf("--rw: %w", err)
	}
	bs, err := parseSize(f.bs)
	if err != nil || bs > 8<<20 {
		return nil, fmt.Errorf("--bs %q: want a size up to 8m such as 4k, 64k or 1m", f.bs)
	}
	size, err := parseSize(f.size)
	if err != nil {
		return nil, fmt.Errorf("--size %q: want a size such as 256m or 1g", f.size)
	}
	dialect, err := f.checkConn()
	if err != nil {
		return nil, err
	}
	if size%bs != 0 { // round down so every block lies inside the file
		size -= size % bs
	}
	cfg := loadgen.Config{Workload: wl, ReadPercent: f.mix, BlockSize: int(bs), Conns: f.conns,
		IODepth: f.iodepth, Size: size, Warmup: f.warmup, Runtime: f.runtime, Seed: f.seed}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	perOp := (int(bs) + 65535) / 65536
	return &benchJob{cfg: cfg, flags: f, smb: f.smbOptions(dialect, f.iodepth*perOp)}, nil
}

// checkConn validates the connection flags and returns the dialect.
func (f *benchFlags) checkConn() (uint16, error) {
	dialect, err := loadgen.ParseDialect(f.dialect)
	if err != nil {
		return 0, fmt.Errorf("--dialect: %w", err)
	}
	if c := f.clientName(); c != "native" && c != "go-smb2" {
		return 0, fmt.Errorf("--client %q: want native or go-smb2", f.client)
	}
	if f.encrypt && dialect != 0 && dialect < 0x300 {
		return 0, fmt.Errorf("--encrypt needs SMB 3.x, not dialect %s", f.dialect)
	}
	if f.multichannel && (f.clientName() != "native" || dialect != 0 && dialect < 0x300) {
		return 0, errors.New("--multichannel needs the native client and SMB 3.x")
	}
	for _, a := range strings.Split(f.server, ",") {
		if strings.TrimSpace(a) == "" {
			return 0, fmt.Errorf("--server %q: an empty address", f.server)
		}
	}
	return dialect, nil
}

// smbOptions are the connection flags as loadgen takes them; the client
// asks for credits for inflight credits' worth of requests and a margin.
func (f *benchFlags) smbOptions(dialect uint16, inflight int) loadgen.SMBOptions {
	domain, user, ok := strings.Cut(f.user, `\`)
	if !ok {
		domain, user = "", f.user
	}
	var addrs []string
	for _, a := range strings.Split(f.server, ",") {
		addrs = append(addrs, loadgen.DefaultPort(strings.TrimSpace(a)))
	}
	return loadgen.SMBOptions{Addr: addrs[0], Addrs: addrs, Share: f.share, User: user, Domain: domain,
		Password: f.password, File: f.file, Sign: f.sign, Encrypt: f.encrypt, Dialect: dialect,
		Credits: uint16(min(max(inflight+32, 128), 8192))}
}

// run connects, runs the workload and prints the result.
func (j *benchJob) run(ctx context.Context, e *env, p *printer) int {
	switch {
	case j.open != nil:
		return j.runOpen(ctx, e, p)
	case j.probe != nil:
		return j.runProbe(ctx, e, p)
	}
	if j.flags.multichannel {
		return j.runMultichannel(ctx, e, p)
	}
	var t interface {
		loadgen.Target
		Remove() error
		Close() error
	} = loadgen.NewNativeTarget(j.smb)
	if j.flags.clientName() == "go-smb2" {
		t = loadgen.NewSMBTarget(j.smb)
	}
	return j.runTarget(ctx, e, p, t, nil)
}

// runTarget runs the workload against t and prints the result; channels,
// if set, adds what each channel carried.
func (j *benchJob) runTarget(ctx context.Context, e *env, p *printer, t benchTarget, channels func(*benchResult)) int {
	cpu0 := cpuSeconds()
	st, err := loadgen.Run(ctx, t, j.cfg)
	clientCPU := cpuSeconds() - cpu0
	if !j.flags.keep && st != nil {
		if rerr := t.Remove(); rerr != nil {
			fmt.Fprintf(e.stderr, "smbctl bench: removing %s: %v\n", j.smb.File, rerr)
		}
	}
	t.Close()
	if st == nil {
		fmt.Fprintf(e.stderr, "smbctl bench: %v\n", err)
		return ExitError
	}
	res := newBenchResult(j, st)
	res.ClientCPU = round3(clientCPU)
	if channels != nil {
		channels(&res)
	}
	if perr := p.print(res); perr != nil {
		return ExitError
	}
	if errors.Is(err, loadgen.ErrMismatch) {
		fmt.Fprintf(e.stderr, "smbctl bench: %v\n", err)
		return ExitVerify
	}
	return ExitOK
}

// benchTarget is what an I/O workload runs against.
type benchTarget interface {
	loadgen.Target
	Remove() error
	Close() error
}

// runMultichannel runs the workload over the channels of one session
// (--multichannel).
func (j *benchJob) runMultichannel(ctx context.Context, e *env, p *printer) int {
	t := loadgen.NewMultichannelTarget(j.smb)
	addrs, err := t.Connect(ctx)
	if err != nil {
		fmt.Fprintf(e.stderr, "smbctl bench: %v\n", err)
		return ExitError
	}
	if !j.flags.connsSet {
		j.cfg.Conns = len(addrs)
	}
	code := j.runTarget(ctx, e, p, t, func(r *benchResult) {
		r.Conns = j.cfg.Conns
		for _, c := range t.Channels() {
			r.Channels = append(r.Channels, channelResult{Addr: c.Addr, Reads: c.Reads, Writes: c.Writes,
				ReadBytes: c.ReadBytes, WriteBytes: c.WriteBytes})
		}
	})
	for addr, err := range t.Lost() {
		fmt.Fprintf(e.stderr, "smbctl bench: lost the channel to %s: %v\n", addr, err)
	}
	return code
}

// cpuSeconds returns the user+system CPU time smbctl has used, so results
// show when the client, not the server, was the bottleneck.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// parseSize parses a byte count with an optional binary suffix: 512, 4k,
// 64K, 1m, 1MiB, 2g.
func parseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "b"), "i")
	mult := int64(1)
	if n := len(t); n > 0 {
		if i := strings.IndexByte("kmgt", t[n-1]); i >= 0 {
			mult = 1 << (10 * (i + 1))
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v <= 0 || v > (1<<50)/mult {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return v * mult, nil
}
