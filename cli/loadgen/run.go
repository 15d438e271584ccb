package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// File is one connection's handle on the benchmark file. ReadAt and WriteAt
// must be safe for concurrent use (IODepth goroutines share a File).
type File interface {
	io.ReaderAt
	io.WriterAt
	Size() (int64, error)
	Close() error
}

// Target opens the benchmark file over connection i (0 <= i < Conns).
type Target interface {
	Open(ctx context.Context, conn int) (File, error)
}

// ErrMismatch is returned (wrapped) when read data differ from the pattern.
var ErrMismatch = errors.New("data verification failed")

// Run opens cfg.Conns connections, prepares the file and runs the workload.
// Stats are returned even when data mismatched (the error wraps ErrMismatch).
func Run(ctx context.Context, t Target, cfg Config) (*Stats, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	files := make([]File, 0, cfg.Conns)
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for i := range cfg.Conns {
		f, err := t.Open(ctx, i)
		if err != nil {
			return nil, fmt.Errorf("connection %d: %w", i+1, err)
		}
		files = append(files, f)
	}
	pat := NewPattern(cfg.Seed)
	if err := Prepare(ctx, files, pat, cfg.Size); err != nil {
		return nil, err
	}
	st, err := measure(ctx, files, pat, &cfg)
	if err == nil && st.Mismatches > 0 {
		err = fmt.Errorf("%w: %d of %d blocks read differ from the pattern (first at offset %d)",
			ErrMismatch, st.Mismatches, st.Verified, st.FirstBad)
	}
	return st, err
}

// worker is one I/O goroutine's state, owned by that goroutine except for
// the two atomics the progress reporter reads.
type worker struct {
	f      File
	cursor *atomic.Int64 // the connection's next sequential offset
	rng    *rand.Rand
	buf    []byte
	rd, wr Histogram
	st     Stats
	ops    atomic.Int64
	bytes  atomic.Int64
	_      [64]byte // keep neighbours' atomics off this cache line
}

// measure runs the workers through warmup and runtime.
func measure(ctx context.Context, files []File, pat *Pattern, cfg *Config) (*Stats, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	workers := make([]*worker, 0, len(files)*cfg.IODepth)
	for ci, f := range files {
		cur := new(atomic.Int64)
		cur.Store(int64(ci) * (cfg.Size / int64(len(files))) / int64(cfg.BlockSize) * int64(cfg.BlockSize))
		for d := range cfg.IODepth {
			workers = append(workers, &worker{f: f, cursor: cur, buf: make([]byte, cfg.BlockSize),
				rng: rand.New(rand.NewPCG(cfg.Seed, uint64(ci)<<32|uint64(d)))})
		}
	}
	start := time.Now()
	warmEnd := start.Add(cfg.Warmup)
	end := warmEnd.Add(cfg.Runtime)
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() {
			if err := w.loop(ctx, pat, cfg, warmEnd, end); err != nil {
				cancel(err)
			}
		})
	}
	stopProgress := reportProgress(cfg, workers, start)
	wg.Wait()
	stopProgress()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	st := &Stats{Elapsed: end.Sub(warmEnd), FirstBad: -1}
	for _, w := range workers {
		st.Moved += w.bytes.Load()
		st.add(&w.st)
		st.ReadLat.Merge(&w.rd)
		st.WriteLat.Merge(&w.wr)
	}
	st.Latency.Merge(&st.ReadLat)
	st.Latency.Merge(&st.WriteLat)
	return st, nil
}

func (s *Stats) add(o *Stats) {
	s.ReadOps += o.ReadOps
	s.WriteOps += o.WriteOps
	s.ReadBytes += o.ReadBytes
	s.WriteBytes += o.WriteBytes
	s.Verified += o.Verified
	s.Mismatches += o.Mismatches
	if o.Mismatches > 0 && (s.FirstBad < 0 || o.FirstBad < s.FirstBad) {
		s.FirstBad = o.FirstBad
	}
}

// loop issues I/O until end; operations that start before warmEnd or finish
// after end are not measured.
func (w *worker) loop(ctx context.Context, pat *Pattern, cfg *Config, warmEnd, end time.Time) error {
	bs := int64(cfg.BlockSize)
	blocks := cfg.Size / bs
	readPct := cfg.Workload.readPercent(cfg.ReadPercent)
	random := cfg.Workload.random()
	w.st.FirstBad = -1
	for ctx.Err() == nil {
		var off int64
		if random {
			off = w.rng.Int64N(blocks) * bs
		} else {
			off = (w.cursor.Add(bs) - bs) % (blocks * bs)
		}
		read := readPct == 100 || (readPct > 0 && w.rng.IntN(100) < readPct)
		if !read {
			pat.Fill(w.buf, off)
		}
		t0 := time.Now()
		if t0.After(end) {
			return nil
		}
		var n int
		var err error
		if read {
			n, err = w.f.ReadAt(w.buf, off)
			if err == io.EOF {
				err = nil
			}
		} else {
			n, err = w.f.WriteAt(w.buf, off)
		}
		t1 := time.Now()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("%s at offset %d: %w", opName(read), off, err)
		}
		if read {
			w.check(pat, n, off)
		} else if n != len(w.buf) {
			return fmt.Errorf("short write at offset %d: %d of %d bytes", off, n, len(w.buf))
		}
		w.ops.Add(1)
		w.bytes.Add(int64(n))
		if t0.Before(warmEnd) || t1.After(end) {
			continue
		}
		w.record(read, n, uint64(t1.Sub(t0)))
	}
	return nil
}

// check verifies a block read; a short read counts as a mismatch.
func (w *worker) check(pat *Pattern, n int, off int64) {
	w.st.Verified++
	if n == len(w.buf) && pat.Check(w.buf, off) == 0 {
		return
	}
	w.st.Mismatches++
	if w.st.FirstBad < 0 || off < w.st.FirstBad {
		w.st.FirstBad = off
	}
}

func (w *worker) record(read bool, n int, ns uint64) {
	if read {
		w.st.ReadOps++
		w.st.ReadBytes += int64(n)
		w.rd.Record(ns)
	} else {
		w.st.WriteOps++
		w.st.WriteBytes += int64(n)
		w.wr.Record(ns)
	}
}

func opName(read bool) string {
	if read {
		return "read"
	}
	return "write"
}
