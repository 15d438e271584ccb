package loadgen

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// memFile is an in-memory File; each operation takes latency of (fake)
// time so runs under synctest advance the clock deterministically.
type memFile struct {
	mu      sync.Mutex
	data    []byte
	writes  atomic.Int64
	corrupt int64 // if >= 0, reads covering this offset see a flipped byte
	latency time.Duration
}

type memTarget struct{ f *memFile }

func (t memTarget) Open(ctx context.Context, conn int) (File, error) { return memHandle{t.f}, nil }

type memHandle struct{ f *memFile }

func (h memHandle) Close() error { return nil }

func (h memHandle) Size() (int64, error) {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	return int64(len(h.f.data)), nil
}

func (h memHandle) ReadAt(b []byte, off int64) (int, error) {
	time.Sleep(h.f.latency)
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	if off >= int64(len(h.f.data)) {
		return 0, io.EOF
	}
	n := copy(b, h.f.data[off:])
	if c := h.f.corrupt; c >= off && c < off+int64(n) {
		b[c-off] ^= 0xff
	}
	return n, nil
}

func (h memHandle) WriteAt(b []byte, off int64) (int, error) {
	time.Sleep(h.f.latency)
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	h.f.writes.Add(1)
	if end := off + int64(len(b)); end > int64(len(h.f.data)) {
		h.f.data = append(h.f.data, make([]byte, end-int64(len(h.f.data)))...)
	}
	return copy(h.f.data[off:], b), nil
}

func testConfig(w Workload) Config {
	return Config{Workload: w, ReadPercent: 50, BlockSize: 4096, Conns: 2, IODepth: 4,
		Size: 1 << 20, Warmup: 100 * time.Millisecond, Runtime: time.Second, Seed: 9}
}

func TestRunWorkloads(t *testing.T) {
	for _, w := range []Workload{Read, Write, RandRead, RandWrite, Mixed} {
		t.Run(w.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &memFile{corrupt: -1, latency: time.Millisecond}
				cfg := testConfig(w)
				var progress atomic.Int64
				cfg.Progress = func(Progress) { progress.Add(1) }
				st, err := Run(t.Context(), memTarget{f}, cfg)
				if err != nil {
					t.Fatal(err)
				}
				// 8 workers, 1 ms per op, 1 s measured: about 8000 ops.
				if ops := st.ReadOps + st.WriteOps; ops < 7900 || ops > 8000 {
					t.Errorf("ops %d, want ~8000", ops)
				}
				if (st.ReadOps > 0) != (w != Write && w != RandWrite) || (st.WriteOps > 0) != (w != Read && w != RandRead) {
					t.Errorf("reads %d writes %d for %v", st.ReadOps, st.WriteOps, w)
				}
				if st.Mismatches != 0 || (st.ReadOps > 0 && st.Verified < st.ReadOps) {
					t.Errorf("verified %d mismatches %d", st.Verified, st.Mismatches)
				}
				if p50 := st.Latency.Quantile(0.5); p50 < uint64(time.Millisecond) || p50 > uint64(time.Millisecond)*65/64 {
					t.Errorf("p50 %v, want 1ms", time.Duration(p50))
				}
				if progress.Load() == 0 {
					t.Error("no progress reported")
				}
				if NewPattern(9).Check(f.data, 0) != 0 {
					t.Error("file does not hold the pattern after the run")
				}
			})
		})
	}
}

func TestRunDetectsCorruption(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &memFile{corrupt: 8192 + 100, latency: time.Millisecond}
		cfg := testConfig(Read)
		st, err := Run(t.Context(), memTarget{f}, cfg)
		if !errors.Is(err, ErrMismatch) {
			t.Fatalf("err = %v, want ErrMismatch", err)
		}
		if st.Mismatches == 0 || st.FirstBad != 8192 {
			t.Errorf("mismatches %d first bad %d, want >0 at 8192", st.Mismatches, st.FirstBad)
		}
	})
}

func TestPrepareReusesFile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &memFile{corrupt: -1}
		files := []File{memHandle{f}}
		p := NewPattern(5)
		if err := Prepare(t.Context(), files, p, 4<<20); err != nil {
			t.Fatal(err)
		}
		if n := f.writes.Load(); n != 4 {
			t.Fatalf("layout wrote %d blocks, want 4", n)
		}
		if err := Prepare(t.Context(), files, p, 4<<20); err != nil {
			t.Fatal(err)
		}
		if n := f.writes.Load(); n != 4 {
			t.Fatalf("second Prepare rewrote a file that held the pattern (%d writes)", n)
		}
		if err := Prepare(t.Context(), files, NewPattern(6), 4<<20); err != nil {
			t.Fatal(err)
		}
		if n := f.writes.Load(); n != 8 {
			t.Fatalf("another seed did not lay the file out again (%d writes)", n)
		}
	})
}

type failTarget struct{}

func (failTarget) Open(context.Context, int) (File, error) { return nil, errors.New("refused") }

func TestRunErrors(t *testing.T) {
	if _, err := Run(t.Context(), failTarget{}, testConfig(Read)); err == nil {
		t.Fatal("no error from a failing Open")
	}
	bad := testConfig(Read)
	bad.BlockSize = 1000
	if _, err := Run(t.Context(), failTarget{}, bad); err == nil {
		t.Fatal("no error for an invalid block size")
	}
}
