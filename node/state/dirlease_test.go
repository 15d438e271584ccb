package state

import (
	"context"
	"testing"
)

func admitDir(t *testing.T, tb *Table, o *Open, l *LeaseRequest) *LeaseGrant {
	t.Helper()
	g, err := tb.Admit(context.Background(), o, Request{Lease: l, Directory: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g.Lease
}

// TestDirLeaseGrant: a directory lease is R or RH, never W, and a
// second open with the key upgrades it back after a break (smb2.lease.v2_request).
func TestDirLeaseGrant(t *testing.T) {
	tb := NewTable()
	for _, c := range []struct{ want, got uint32 }{{r, r}, {rh, rh}, {rw, r}, {rwh, rh}, {LeaseHandle, 0}} {
		o := open(accessReadData, 7)
		if g := admitDir(t, tb, o, lease(1, 1, c.want)); g.State != c.got {
			t.Errorf("directory lease %#x granted %#x, want %#x", c.want, g.State, c.got)
		}
		if !tb.DirLeases() {
			t.Errorf("DirLeases false with a directory lease held")
		}
		tb.Remove(o)
	}
	if tb.DirLeases() {
		t.Errorf("DirLeases true after the last directory lease went")
	}
}

// TestDirLeaseParentBreak: a change in the directory breaks its lease to
// none, unless the change comes with the lease as its parent lease key;
// the break does not wait, and the key reopened gets RH again.
func TestDirLeaseParentBreak(t *testing.T) {
	tb := NewTable()
	dir := open(accessReadData, 7)
	br := newLeaseBreaker()
	dir.Breaker = br
	l := lease(1, 2, rwh)
	l.Version, l.Epoch = 2, 0x22
	if g := admitDir(t, tb, dir, l); g.State != rh || g.Epoch != 0x23 {
		t.Fatalf("directory lease %#x epoch %#x, want RH 0x23", g.State, g.Epoch)
	}

	// A child whose lease names the directory lease as its parent.
	child := &Open{Key: FileKey{Volume: 1, FileID: 77}, Access: accessReadData | accessWriteData, ShareAccess: 7}
	cl := lease(1, 3, rwh)
	cl.Version, cl.ParentKey, cl.HasParent = 2, l.ID.Key, true
	admitLease(t, tb, child, cl, nil)
	except, ok := tb.ParentLeaseOf(child)
	if !ok || except != l.ID {
		t.Fatalf("ParentLeaseOf = %v %v, want %v", except, ok, l.ID)
	}
	tb.BreakDirLeases(dir.Key, except, ok)
	select {
	case b := <-br.sent:
		t.Fatalf("break %+v despite the parent lease key", b)
	default:
	}

	// Another client's key with the same value is not the parent lease.
	tb.BreakDirLeases(dir.Key, LeaseID{Client: [16]byte{9}, Key: l.ID.Key}, true)
	b := <-br.sent
	if b.From != rh || b.To != LeaseNone || !b.AckRequired || b.Epoch != 0x24 {
		t.Fatalf("break %+v, want RH to none, acknowledged, epoch 0x24", b)
	}
	if _, err := tb.AckLease(l.ID, LeaseNone); err != nil {
		t.Fatal(err)
	}
	if g := admitDir(t, tb, open(accessReadData, 7), l); g.State != rh || g.Epoch != 0x25 {
		t.Errorf("reopen got %#x epoch %#x, want RH 0x25", g.State, g.Epoch)
	}
}
