package state

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestBreakObservers: an acknowledged break is told to BreakAcked with
// its time; an unacknowledged one to BreakTimedOut after the timeout,
// with its opens' Breakers.
func TestBreakObservers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := NewTable()
		// The observers run on the table's timer goroutines.
		var mu sync.Mutex
		var acked []time.Duration
		var timedOut []time.Duration
		var holders []Breaker
		tb.BreakAcked = func(lease bool, d time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			acked = append(acked, d)
		}
		tb.BreakTimedOut = func(lease bool, d time.Duration, hs []Breaker) {
			if !lease {
				t.Error("a lease break reported as an oplock's")
			}
			mu.Lock()
			defer mu.Unlock()
			timedOut, holders = append(timedOut, d), hs
		}
		// Acknowledged after 2 s.
		holder := open(accessReadData|accessWriteData, 7)
		br := newLeaseBreaker()
		holder.Breaker = br
		l1 := lease(1, 1, rwh)
		admitLease(t, tb, holder, l1, nil)
		go tb.Admit(context.Background(), open(accessReadData, 7), Request{}, nil)
		<-br.sent
		time.Sleep(2 * time.Second) // synctest's clock
		if _, err := tb.AckLease(l1.ID, rh); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		mu.Lock()
		if len(acked) != 1 || acked[0] != 2*time.Second || len(timedOut) != 0 {
			t.Fatalf("acked %v timed out %v, want one ack after 2s", acked, timedOut)
		}
		mu.Unlock()
		// Never acknowledged: the timeout.
		other, conflicting := open(accessReadData|accessWriteData, 7), open(accessReadData, 7)
		other.Key, conflicting.Key = FileKey{FileID: 99}, FileKey{FileID: 99}
		other.Breaker = newLeaseBreaker()
		admitLease(t, tb, other, lease(3, 3, rwh), nil)
		admitLease(t, tb, conflicting, lease(4, 4, rwh), nil)
		mu.Lock()
		defer mu.Unlock()
		if len(timedOut) != 1 || timedOut[0] != tb.BreakTimeout || len(holders) != 1 || holders[0] != other.Breaker {
			t.Fatalf("timed out %v holders %v, want one after %v", timedOut, holders, tb.BreakTimeout)
		}
	})
}

// TestLockWaitObserved: a blocking lock that waits counts in Waiting
// while it does and tells Waited how long; Held counts the locks.
func TestLockWaitObserved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lt := NewLockTable()
		var waits []time.Duration
		lt.Waited = func(d time.Duration) { waits = append(waits, d) }
		holder, waiter := lockOpen(), lockOpen()
		lt.Lock(holder, []Lock{excl(0, 10)})
		done := make(chan error, 1)
		go func() { done <- lt.LockWait(context.Background(), waiter, excl(5, 1), nil) }()
		synctest.Wait()
		if lt.Waiting() != 1 || lt.Held() != 1 {
			t.Fatalf("waiting %d held %d, want 1 and 1", lt.Waiting(), lt.Held())
		}
		time.Sleep(3 * time.Second) // synctest's clock
		lt.Unlock(holder, []Lock{{Offset: 0, Length: 10}})
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if lt.Waiting() != 0 || lt.Held() != 1 || len(waits) != 1 || waits[0] != 3*time.Second {
			t.Fatalf("waiting %d held %d waits %v, want 0, 1, [3s]", lt.Waiting(), lt.Held(), waits)
		}
		// A lock granted at once waits for nothing and tells nothing.
		lt.LockWait(context.Background(), holder, excl(100, 1), nil)
		if len(waits) != 1 {
			t.Fatalf("waits %v after an uncontended lock", waits)
		}
	})
}
