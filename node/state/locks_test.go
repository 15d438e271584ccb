package state

import (
	"context"
	"errors"
	"math"
	"testing"
	"testing/synctest"
)

var lockFile1 = FileKey{Volume: 1, FileID: 42}

func lockOpen() *Open { return &Open{Key: lockFile1} }

func excl(off, n uint64) Lock   { return Lock{Offset: off, Length: n, Exclusive: true} }
func shared(off, n uint64) Lock { return Lock{Offset: off, Length: n} }

// TestZeroByteLocks is smbtorture smb2.lock.zerobytelength's table: a
// first exclusive lock, then a second one by the same and by another open.
func TestZeroByteLocks(t *testing.T) {
	cases := []struct {
		a, b Lock
		want error
	}{
		{excl(10, 0), excl(10, 0), nil},
		{excl(10, 0), excl(9, 1), nil},
		{excl(10, 0), excl(10, 1), nil},
		{excl(10, 0), excl(11, 1), nil},
		{excl(10, 0), excl(9, 2), ErrLockNotGranted},
		{excl(10, 0), excl(10, 2), nil},
		{excl(10, 0), excl(9, 3), ErrLockNotGranted},
		{excl(9, 1), excl(10, 0), nil},
		{excl(10, 1), excl(10, 0), nil},
		{excl(11, 1), excl(10, 0), nil},
		{excl(9, 2), excl(10, 0), ErrLockNotGranted},
		{excl(10, 2), excl(10, 0), nil},
		{excl(9, 3), excl(10, 0), ErrLockNotGranted},
		{excl(0, 0), excl(0, 0), nil},
	}
	for _, same := range []bool{true, false} {
		for _, c := range cases {
			lt := NewLockTable()
			o1, o2 := lockOpen(), lockOpen()
			if same {
				o2 = o1
			}
			if err := lt.Lock(o1, []Lock{c.a}); err != nil {
				t.Fatalf("first %+v: %v", c.a, err)
			}
			if err := lt.Lock(o2, []Lock{c.b}); err != c.want {
				t.Errorf("same=%v %+v then %+v: %v, want %v", same, c.a, c.b, err, c.want)
			}
		}
	}
}

// TestLockConflicts is the conflict matrix of [MS-FSA] 2.1.5.7 as
// smb2.lock.stacking, contend and overlap expect it.
func TestLockConflicts(t *testing.T) {
	cases := []struct {
		name      string
		held      Lock
		sameOpen  bool
		req       Lock
		wantGrant bool
	}{
		{"shared on shared, same open", shared(0, 10), true, shared(0, 10), true},
		{"shared on shared, other open", shared(0, 10), false, shared(5, 10), true},
		{"shared on exclusive, same open", excl(0, 10), true, shared(0, 10), true},
		{"shared on exclusive, other open", excl(0, 10), false, shared(0, 10), false},
		{"exclusive on shared, same open", shared(0, 10), true, excl(0, 10), false},
		{"exclusive on exclusive, same open", excl(0, 4), true, excl(2, 4), false},
		{"exclusive on exclusive, other open", excl(0, 4), false, excl(2, 4), false},
		{"adjacent", excl(0, 4), false, excl(4, 4), true},
		{"last byte", excl(math.MaxUint64, 1), false, excl(math.MaxUint64, 1), false},
		{"2^63-1 and 2^63", excl(1<<63-1, 1), false, excl(1<<63, 1), true},
	}
	for _, c := range cases {
		lt := NewLockTable()
		o1, o2 := lockOpen(), lockOpen()
		if c.sameOpen {
			o2 = o1
		}
		if err := lt.Lock(o1, []Lock{c.held}); err != nil {
			t.Fatalf("%s: held: %v", c.name, err)
		}
		err := lt.Lock(o2, []Lock{c.req})
		if (err == nil) != c.wantGrant {
			t.Errorf("%s: %v, want granted=%v", c.name, err, c.wantGrant)
		}
	}
}

func TestInvalidLockRange(t *testing.T) {
	lt := NewLockTable()
	o := lockOpen()
	for _, l := range []Lock{excl(math.MaxUint64, 2), excl(math.MaxUint64, math.MaxUint64), excl(2, math.MaxUint64)} {
		if err := lt.Lock(o, []Lock{l}); err != ErrInvalidLockRange {
			t.Errorf("%+v: %v, want ErrInvalidLockRange", l, err)
		}
	}
	if err := lt.Lock(o, []Lock{shared(math.MaxUint64, 0), shared(math.MaxUint64, 1), shared(1, math.MaxUint64)}); err != nil {
		t.Fatalf("ranges ending at 2^64-1: %v", err)
	}
}

// TestLockAllOrNone: a request of several locks that fails on one keeps
// none of them (smb2.lock.multiple-unlock, "request 2 locks, second one
// will contend").
func TestLockAllOrNone(t *testing.T) {
	lt := NewLockTable()
	o := lockOpen()
	if err := lt.Lock(o, []Lock{excl(10, 10)}); err != nil {
		t.Fatal(err)
	}
	if err := lt.Lock(o, []Lock{excl(0, 10), excl(10, 10)}); err != ErrLockNotGranted {
		t.Fatalf("got %v", err)
	}
	if err := lt.Lock(o, []Lock{excl(0, 10), excl(math.MaxUint64, 5)}); err != ErrInvalidLockRange {
		t.Fatalf("got %v", err)
	}
	if n := lt.LockCount(o); n != 1 {
		t.Fatalf("%d locks held, want 1", n)
	}
	if err := lt.Lock(o, []Lock{excl(0, 10)}); err != nil {
		t.Fatalf("first range still taken: %v", err)
	}
}

func TestUnlock(t *testing.T) {
	lt := NewLockTable()
	o, other := lockOpen(), lockOpen()
	lt.Lock(o, []Lock{shared(110, 4)})
	lt.Lock(o, []Lock{shared(112, 4)})
	// Unlock names a held range exactly: no coalescing, no other owner.
	if _, err := lt.Unlock(o, []Lock{{Offset: 110, Length: 6}}); err != ErrRangeNotLocked {
		t.Fatalf("coalesced unlock: %v", err)
	}
	if _, err := lt.Unlock(other, []Lock{{Offset: 110, Length: 4}}); err != ErrRangeNotLocked {
		t.Fatalf("unlock by another open: %v", err)
	}
	// In order, stopping at the first miss; earlier ones stay unlocked.
	n, err := lt.Unlock(o, []Lock{{Offset: 110, Length: 4}, {Offset: 0, Length: 1}, {Offset: 112, Length: 4}})
	if n != 1 || err != ErrRangeNotLocked || lt.LockCount(o) != 1 {
		t.Fatalf("n=%d err=%v count=%d", n, err, lt.LockCount(o))
	}

	// Stacked exclusive and shared on one range: the exclusive goes first.
	lt.Lock(o, []Lock{excl(10, 0)})
	lt.Lock(o, []Lock{shared(10, 0)})
	if err := lt.Lock(other, []Lock{shared(5, 10)}); err != ErrLockNotGranted {
		t.Fatalf("shared over another's exclusive: %v", err)
	}
	if _, err := lt.Unlock(o, []Lock{{Offset: 10}}); err != nil {
		t.Fatal(err)
	}
	if err := lt.Lock(other, []Lock{shared(5, 10)}); err != nil {
		t.Fatalf("exclusive not released first: %v", err)
	}
}

// TestCheckIO is smb2.lock.rw-shared and rw-exclusive: reads meet other
// opens' exclusive locks, writes meet those and every shared lock.
func TestCheckIO(t *testing.T) {
	cases := []struct {
		held          Lock
		own           bool
		read, written error
	}{
		{shared(100, 100), true, nil, ErrLockConflict},
		{shared(100, 100), false, nil, ErrLockConflict},
		{excl(100, 100), true, nil, nil},
		{excl(100, 100), false, ErrLockConflict, ErrLockConflict},
		{excl(150, 0), false, nil, nil}, // an empty lock covers no byte
		{excl(0, 100), false, nil, nil}, // adjacent
	}
	for _, c := range cases {
		lt := NewLockTable()
		holder, o := lockOpen(), lockOpen()
		if c.own {
			o = holder
		}
		lt.Lock(holder, []Lock{c.held})
		if err := lt.CheckIO(o, 100, 100, false); err != c.read {
			t.Errorf("%+v own=%v: read %v, want %v", c.held, c.own, err, c.read)
		}
		if err := lt.CheckIO(o, 100, 100, true); err != c.written {
			t.Errorf("%+v own=%v: write %v, want %v", c.held, c.own, err, c.written)
		}
		if err := lt.CheckIO(o, 120, 0, true); err != nil {
			t.Errorf("%+v: empty write %v", c.held, err)
		}
	}
	lt := NewLockTable()
	holder := lockOpen()
	lt.Lock(holder, []Lock{excl(math.MaxUint64, 1)})
	if err := lt.CheckIO(lockOpen(), math.MaxUint64-1, 100, false); err != ErrLockConflict {
		t.Errorf("I/O running past 2^64: %v", err)
	}
}

// TestLockWaitGrantedOnUnlock: a blocking lock waits (after onWait) and is
// granted when the holder unlocks.
func TestLockWaitGrantedOnUnlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lt := NewLockTable()
		holder, waiter := lockOpen(), lockOpen()
		lt.Lock(holder, []Lock{excl(100, 50)})
		waited := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- lt.LockWait(context.Background(), waiter, excl(120, 10), func() { close(waited) })
		}()
		<-waited
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("granted while held: %v", err)
		default:
		}
		// An unrelated unlock wakes the waiter, which waits again.
		lt.Lock(holder, []Lock{shared(0, 1)})
		lt.Unlock(holder, []Lock{{Offset: 0, Length: 1}})
		synctest.Wait()
		if len(done) != 0 {
			t.Fatal("granted after an unrelated unlock")
		}
		lt.Unlock(holder, []Lock{{Offset: 100, Length: 50}})
		if err := <-done; err != nil {
			t.Fatalf("LockWait: %v", err)
		}
		if lt.LockCount(waiter) != 1 {
			t.Fatal("waiter holds no lock")
		}
	})
}

func TestLockWaitCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lt := NewLockTable()
		holder, waiter := lockOpen(), lockOpen()
		lt.Lock(holder, []Lock{excl(0, 10)})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- lt.LockWait(ctx, waiter, shared(5, 1), nil) }()
		synctest.Wait()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want canceled", err)
		}
		if lt.LockCount(waiter) != 0 {
			t.Fatal("cancelled waiter holds a lock")
		}
		lt.Release(holder)
		if len(lt.files) != 0 {
			t.Fatalf("%d files left in the table", len(lt.files))
		}
	})
}

// TestReleaseWakesWaiters: closing the holder releases its locks and
// grants the blocked lock.
func TestReleaseWakesWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lt := NewLockTable()
		holder, waiter := lockOpen(), lockOpen()
		lt.Lock(holder, []Lock{excl(0, 10), shared(20, 10)})
		lt.Sequenced(holder, 1, 1)
		done := make(chan error, 1)
		go func() { done <- lt.LockWait(context.Background(), waiter, excl(0, 30), nil) }()
		synctest.Wait()
		lt.Release(holder)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if lt.LockCount(holder) != 0 || len(lt.seqs) != 0 {
			t.Fatal("holder's state survived its release")
		}
		if err := lt.CheckIO(lockOpen(), 0, 1, false); err != ErrLockConflict {
			t.Fatalf("waiter's lock not in force: %v", err)
		}
		lt.Release(waiter)
		if lt.held.Load() != 0 || len(lt.files) != 0 {
			t.Fatalf("held=%d files=%d after every release", lt.held.Load(), len(lt.files))
		}
	})
}

// TestLockSequence follows smb2.lock.replay_smb3_specification_multi's
// use of the 64-entry array.
func TestLockSequence(t *testing.T) {
	lt := NewLockTable()
	o := lockOpen()
	if lt.Replayed(o, 1, 1) {
		t.Fatal("replay on an empty array")
	}
	lt.Sequenced(o, 1, 1)
	if !lt.Replayed(o, 1, 1) {
		t.Fatal("replay not recognized")
	}
	if lt.Replayed(o, 1, 2) || lt.Replayed(o, 1, 1) {
		t.Fatal("a new number must invalidate the entry")
	}
	for _, idx := range []uint32{0, 65, 1 << 27} {
		lt.Sequenced(o, idx, 3)
		if lt.Replayed(o, idx, 3) {
			t.Fatalf("index %d checked", idx)
		}
	}
	lt.Sequenced(o, 64, 15)
	if !lt.Replayed(o, 64, 15) || lt.Replayed(o, 63, 15) {
		t.Fatal("index 64")
	}
}

// FuzzLockTable runs random operations of three opens on one file against
// a byte-set model of [MS-FSA] 2.1.5.7/2.1.5.8 on small ranges, and checks
// that releasing every open leaves the table empty.
func FuzzLockTable(f *testing.F) {
	f.Add([]byte{0x01, 0x22, 0x43, 0x94, 0x15, 0x26})
	f.Add([]byte{0x00, 0x50, 0x10, 0x50, 0x82, 0x50, 0x03})
	f.Fuzz(func(t *testing.T, ops []byte) {
		lt := NewLockTable()
		opens := []*Open{lockOpen(), lockOpen(), lockOpen()}
		type held struct {
			o    int
			l    Lock
			dead bool
		}
		var model []held
		bytes := func(l Lock) map[uint64]bool {
			m := map[uint64]bool{}
			for i := uint64(0); i < l.Length; i++ {
				m[l.Offset+i] = true
			}
			return m
		}
		meets := func(a, b Lock) bool {
			if a.Length == 0 && b.Length == 0 {
				return false
			}
			if a.Length == 0 {
				a, b = b, a
			}
			if b.Length == 0 {
				return a.Offset < b.Offset && b.Offset <= a.Offset+a.Length-1
			}
			ba := bytes(a)
			for x := range bytes(b) {
				if ba[x] {
					return true
				}
			}
			return false
		}
		for len(ops) >= 2 {
			op, arg := ops[0], ops[1]
			ops = ops[2:]
			who := int(op>>2) % 3
			l := Lock{Offset: uint64(arg >> 4), Length: uint64(arg & 7), Exclusive: arg&8 != 0}
			switch op & 3 {
			case 0: // lock
				want := error(nil)
				for _, h := range model {
					if !h.dead && meets(h.l, l) && (l.Exclusive || h.l.Exclusive && h.o != who) {
						want = ErrLockNotGranted
					}
				}
				if err := lt.Lock(opens[who], []Lock{l}); err != want {
					t.Fatalf("lock %d %+v: %v, want %v", who, l, err, want)
				}
				if want == nil {
					model = append(model, held{o: who, l: l})
				}
			case 1: // unlock: the exclusive one first
				at := -1
				for i, h := range model {
					if !h.dead && h.o == who && h.l.Offset == l.Offset && h.l.Length == l.Length && (at < 0 || h.l.Exclusive && !model[at].l.Exclusive) {
						at = i
					}
				}
				_, err := lt.Unlock(opens[who], []Lock{l})
				if (err == nil) != (at >= 0) {
					t.Fatalf("unlock %d %+v: %v", who, l, err)
				}
				if at >= 0 {
					model[at].dead = true
				}
			case 2: // I/O
				write := arg&8 != 0
				want := error(nil)
				for _, h := range model {
					if !h.dead && h.l.Length > 0 && l.Length > 0 && meets(h.l, l) && (h.l.Exclusive && h.o != who || !h.l.Exclusive && write) {
						want = ErrLockConflict
					}
				}
				if err := lt.CheckIO(opens[who], l.Offset, l.Length, write); err != want {
					t.Fatalf("io %d %+v write=%v: %v, want %v", who, l, write, err, want)
				}
			case 3:
				lt.Release(opens[who])
				for i := range model {
					if model[i].o == who {
						model[i].dead = true
					}
				}
			}
		}
		for _, o := range opens {
			lt.Release(o)
		}
		if lt.held.Load() != 0 || len(lt.files) != 0 || len(lt.seqs) != 0 {
			t.Fatalf("held=%d files=%d after releasing every open", lt.held.Load(), len(lt.files))
		}
	})
}
