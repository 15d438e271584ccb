package loadgen

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// fillBlock is the I/O size used to lay the file out.
const fillBlock = 1 << 20

// samples is how many blocks Prepare reads to decide whether a file already
// holds the pattern.
const samples = 16

// Prepare makes sure the first size bytes of the file hold the pattern: if
// the file is at least size long and sampled blocks match, it is reused (a
// file left by --keep, or rewritten by write workloads, which write the same
// pattern); otherwise it is written in full, over all connections.
func Prepare(ctx context.Context, files []File, pat *Pattern, size int64) error {
	ok, err := hasPattern(files[0], pat, size)
	if err != nil || ok {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	chunks := (size + fillBlock - 1) / fillBlock
	next := make(chan int64)
	var wg sync.WaitGroup
	for i := range len(files) * 4 {
		f := files[i%len(files)]
		wg.Go(func() {
			buf := make([]byte, fillBlock)
			for off := range next {
				b := buf[:min(fillBlock, size-off)]
				pat.Fill(b, off)
				if _, err := f.WriteAt(b, off); err != nil {
					cancel(fmt.Errorf("laying out the file at offset %d: %w", off, err))
				}
			}
		})
	}
	for c := int64(0); c < chunks && ctx.Err() == nil; c++ {
		select {
		case next <- c * fillBlock:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	return context.Cause(ctx)
}

// hasPattern reads a few blocks spread over the file and checks them.
func hasPattern(f File, pat *Pattern, size int64) (bool, error) {
	n, err := f.Size()
	if err != nil || n < size {
		return false, err
	}
	blk := int64(64 << 10)
	if size < blk {
		blk = size / SectorSize * SectorSize
	}
	if blk == 0 {
		return false, nil
	}
	buf := make([]byte, blk)
	step := max((size-blk)/(samples-1), 1) / SectorSize * SectorSize
	for i := int64(0); i < samples; i++ {
		off := min(i*step, size-blk) / SectorSize * SectorSize
		m, err := f.ReadAt(buf, off)
		if m < len(buf) || pat.Check(buf, off) != 0 {
			return false, nil
		}
		_ = err // a short or failed read just means "lay it out again"
	}
	return true, nil
}

// reportProgress calls cfg.Progress about twice a second until the returned
// function is called.
func reportProgress(cfg *Config, workers []*worker, start time.Time) (stop func()) {
	return progressLoop(cfg.Progress, cfg.Warmup, cfg.Runtime, start, func() (ops, bytes int64) {
		for _, w := range workers {
			ops += w.ops.Load()
			bytes += w.bytes.Load()
		}
		return ops, bytes
	})
}

// progressLoop calls progress about twice a second with the counts count
// returns, until the returned function is called.
func progressLoop(progress func(Progress), warmup, runtime time.Duration, start time.Time,
	count func() (ops, bytes int64)) (stop func()) {
	if progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			p := Progress{Elapsed: time.Since(start), Total: warmup + runtime}
			p.Warmup = p.Elapsed < warmup
			p.Ops, p.Bytes = count()
			progress(p)
		}
	})
	return func() { close(done); wg.Wait() }
}
