package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// fakeEtcd answers keep-alives after a delay, or never (stopped), or no
// longer knows the lease; it records when each keep-alive was sent and
// the deadline of its context.
type fakeEtcd struct {
	mu       sync.Mutex
	delay    time.Duration
	stopped  bool
	lost     bool
	sent     []time.Time
	answered []time.Time // the send times of the keep-alives answered
	timeouts []time.Duration
}

func (e *fakeEtcd) renew(ttl time.Duration) func(context.Context) (time.Duration, error) {
	return func(ctx context.Context) (time.Duration, error) {
		e.mu.Lock()
		now := time.Now()
		e.sent = append(e.sent, now)
		if d, ok := ctx.Deadline(); ok {
			e.timeouts = append(e.timeouts, d.Sub(now))
		}
		delay, stopped, lost := e.delay, e.stopped, e.lost
		e.mu.Unlock()
		if lost {
			return 0, rpctypes.ErrLeaseNotFound
		}
		if stopped {
			<-ctx.Done()
			return 0, ctx.Err()
		}
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-t.C:
			e.mu.Lock()
			e.answered = append(e.answered, now)
			e.mu.Unlock()
			return ttl, nil
		}
	}
}

func (e *fakeEtcd) set(f func(*fakeEtcd)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f(e)
}

func (e *fakeEtcd) lastAnswered() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.answered[len(e.answered)-1]
}

func (e *fakeEtcd) lastSent() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sent[len(e.sent)-1]
}

// startKeeper starts a keeper of a lease granted at the bubble's now.
func startKeeper(t *testing.T, ttl time.Duration, etcd *fakeEtcd) (*Fencing, *int) {
	t.Helper()
	ends := new(int)
	f := newFencing(7, time.Now().Add(ttl-leaseMargin(ttl)), func(*Fencing) { *ends++ })
	k := &leaseKeeper{f: f, ttl: ttl, renew: etcd.renew(ttl), log: slog.New(slog.DiscardHandler)}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	k.start(ctx)
	return f, ends
}

// TestLeaseDeadlineCountsFromSend: the deadline is the send time of the
// last answered keep-alive plus the TTL less the margin, however late
// the answer came; when etcd stops answering the Fencing ends at that
// deadline exactly, while keep-alives are still being tried, each bounded
// by a third of the TTL.
func TestLeaseDeadlineCountsFromSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 3 * time.Second
		margin := leaseMargin(ttl)
		etcd := &fakeEtcd{delay: 700 * time.Millisecond}
		f, ends := startKeeper(t, ttl, etcd)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if !f.Valid() || f.Err() != nil {
			t.Fatalf("fenced while etcd answers: %v", f.Err())
		}
		// Keep-alives are hedged (renewHedged): the deadline counts from
		// the send of the one answered last.
		if a := etcd.lastAnswered(); !f.Deadline().Equal(a.Add(ttl - margin)) {
			t.Errorf("deadline %v after the last answered send, want %v", f.Deadline().Sub(a), ttl-margin)
		}

		etcd.set(func(e *fakeEtcd) { e.stopped = true })
		time.Sleep(time.Second) // the pending answer still arrives
		synctest.Wait()
		sent := etcd.lastAnswered()
		deadline := f.Deadline()
		if want := sent.Add(ttl - margin); !deadline.Equal(want) {
			t.Fatalf("deadline %v, want %v (send time of the last answered keep-alive + TTL - margin)", deadline, want)
		}
		time.Sleep(time.Until(deadline) - time.Nanosecond)
		synctest.Wait()
		if !f.Valid() {
			t.Fatal("fenced before the deadline")
		}
		time.Sleep(time.Nanosecond)
		if f.Valid() {
			t.Fatal("valid at the deadline")
		}
		synctest.Wait()
		select {
		case <-f.Done():
		default:
			t.Fatal("Done not closed at the deadline")
		}
		if !errors.Is(f.Err(), errLeaseLost) || *ends != 1 {
			t.Errorf("Err %v, onEnd ran %d times", f.Err(), *ends)
		}
		etcd.mu.Lock()
		defer etcd.mu.Unlock()
		tries := 0
		for i, s := range etcd.sent {
			if s.After(sent) {
				tries++
			}
			if etcd.timeouts[i] > ttl/3 {
				t.Errorf("keep-alive %d bounded by %v, more than a third of the TTL", i, etcd.timeouts[i])
			}
		}
		if tries < 2 {
			t.Errorf("%d keep-alives tried between the last answered one and the deadline", tries)
		}
	})
}

// TestLeaseNotFoundFencesAtOnce: a lease etcd no longer knows ends the
// Fencing at the keep-alive's answer, not at the deadline.
func TestLeaseNotFoundFencesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 3 * time.Second
		etcd := &fakeEtcd{lost: true}
		f, _ := startKeeper(t, ttl, etcd)
		synctest.Wait()
		if f.Valid() || !errors.Is(f.Err(), errLeaseLost) {
			t.Fatalf("after the lease was not found: valid %v, %v", f.Valid(), f.Err())
		}
		if time.Until(f.Deadline()) < ttl-leaseMargin(ttl) {
			t.Error("the deadline passed already: the lease was not reported lost")
		}
	})
}

// TestFencingEnds: a Fencing ends once, with the first reason, and is
// never valid again.
func TestFencingEnds(t *testing.T) {
	n := 0
	f := newFencing(3, time.Now().Add(time.Hour), func(*Fencing) { n++ })
	if !f.Valid() || f.Epoch() != 3 || f.Err() != nil {
		t.Fatal("a new Fencing is not valid")
	}
	if !f.end(ErrSuperseded) || f.end(errLeft) || n != 1 {
		t.Fatalf("end: onEnd ran %d times", n)
	}
	f.extend(time.Now().Add(2 * time.Hour))
	if f.Valid() || !errors.Is(f.Err(), ErrSuperseded) {
		t.Errorf("after end: valid %v, %v", f.Valid(), f.Err())
	}
	if notJoined.Valid() || notJoined.Epoch() != 0 {
		t.Error("the Fencing before a join is valid")
	}
}

func TestFenceReason(t *testing.T) {
	for err, want := range map[error]string{
		errLeft: "left", errLeaseLost: "lease_lost", ErrSuperseded: "superseded", ErrRemoved: "removed",
		fmt.Errorf("watch: %w", ErrSuperseded): "superseded", errNotJoined: "other", nil: "other",
	} {
		if got := FenceReason(err); got != want {
			t.Errorf("FenceReason(%v) = %q, want %q", err, got, want)
		}
	}
}
