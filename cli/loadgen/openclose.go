package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// OpenConn is one connection of an open/close run. Its methods must be
// safe for concurrent use (IODepth workers share a connection). Names are
// share-relative with backslashes.
type OpenConn interface {
	// OpenClose opens the existing file name for reading, reads
	// len(buf) bytes at offset 0 into buf unless buf is empty, and closes
	// it. It returns the bytes read.
	OpenClose(name string, buf []byte) (int, error)
	// Put creates or overwrites name with data.
	Put(name string, data []byte) error
	Mkdir(name string) error
	Remove(name string) error
	RemoveDir(name string) error
	Close() error
}

// OpenTarget dials connection i of an open/close run (0 <= i < Conns).
type OpenTarget interface {
	Dial(ctx context.Context, conn int) (OpenConn, error)
}

// OpenConfig describes an open/close run: every worker opens a file,
// optionally reads its first ReadSize bytes, and closes it, again and
// again; either each worker over its own Files files in turn or, with
// Hot, every worker the one file Dir\hot.
type OpenConfig struct {
	Conns    int           // connections, each its own SMB session
	IODepth  int           // workers per connection
	Files    int           // files per worker, without Hot
	Hot      bool          // every worker opens Dir\hot
	ReadSize int           // bytes read after each open; 0: none
	Dir      string        // directory in the share that holds the files
	Keep     bool          // leave the files and the directory
	Warmup   time.Duration // run but do not measure
	Runtime  time.Duration // measure
	Seed     uint64        // data pattern seed

	// Progress, if set, is called about twice a second from a separate
	// goroutine while the workers run.
	Progress func(Progress)
}

// Validate reports the first problem with c.
func (c *OpenConfig) Validate() error {
	switch {
	case c.Conns < 1 || c.Conns > 256:
		return fmt.Errorf("conns %d out of range 1..256", c.Conns)
	case c.IODepth < 1 || c.IODepth > 1024:
		return fmt.Errorf("iodepth %d out of range 1..1024", c.IODepth)
	case !c.Hot && (c.Files < 1 || c.Files > 1<<20):
		return fmt.Errorf("files %d out of range 1..%d", c.Files, 1<<20)
	case c.ReadSize < 0 || c.ReadSize > 8<<20:
		return fmt.Errorf("read size %d out of range 0..8m", c.ReadSize)
	case c.Dir == "":
		return errors.New("no directory for the files")
	case c.Runtime <= 0:
		return fmt.Errorf("runtime %v must be positive", c.Runtime)
	case c.Warmup < 0:
		return fmt.Errorf("warmup %v must not be negative", c.Warmup)
	}
	return nil
}

// OpenStats is the measured part of an open/close run.
type OpenStats struct {
	Elapsed    time.Duration // measured interval
	Ops        int64         // open+read+close sequences measured
	ReadBytes  int64         // bytes read by them
	Files      int           // distinct files the run opened
	Total      int64         // sequences completed, warmup included
	Verified   int64         // reads checked against the pattern, warmup included
	Mismatches int64
	Latency    Histogram // per open+read+close
}

// RunOpen dials cfg.Conns connections, creates the files (with ReadSize
// bytes of the pattern each), runs the workload and, unless cfg.Keep,
// removes the files. Stats are returned even when data mismatched (the
// error wraps ErrMismatch).
func RunOpen(ctx context.Context, t OpenTarget, cfg OpenConfig) (*OpenStats, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	conns := make([]OpenConn, 0, cfg.Conns)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range cfg.Conns {
		c, err := t.Dial(ctx, i)
		if err != nil {
			return nil, fmt.Errorf("connection %d: %w", i+1, err)
		}
		conns = append(conns, c)
	}
	workers := newOpenWorkers(conns, &cfg)
	pat := NewPattern(cfg.Seed)
	if err := layOut(ctx, conns[0], workers, pat, &cfg); err != nil {
		return nil, err
	}
	st, err := measureOpens(ctx, workers, pat, &cfg)
	if !cfg.Keep {
		if rerr := removeAll(conns[0], workers, &cfg); err == nil && rerr != nil {
			err = fmt.Errorf("removing the files: %w", rerr)
		}
	}
	if err == nil && st.Mismatches > 0 {
		err = fmt.Errorf("%w: %d of %d reads differ from the pattern", ErrMismatch, st.Mismatches, st.Verified)
	}
	return st, err
}

// openWorker is one worker's state, owned by its goroutine except for the
// atomics the progress reporter reads.
type openWorker struct {
	c     OpenConn
	names []string // the files it opens in turn
	buf   []byte
	lat   Histogram
	st    OpenStats
	ops   atomic.Int64
	bytes atomic.Int64
	_     [64]byte // keep neighbours' atomics off this cache line
}

func newOpenWorkers(conns []OpenConn, cfg *OpenConfig) []*openWorker {
	hot := []string{cfg.Dir + `\hot`}
	var ws []*openWorker
	for ci, c := range conns {
		for d := range cfg.IODepth {
			w := &openWorker{c: c, names: hot, buf: make([]byte, cfg.ReadSize)}
			if !cfg.Hot {
				w.names = make([]string, cfg.Files)
				for i := range w.names {
					w.names[i] = fmt.Sprintf(`%s\c%03d-w%03d-%06d`, cfg.Dir, ci, d, i)
				}
			}
			ws = append(ws, w)
		}
	}
	return ws
}

// layOut creates the directory and the files, each worker its own over its
// own connection (the hot file once).
func layOut(ctx context.Context, c0 OpenConn, ws []*openWorker, pat *Pattern, cfg *OpenConfig) error {
	if err := c0.Mkdir(cfg.Dir); err != nil {
		return fmt.Errorf("creating %s: %w", cfg.Dir, err)
	}
	data := make([]byte, cfg.ReadSize)
	pat.Fill(data, 0)
	if cfg.Hot {
		return c0.Put(ws[0].names[0], data)
	}
	errs := make([]error, len(ws))
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Go(func() {
			for _, n := range w.names {
				if ctx.Err() != nil {
					errs[i] = ctx.Err()
					return
				}
				if err := w.c.Put(n, data); err != nil {
					errs[i] = fmt.Errorf("creating %s: %w", n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// measureOpens runs the workers through warmup and runtime.
func measureOpens(ctx context.Context, ws []*openWorker, pat *Pattern, cfg *OpenConfig) (*OpenStats, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	start := time.Now()
	warmEnd := start.Add(cfg.Warmup)
	end := warmEnd.Add(cfg.Runtime)
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() {
			if err := w.loop(ctx, pat, warmEnd, end); err != nil {
				cancel(err)
			}
		})
	}
	stop := progressLoop(cfg.Progress, cfg.Warmup, cfg.Runtime, start, func() (ops, bytes int64) {
		for _, w := range ws {
			ops += w.ops.Load()
			bytes += w.bytes.Load()
		}
		return ops, bytes
	})
	wg.Wait()
	stop()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	st := &OpenStats{Elapsed: end.Sub(warmEnd), Files: 1}
	if !cfg.Hot {
		st.Files = len(ws) * cfg.Files
	}
	for _, w := range ws {
		st.Ops += w.st.Ops
		st.ReadBytes += w.st.ReadBytes
		st.Total += w.ops.Load()
		st.Verified += w.st.Verified
		st.Mismatches += w.st.Mismatches
		st.Latency.Merge(&w.lat)
	}
	return st, nil
}

// loop opens, reads and closes the worker's files in turn until end;
// sequences that start before warmEnd or finish after end are not
// measured.
func (w *openWorker) loop(ctx context.Context, pat *Pattern, warmEnd, end time.Time) error {
	for i := 0; ctx.Err() == nil; i++ {
		name := w.names[i%len(w.names)]
		t0 := time.Now()
		if t0.After(end) {
			return nil
		}
		n, err := w.c.OpenClose(name, w.buf)
		t1 := time.Now()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if len(w.buf) > 0 {
			w.st.Verified++
			if n != len(w.buf) || pat.Check(w.buf, 0) != 0 {
				w.st.Mismatches++
			}
		}
		w.ops.Add(1)
		w.bytes.Add(int64(n))
		if t0.Before(warmEnd) || t1.After(end) {
			continue
		}
		w.st.Ops++
		w.st.ReadBytes += int64(n)
		w.lat.Record(uint64(t1.Sub(t0)))
	}
	return nil
}

// removeAll deletes the files and the directory over one connection.
func removeAll(c OpenConn, ws []*openWorker, cfg *OpenConfig) error {
	seen := map[string]bool{}
	for _, w := range ws {
		for _, n := range w.names {
			if seen[n] {
				continue
			}
			seen[n] = true
			if err := c.Remove(n); err != nil {
				return err
			}
		}
	}
	return c.RemoveDir(cfg.Dir)
}

// readPrefix is OpenClose's read, for adapters: a short file is not an
// error, the count tells.
func readPrefix(r io.ReaderAt, buf []byte) (int, error) {
	if len(buf) == 0 {
		return 0, nil
	}
	n, err := r.ReadAt(buf, 0)
	if err == io.EOF {
		err = nil
	}
	return n, err
}
