package state

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

const (
	r   = LeaseRead
	rh  = LeaseRead | LeaseHandle
	rw  = LeaseRead | LeaseWrite
	rwh = LeaseRead | LeaseWrite | LeaseHandle
)

// leaseBreaker records the lease breaks sent for one lease's opens.
type leaseBreaker struct{ sent chan LeaseBreak }

func newLeaseBreaker() *leaseBreaker                  { return &leaseBreaker{sent: make(chan LeaseBreak, 8)} }
func (b *leaseBreaker) BreakOplock(uint8) error       { return nil }
func (b *leaseBreaker) BreakLease(l LeaseBreak) error { b.sent <- l; return nil }

func lease(client, k byte, state uint32) *LeaseRequest {
	return &LeaseRequest{ID: LeaseID{Client: [16]byte{client}, Key: [16]byte{k}}, State: state, Version: 1}
}

func admitLease(t *testing.T, tb *Table, o *Open, l *LeaseRequest, onWait func()) *LeaseGrant {
	t.Helper()
	g, err := tb.Admit(context.Background(), o, Request{Lease: l}, onWait)
	if err != nil {
		t.Fatal(err)
	}
	return g.Lease
}

// TestLeaseGrants follows smb2.lease.request and upgrade: invalid states
// are not granted, a key is bound to one file, opens with the same key
// share the lease and only a strict superset upgrades it.
func TestLeaseGrants(t *testing.T) {
	tb := NewTable()
	rw7 := uint32(accessReadData | accessWriteData)
	for _, c := range []struct{ want, got uint32 }{
		{LeaseHandle, 0}, {LeaseWrite, 0}, {LeaseHandle | LeaseWrite, 0}, {r, r}, {rh, rh}, {rw, rw}, {rwh, rwh},
	} {
		o := open(rw7, 7)
		if g := admitLease(t, tb, o, lease(1, 1, c.want), nil); g.State != c.got {
			t.Errorf("request %#x granted %#x, want %#x", c.want, g.State, c.got)
		}
		tb.Remove(o)
	}
	a := open(rw7, 7)
	admitLease(t, tb, a, lease(1, 1, rh), nil)
	if g := admitLease(t, tb, open(rw7, 7), lease(1, 1, rw), nil); g.State != rh {
		t.Errorf("sidegrade to RW gave %#x, want RH kept", g.State)
	}
	if g := admitLease(t, tb, open(rw7, 7), lease(1, 1, rwh), nil); g.State != rwh {
		t.Errorf("upgrade to RWH gave %#x", g.State)
	}
	other := &Open{Key: FileKey{Volume: 1, FileID: 43}, Access: rw7, ShareAccess: 7}
	if _, err := tb.Admit(context.Background(), other, Request{Lease: lease(1, 1, r)}, nil); !errors.Is(err, ErrLeaseKeyInUse) {
		t.Errorf("same key on another file: %v", err)
	}
	// Another client's key is another lease.
	if g := admitLease(t, tb, open(rw7, 7), lease(2, 1, rwh), nil); g.State != rh {
		t.Errorf("second client got %#x, want RH", g.State)
	}
}

// TestLeaseBreakAcknowledged: an open of another client waits while an
// RWH lease breaks to RH; the acknowledgment lets it in with RH.
func TestLeaseBreakAcknowledged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := NewTable()
		holder := open(accessReadData|accessWriteData, 7)
		br := newLeaseBreaker()
		holder.Breaker = br
		l1 := lease(1, 1, rwh)
		l1.Version, l1.Epoch = 2, 0x10
		if g := admitLease(t, tb, holder, l1, nil); g.State != rwh || g.Epoch != 0x11 {
			t.Fatalf("grant %#x epoch %#x", g.State, g.Epoch)
		}
		done := make(chan *LeaseGrant)
		go func() { done <- admitLease(t, tb, open(accessReadData, 7), lease(2, 2, rwh), nil) }()
		b := <-br.sent
		if b.From != rwh || b.To != rh || !b.AckRequired || b.Epoch != 0x12 {
			t.Fatalf("break %+v", b)
		}
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("conflicting open did not wait for the acknowledgment")
		default:
		}
		if _, err := tb.AckLease(l1.ID, rwh); !errors.Is(err, ErrAckNotAccepted) {
			t.Fatalf("ack above the break: %v", err)
		}
		if _, err := tb.AckLease(LeaseID{Key: [16]byte{9}}, r); !errors.Is(err, ErrNoLease) {
			t.Fatalf("ack of an unknown key: %v", err)
		}
		if st, err := tb.AckLease(l1.ID, rh); err != nil || st != rh {
			t.Fatalf("ack: %#x %v", st, err)
		}
		if g := <-done; g.State != rh {
			t.Fatalf("second lease got %#x, want RH", g.State)
		}
		if _, err := tb.AckLease(l1.ID, rh); !errors.Is(err, ErrNotBreaking) {
			t.Fatalf("second ack: %v", err)
		}
	})
}

// TestLeaseBreakTimeout: an unacknowledged break leaves the lease with
// nothing after BreakTimeout, and the waiting open goes on.
func TestLeaseBreakTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := NewTable()
		holder := open(accessReadData|accessWriteData, 7)
		holder.Breaker = newLeaseBreaker()
		l1 := lease(1, 1, rwh)
		admitLease(t, tb, holder, l1, nil)
		start := time.Now()
		g := admitLease(t, tb, open(accessReadData, 7), lease(2, 2, rwh), nil)
		if waited := time.Since(start); waited != 35*time.Second {
			t.Fatalf("waited %v, want the break timeout", waited)
		}
		if g.State != rh {
			t.Fatalf("second lease got %#x", g.State)
		}
		if st, breaking, _ := tb.LeaseState(l1.ID); st != LeaseNone || breaking {
			t.Fatalf("timed-out lease at %#x breaking=%v", st, breaking)
		}
	})
}

// TestLeaseStepwiseBreak follows smb2.lease.breaking3: while RWH breaks
// to RH, an overwrite needs none; after the ack the lease breaks RH to R,
// then R to none without an acknowledgment.
func TestLeaseStepwiseBreak(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := NewTable()
		holder := open(accessReadData|accessWriteData, 7)
		br := newLeaseBreaker()
		holder.Breaker = br
		l1 := lease(1, 1, rwh)
		admitLease(t, tb, holder, l1, nil)
		go tb.Admit(context.Background(), open(accessReadData, 7), Request{}, nil)
		if b := <-br.sent; b.To != rh {
			t.Fatalf("first break to %#x", b.To)
		}
		overwrote := make(chan error)
		go func() {
			_, err := tb.Admit(context.Background(), open(accessReadData|accessWriteData, 7), Request{Overwrite: true}, nil)
			overwrote <- err
		}()
		synctest.Wait()
		if len(br.sent) != 0 {
			t.Fatal("a second break while one is pending")
		}
		tb.AckLease(l1.ID, rh)
		if b := <-br.sent; b.From != rh || b.To != r || !b.AckRequired {
			t.Fatalf("second break %+v", b)
		}
		tb.AckLease(l1.ID, r)
		if b := <-br.sent; b.From != r || b.To != LeaseNone || b.AckRequired {
			t.Fatalf("third break %+v", b)
		}
		if err := <-overwrote; err != nil {
			t.Fatal(err)
		}
	})
}

// TestLeaseNoSelfBreakAndOplocks: a write breaks the other lease's R but
// not its own; a lease and an oplock on one file (smb2.lease.oplock).
func TestLeaseNoSelfBreakAndOplocks(t *testing.T) {
	tb := NewTable()
	a, b := open(accessReadData|accessWriteData, 7), open(accessReadData|accessWriteData, 7)
	ba, bb := newLeaseBreaker(), newLeaseBreaker()
	a.Breaker, b.Breaker = ba, bb
	admitLease(t, tb, a, lease(1, 1, r), nil)
	admitLease(t, tb, b, lease(1, 2, r), nil)
	tb.BreakRead(key, a)
	if len(ba.sent) != 0 {
		t.Fatal("writer's own lease broken")
	}
	if l := <-bb.sent; l.From != r || l.To != LeaseNone || l.AckRequired {
		t.Fatalf("break %+v", l)
	}
	tb.Remove(a)
	tb.Remove(b)
	// An RH lease keeps oplocks out; an oplock keeps H out of a lease.
	admitLease(t, tb, a, lease(1, 1, rh), nil)
	if lvl, _ := admitOplock(tb, context.Background(), open(accessReadData, 7), OplockBatch, nil); lvl != OplockNone {
		t.Fatalf("oplock beside an RH lease: %#x", lvl)
	}
	tb.Remove(a)
	c := open(accessReadData, 7)
	admitOplock(tb, context.Background(), c, OplockLevelII, nil)
	if g := admitLease(t, tb, open(accessReadData, 7), lease(1, 3, rwh), nil); g.State != r {
		t.Fatalf("lease beside a level II oplock: %#x, want R", g.State)
	}
}
