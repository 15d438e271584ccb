package state

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// breaker records the breaks sent to one open.
type breaker struct {
	mu     sync.Mutex
	levels []uint8
	sent   chan uint8
}

func newBreaker() *breaker { return &breaker{sent: make(chan uint8, 8)} }

func (b *breaker) BreakOplock(to uint8) error {
	b.mu.Lock()
	b.levels = append(b.levels, to)
	b.mu.Unlock()
	b.sent <- to
	return nil
}

func (b *breaker) BreakLease(LeaseBreak) error { return nil }

var key = FileKey{Volume: 1, FileID: 42}

// admitOplock admits o asking for an oplock of level.
func admitOplock(tb *Table, ctx context.Context, o *Open, level uint8, onWait func()) (uint8, error) {
	g, err := tb.Admit(ctx, o, Request{Oplock: level}, onWait)
	return g.Oplock, err
}

func open(access, share uint32) *Open {
	return &Open{Key: key, Access: access, ShareAccess: share}
}

func TestShareModes(t *testing.T) {
	const (
		r = accessReadData
		w = accessWriteData
		d = accessDelete
	)
	cases := []struct {
		name           string
		a1, s1, a2, s2 uint32
		wantViolation  bool
	}{
		{"read/read sharing read", r, shareRead, r, shareRead, false},
		{"read then write, first shares read only", r, shareRead, w, shareRead | shareWrite, true},
		{"write then read, second shares read only", w, shareRead | shareWrite, r, shareRead, true},
		{"delete not shared", r, shareRead, d, shareRead | shareDelete, true},
		{"delete shared", r, shareRead | shareDelete, d, shareRead | shareDelete, false},
		{"attribute-only opens never conflict", 0x80, 0, r, 0, false},
		{"exclusive opens", r | w, 0, r, shareRead | shareWrite, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tb := NewTable()
			if _, err := admitOplock(tb, context.Background(), open(c.a1, c.s1), OplockNone, nil); err != nil {
				t.Fatal(err)
			}
			_, err := admitOplock(tb, context.Background(), open(c.a2, c.s2), OplockNone, nil)
			if got := errors.Is(err, ErrSharingViolation); got != c.wantViolation {
				t.Fatalf("violation = %v (%v), want %v", got, err, c.wantViolation)
			}
		})
	}
}

func TestDeletePendingAndLastClose(t *testing.T) {
	tb := NewTable()
	a, b := open(accessReadData, 7), open(accessReadData, 7)
	for _, o := range []*Open{a, b} {
		if _, err := admitOplock(tb, context.Background(), o, OplockNone, nil); err != nil {
			t.Fatal(err)
		}
	}
	tb.SetDeletePending(key, true)
	if _, err := admitOplock(tb, context.Background(), open(accessReadData, 7), OplockNone, nil); !errors.Is(err, ErrDeletePending) {
		t.Fatalf("open of a delete-pending file: %v", err)
	}
	if last, _ := tb.Remove(a); last {
		t.Fatal("first close reported last")
	}
	if last, pending := tb.Remove(b); !last || !pending {
		t.Fatalf("last close: last=%v pending=%v", last, pending)
	}
}

func TestOplockGrants(t *testing.T) {
	tb := NewTable()
	first := open(accessReadData, 7)
	if lvl, _ := admitOplock(tb, context.Background(), first, OplockLevelII, nil); lvl != OplockLevelII {
		t.Fatalf("level II request got %#x", lvl)
	}
	second := open(accessReadData, 7)
	if lvl, _ := admitOplock(tb, context.Background(), second, OplockBatch, nil); lvl != OplockLevelII {
		t.Fatalf("batch beside a level II holder got %#x, want level II", lvl)
	}
}

// TestOplockBreakAcknowledged: a second open waits until the batch holder
// acknowledges the break to level II, then both hold level II.
func TestOplockBreakAcknowledged(t *testing.T) {
	tb := NewTable()
	holder := open(accessReadData|accessWriteData, 7)
	br := newBreaker()
	holder.Breaker = br
	if lvl, _ := admitOplock(tb, context.Background(), holder, OplockBatch, nil); lvl != OplockBatch {
		t.Fatalf("got %#x, want batch", lvl)
	}
	waited := make(chan struct{})
	done := make(chan uint8)
	go func() {
		lvl, err := admitOplock(tb, context.Background(), open(accessReadData, 7), OplockLevelII, func() { close(waited) })
		if err != nil {
			t.Error(err)
		}
		done <- lvl
	}()
	if to := <-br.sent; to != OplockLevelII {
		t.Fatalf("break to %#x, want level II", to)
	}
	<-waited
	if !tb.Ack(holder, OplockLevelII) {
		t.Fatal("ack refused")
	}
	if lvl := <-done; lvl != OplockLevelII {
		t.Fatalf("second open got %#x", lvl)
	}
	if tb.Oplock(holder) != OplockLevelII {
		t.Fatalf("holder at %#x after ack", tb.Oplock(holder))
	}
	if tb.Ack(holder, OplockNone) {
		t.Fatal("ack without a pending break accepted")
	}
}

// TestOplockBreakTimeout: an unanswered break counts as acknowledged to
// none after BreakTimeout; synctest's clock makes it instant.
func TestOplockBreakTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := NewTable()
		tb.BreakTimeout = 35 * time.Second
		holder := open(accessReadData, 7)
		holder.Breaker = newBreaker()
		admitOplock(tb, context.Background(), holder, OplockExclusive, nil)
		start := time.Now()
		lvl, err := admitOplock(tb, context.Background(), open(accessReadData, 7), OplockNone, nil)
		if err != nil || lvl != OplockNone {
			t.Fatalf("got %#x, %v", lvl, err)
		}
		if waited := time.Since(start); waited != 35*time.Second {
			t.Fatalf("waited %v, want the break timeout", waited)
		}
		if tb.Oplock(holder) != OplockNone {
			t.Fatalf("holder at %#x after timeout", tb.Oplock(holder))
		}
	})
}

// TestOplockBreakCancelled: CANCEL of the waiting CREATE ends the wait.
func TestOplockBreakCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := NewTable()
		holder := open(accessReadData, 7)
		holder.Breaker = newBreaker()
		admitOplock(tb, context.Background(), holder, OplockBatch, nil)
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			time.Sleep(time.Second) // fake time inside the bubble
			cancel()
		}()
		if _, err := admitOplock(tb, ctx, open(accessReadData, 7), OplockNone, nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want canceled", err)
		}
		tb.Remove(holder)
	})
}

func TestRenameChecks(t *testing.T) {
	tb := NewTable()
	a := open(0x80, shareRead|shareDelete) // attributes only: admitted beside anything
	b := open(accessReadData, shareRead)
	a.Name, b.Name = "dir/f", "dir/f"
	admitOplock(tb, context.Background(), a, OplockNone, nil)
	if err := tb.CheckRename(a); err != nil {
		t.Fatalf("lone open: %v", err)
	}
	if _, err := admitOplock(tb, context.Background(), b, OplockNone, nil); err != nil {
		t.Fatal(err)
	}
	if err := tb.CheckRename(a); !errors.Is(err, ErrSharingViolation) {
		t.Fatalf("rename while another open does not share delete: %v", err)
	}
	if !tb.HasOpenBelow("dir") || tb.HasOpenBelow("di") {
		t.Fatal("HasOpenBelow")
	}
	tb.Renamed(key, "other/f")
	if b.Name != "other/f" {
		t.Fatalf("name %q after rename", b.Name)
	}
}
