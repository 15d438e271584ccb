package state

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func TestMemDurableStore(t *testing.T) {
	s := NewMemDurableStore()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	client, create, app := [16]byte{1}, [16]byte{2}, [16]byte{3}
	s.Put(DurableRecord{FileID: 1, Version: 2, ClientGUID: client, CreateGUID: create, AppInstanceID: app, Timeout: time.Minute})
	s.Put(DurableRecord{FileID: 2, Version: 1, Timeout: time.Minute, DisconnectedAt: t0})
	s.Put(DurableRecord{FileID: 3, Version: 2, Timeout: 5 * time.Second, DisconnectedAt: t0})
	if r, ok := s.ByCreateGUID(client, create); !ok || r.FileID != 1 {
		t.Fatalf("ByCreateGUID: %v %v", r, ok)
	}
	if _, ok := s.ByCreateGUID([16]byte{9}, create); ok {
		t.Fatal("ByCreateGUID matched another client")
	}
	if rs := s.ByAppInstance(app); len(rs) != 1 || rs[0].FileID != 1 {
		t.Fatalf("ByAppInstance: %v", rs)
	}
	if rs := s.ByAppInstance([16]byte{}); rs != nil {
		t.Fatalf("ByAppInstance of no id: %v", rs)
	}
	if rs := s.Expired(t0.Add(4 * time.Second)); len(rs) != 0 {
		t.Fatalf("expired too early: %v", rs)
	}
	rs := s.Expired(t0.Add(time.Hour))
	if len(rs) != 2 || rs[0].FileID != 3 || rs[1].FileID != 2 {
		t.Fatalf("Expired: %v, want 3 then 2 (a connected record never expires)", rs)
	}
	s.Delete(3)
	s.Delete(42)
	if _, ok := s.Get(3); ok || s.Len() != 2 {
		t.Fatalf("after Delete: %d records", s.Len())
	}
}

// closer is the Breaker of a detached open: a break closes the open.
type closer struct {
	t     *Table
	o     *Open
	calls int
}

func (c *closer) BreakOplock(uint8) error {
	c.calls++
	go c.t.Remove(c.o)
	return nil
}
func (c *closer) BreakLease(LeaseBreak) error { return c.BreakOplock(0) }

// TestDetachedBreakCloses: a conflicting open of a file whose batch
// oplock is held by a detached durable open does not wait for the break
// timeout: the detached open's breaker closes it and the open is admitted
// with a batch oplock of its own.
func TestDetachedBreakCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := NewTable()
		key := FileKey{FileID: 7}
		held := &Open{Key: key, Access: accessReadData | accessWriteData}
		if g, err := tb.Admit(context.Background(), held, Request{Oplock: OplockBatch}, nil); err != nil || g.Oplock != OplockBatch {
			t.Fatalf("first open: %v %v", g, err)
		}
		if c := tb.CachingOf(held); c.Oplock() != OplockBatch || c.Lease || c.Breaking {
			t.Fatalf("CachingOf: %+v", c)
		}
		if sole, pending := tb.Sole(held); !sole || pending {
			t.Fatalf("Sole: %v %v", sole, pending)
		}
		br := &closer{t: tb, o: held}
		if !tb.Detach(held, br) {
			t.Fatal("Detach refused an open with no break pending")
		}
		start := time.Now()
		next := &Open{Key: key, Access: accessReadData | accessWriteData}
		g, err := tb.Admit(context.Background(), next, Request{Oplock: OplockBatch}, nil)
		if err != nil || g.Oplock != OplockBatch {
			t.Fatalf("conflicting open: %v %v", g, err)
		}
		if br.calls != 1 || time.Since(start) != 0 {
			t.Fatalf("breaker called %d times, waited %v", br.calls, time.Since(start))
		}
	})
}

// TestDetachRefusedWhileBreaking: an open whose break waits for an
// acknowledgment cannot be kept when its client goes away.
func TestDetachRefusedWhileBreaking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := NewTable()
		key := FileKey{FileID: 8}
		held := &Open{Key: key, Access: accessReadData | accessWriteData, ShareAccess: shareRead | shareWrite}
		held.Breaker = nopBreaker{}
		if _, err := tb.Admit(context.Background(), held, Request{Oplock: OplockBatch}, nil); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		waiting := make(chan struct{})
		go func() {
			tb.Admit(ctx, &Open{Key: key, Access: accessReadData, ShareAccess: shareRead | shareWrite}, Request{}, func() { close(waiting) })
		}()
		<-waiting
		if !tb.CachingOf(held).Breaking {
			t.Fatal("no break pending")
		}
		if tb.Detach(held, &closer{t: tb, o: held}) {
			t.Fatal("Detach accepted an open with a break pending")
		}
		cancel()
		tb.Reattach(held, nopBreaker{})
		tb.Remove(held)
	})
}

type nopBreaker struct{}

func (nopBreaker) BreakOplock(uint8) error     { return nil }
func (nopBreaker) BreakLease(LeaseBreak) error { return nil }
