package loadgen

import (
	"fmt"
	"time"
)

// Workload is the I/O mix a run issues.
type Workload int

// Workloads.
const (
	Read      Workload = iota // sequential reads
	Write                     // sequential writes
	RandRead                  // random reads
	RandWrite                 // random writes
	Mixed                     // random reads and writes, ReadPercent of them reads
)

var workloadNames = [...]string{"read", "write", "randread", "randwrite", "mixed"}

func (w Workload) String() string {
	if int(w) < len(workloadNames) {
		return workloadNames[w]
	}
	return fmt.Sprintf("Workload(%d)", int(w))
}

// ParseWorkload parses a workload name as String prints it.
func ParseWorkload(s string) (Workload, error) {
	for i, n := range workloadNames {
		if n == s {
			return Workload(i), nil
		}
	}
	return 0, fmt.Errorf("unknown workload %q (want read, write, randread, randwrite or mixed)", s)
}

// random reports whether w picks offsets at random.
func (w Workload) random() bool { return w == RandRead || w == RandWrite || w == Mixed }

// readPercent returns the share of reads w issues.
func (w Workload) readPercent(mix int) int {
	switch w {
	case Read, RandRead:
		return 100
	case Write, RandWrite:
		return 0
	}
	return mix
}

// Config describes one run.
type Config struct {
	Workload    Workload
	ReadPercent int           // reads in a Mixed workload, 0..100
	BlockSize   int           // bytes per I/O, a multiple of SectorSize
	Conns       int           // connections, each its own SMB session
	IODepth     int           // concurrent I/Os per connection
	Size        int64         // file size, a multiple of BlockSize
	Warmup      time.Duration // run but do not measure
	Runtime     time.Duration // measure
	Seed        uint64        // data pattern seed

	// Progress, if set, is called about twice a second from a separate
	// goroutine while the workers run.
	Progress func(Progress)
}

// Validate reports the first problem with c.
func (c *Config) Validate() error {
	switch {
	case c.BlockSize <= 0 || c.BlockSize%SectorSize != 0:
		return fmt.Errorf("block size %d is not a positive multiple of %d", c.BlockSize, SectorSize)
	case c.Conns < 1 || c.Conns > 256:
		return fmt.Errorf("conns %d out of range 1..256", c.Conns)
	case c.IODepth < 1 || c.IODepth > 1024:
		return fmt.Errorf("iodepth %d out of range 1..1024", c.IODepth)
	case c.Size < int64(c.BlockSize) || c.Size%int64(c.BlockSize) != 0:
		return fmt.Errorf("size %d is not a positive multiple of the block size %d", c.Size, c.BlockSize)
	case c.ReadPercent < 0 || c.ReadPercent > 100:
		return fmt.Errorf("rwmixread %d out of range 0..100", c.ReadPercent)
	case c.Runtime <= 0:
		return fmt.Errorf("runtime %v must be positive", c.Runtime)
	case c.Warmup < 0:
		return fmt.Errorf("warmup %v must not be negative", c.Warmup)
	}
	return nil
}

// Progress is a snapshot of a running benchmark.
type Progress struct {
	Elapsed time.Duration // since the workers started
	Total   time.Duration // warmup + runtime
	Warmup  bool          // still warming up
	Ops     int64         // completed operations so far, warmup included
	Bytes   int64         // bytes moved so far, warmup included
}

// Stats is the measured part of a run.
type Stats struct {
	Elapsed    time.Duration // measured interval
	ReadOps    int64
	WriteOps   int64
	ReadBytes  int64
	WriteBytes int64
	Moved      int64 // bytes read and written, warmup included
	Verified   int64 // blocks read and checked, warmup included
	Mismatches int64 // blocks read that differ from the pattern
	FirstBad   int64 // offset of the first mismatching block, or -1
	Latency    Histogram
	ReadLat    Histogram
	WriteLat   Histogram
}
