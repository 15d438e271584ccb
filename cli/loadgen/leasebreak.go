package loadgen

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/smbcluster/smbcluster/cli/smbc"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// BreakGrace is how long the probe waits, after the conflicting open
// completed, for a break that has not arrived: past it the break counts as
// missing.
const BreakGrace = 50 * time.Millisecond

// leaseRWH is the lease the holder asks for.
const leaseRWH = smb2.LeaseRead | smb2.LeaseHandle | smb2.LeaseWrite

// BreakConfig describes a lease-break probe.
type BreakConfig struct {
	Count int    // attempts
	Name  string // file in the share, created if needed and removed after
}

// BreakStats is what a lease-break probe measured.
type BreakStats struct {
	Tries   int
	Granted uint32 // lease state the holder was granted (the last attempt's)
	// Waited counts breaks that reached the holder while the conflicting
	// CREATE was still outstanding: the server held it for the break.
	Waited int
	// Late counts breaks that arrived after the conflicting CREATE had
	// completed (within BreakGrace): the server broke the lease but did
	// not wait for the acknowledgment.
	Late int
	// Missing counts attempts where no break arrived at all: the
	// conflicting open succeeded while the holder kept its lease.
	Missing  int
	BreakLat Histogram // conflicting CREATE sent → break notification received by the holder
	OpenLat  Histogram // conflicting CREATE sent → its response received
}

// ProbeBreaks measures lease breaks between two connections: holder opens
// the file with a Read-Write-Handle lease, then other opens it for
// reading and writing without a lease, which must break the holder's
// Write caching ([MS-SMB2] 3.3.4.7, 3.3.5.9). The latency runs from just
// before other's CREATE is sent to the holder's receipt of the lease break
// notification (one process, one clock); the holder acknowledges at once,
// after which the server may complete other's CREATE. With holder and
// other on two nodes of a cluster it measures the cross-node break.
func ProbeBreaks(ctx context.Context, holder, other *smbc.Conn, cfg BreakConfig) (*BreakStats, error) {
	if cfg.Count < 1 || cfg.Name == "" {
		return nil, fmt.Errorf("break probe: count %d, name %q", cfg.Count, cfg.Name)
	}
	st := &BreakStats{}
	for range cfg.Count {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		if err := probeOnce(ctx, holder, other, cfg.Name, st); err != nil {
			return st, err
		}
	}
	return st, holder.Remove(cfg.Name)
}

// probeOnce runs one attempt and records it in st.
func probeOnce(ctx context.Context, holder, other *smbc.Conn, name string, st *BreakStats) error {
	var key [16]byte
	rand.Read(key[:])
	drain(holder.Breaks())
	hf, granted, err := holder.OpenLease(name, key, leaseRWH)
	if err != nil {
		return fmt.Errorf("holder: %w", err)
	}
	st.Tries++
	st.Granted = granted
	if granted&smb2.LeaseWrite == 0 {
		hf.Close()
		return fmt.Errorf("holder was granted lease state %s, not one with Write caching: nothing to break", LeaseString(granted))
	}
	stop := make(chan struct{})
	res := make(chan breakResult, 1)
	go func() { res <- awaitBreak(ctx, holder, key, stop) }()
	t0 := time.Now()
	of, oerr := other.OpenFile(name, false)
	t1 := time.Now()
	r := waitGrace(res, stop)
	if oerr == nil {
		oerr = of.Close()
	}
	herr := hf.Close()
	if err := errors.Join(oerr, r.err, herr); err != nil {
		return err
	}
	brk := r.b
	st.OpenLat.Record(uint64(t1.Sub(t0)))
	switch {
	case brk == nil:
		st.Missing++
	case brk.At.After(t1):
		st.Late++
		st.BreakLat.Record(uint64(brk.At.Sub(t0)))
	default:
		st.Waited++
		st.BreakLat.Record(uint64(brk.At.Sub(t0)))
	}
	return nil
}

// breakResult is the holder's side of an attempt.
type breakResult struct {
	b   *smbc.Break // nil: none arrived
	err error
}

// awaitBreak waits for a break of the lease key on holder, until stop is
// closed, and acknowledges it at once.
func awaitBreak(ctx context.Context, holder *smbc.Conn, key [16]byte, stop <-chan struct{}) breakResult {
	for {
		select {
		case <-ctx.Done():
			return breakResult{err: ctx.Err()}
		case <-stop:
			return breakResult{}
		case b := <-holder.Breaks():
			if !b.Lease || b.Key != key {
				continue
			}
			if b.AckRequired {
				if err := holder.AckLeaseBreak(key, b.New); err != nil {
					return breakResult{&b, fmt.Errorf("acknowledging the lease break: %w", err)}
				}
			}
			return breakResult{b: &b}
		}
	}
}

// waitGrace takes the holder's result, giving a break that has not arrived
// yet BreakGrace to do so.
func waitGrace(res <-chan breakResult, stop chan<- struct{}) breakResult {
	t := time.NewTimer(BreakGrace)
	defer t.Stop()
	select {
	case r := <-res:
		return r
	case <-t.C:
		close(stop)
		return <-res
	}
}

func drain(ch <-chan smbc.Break) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// LeaseString spells a lease state as Windows tools do: "RWH", "RH", "".
func LeaseString(s uint32) string {
	var b []byte
	for _, f := range []struct {
		bit uint32
		c   byte
	}{{smb2.LeaseRead, 'R'}, {smb2.LeaseWrite, 'W'}, {smb2.LeaseHandle, 'H'}} {
		if s&f.bit != 0 {
			b = append(b, f.c)
		}
	}
	if len(b) == 0 {
		return "none"
	}
	return string(b)
}
