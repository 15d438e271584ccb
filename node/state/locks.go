package state

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Errors of the lock table; the share layer maps them to NTSTATUS.
var (
	ErrLockNotGranted   = errors.New("state: lock not granted")   // STATUS_LOCK_NOT_GRANTED
	ErrRangeNotLocked   = errors.New("state: range not locked")   // STATUS_RANGE_NOT_LOCKED
	ErrInvalidLockRange = errors.New("state: invalid lock range") // STATUS_INVALID_LOCK_RANGE
	ErrLockConflict     = errors.New("state: file lock conflict") // STATUS_FILE_LOCK_CONFLICT
)

// Lock is one byte-range lock: Length bytes from Offset, shared or
// exclusive ([MS-FSA] 2.1.1.2 ByteRangeLock). A zero Length is a valid
// lock that covers no byte but still conflicts with a range around it.
type Lock struct {
	Offset    uint64
	Length    uint64
	Exclusive bool
}

// valid reports whether the lock's last byte is addressable: Offset +
// Length - 1 must not wrap past 2^64 ([MS-FSA] 2.1.5.7).
func (l Lock) valid() bool {
	return l.Length == 0 || l.Offset <= math.MaxUint64-(l.Length-1)
}

// last is the lock's last byte; only meaningful for Length > 0.
func (l Lock) last() uint64 { return l.Offset + (l.Length - 1) }

// overlaps reports whether two ranges touch as [MS-FSA] 2.1.4.10 and
// Windows judge it: two non-empty ranges overlap when they share a byte;
// an empty range at O overlaps a non-empty one that holds a byte before O
// and the byte at O (so {10,0} meets {9,2} but not {10,1} or {9,1}); two
// empty ranges never overlap.
func overlaps(a, b Lock) bool {
	switch {
	case a.Length == 0 && b.Length == 0:
		return false
	case a.Length == 0:
		return b.Offset < a.Offset && a.Offset <= b.last()
	case b.Length == 0:
		return a.Offset < b.Offset && b.Offset <= a.last()
	}
	return a.Offset <= b.last() && b.Offset <= a.last()
}

// heldLock is a granted lock and the open that holds it.
type heldLock struct {
	Lock
	owner *Open
}

// lockFile is the byte-range lock state of one file.
type lockFile struct {
	locks   []heldLock
	changed chan struct{} // closed (and replaced) when a lock is released; nil until a waiter asks
}

// lockSeqLen is the size of Open.LockSequenceArray ([MS-SMB2] 3.3.1.10).
const lockSeqLen = 64

// lockSeq is one open's LockSequenceArray: 0 is invalid, else number+1.
type lockSeq [lockSeqLen]uint8

// LockTable holds the byte-range locks of every data stream, keyed by lockKey,
// and the lock sequence array of every open that used one. It is safe for
// concurrent use; it never waits while holding its mutex, so that it can
// move behind an RPC to the file's owner node.
type LockTable struct {
	held    atomic.Int64 // locks held in the whole table: I/O checks skip the mutex at zero
	waiting atomic.Int64 // blocking lock requests waiting

	// Waited, if set, is told how long each blocking lock request that
	// had to wait waited, granted or not (metrics). Set before use.
	Waited func(time.Duration)

	mu    sync.Mutex
	files map[lockKey]*lockFile
	seqs  map[*Open]*lockSeq
}

// NewLockTable returns an empty lock table.
func NewLockTable() *LockTable {
	return &LockTable{files: map[lockKey]*lockFile{}, seqs: map[*Open]*lockSeq{}}
}

// conflictsLocked reports whether o may not take l because of the locks
// already held on f ([MS-FSA] 2.1.5.7): an exclusive lock meets every
// overlapping lock, including o's own; a shared lock meets only the
// exclusive locks of other opens.
func conflictsLocked(f *lockFile, o *Open, l Lock) bool {
	if skipLockCheck {
		return false
	}
	for _, h := range f.locks {
		if !overlaps(h.Lock, l) {
			continue
		}
		if l.Exclusive || h.Exclusive && h.owner != o {
			return true
		}
	}
	return false
}

// Lock grants o every lock in locks, in order, or none of them: on the
// first range that is invalid (ErrInvalidLockRange) or taken
// (ErrLockNotGranted) the locks granted by this call are rolled back.
// Locks of one open on one range stack ([MS-FSA] 2.1.5.7).
func (t *LockTable) Lock(o *Open, locks []Lock) error {
	_, err := t.tryLock(o, locks, false)
	return err
}

// tryLock is Lock; with wantWait it also returns, on a conflict, a channel
// closed when the file's locks next change.
func (t *LockTable) tryLock(o *Open, locks []Lock, wantWait bool) (<-chan struct{}, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.files[lockKeyOf(o)]
	if f == nil {
		f = &lockFile{}
		t.files[lockKeyOf(o)] = f
	}
	n := len(f.locks)
	for _, l := range locks {
		err := ErrInvalidLockRange
		if l.valid() {
			if !conflictsLocked(f, o, l) {
				f.locks = append(f.locks, heldLock{Lock: l, owner: o})
				continue
			}
			err = ErrLockNotGranted
		}
		clear(f.locks[n:])
		f.locks = f.locks[:n]
		var wait <-chan struct{}
		if wantWait && err == ErrLockNotGranted {
			if f.changed == nil {
				f.changed = make(chan struct{})
			}
			wait = f.changed
		}
		t.forgetIfEmptyLocked(lockKeyOf(o), f)
		return wait, err
	}
	t.held.Add(int64(len(locks)))
	return nil, nil
}

// LockWait grants o the lock l, waiting while it conflicts with locks
// held (a blocking lock, [MS-SMB2] 3.3.5.14.2). onWait, if not nil, is
// called once before the first wait (the caller answers STATUS_PENDING).
// It returns ctx's error if ctx ends first; the caller cancels ctx for
// CANCEL, connection loss and the close of the waiting open.
func (t *LockTable) LockWait(ctx context.Context, o *Open, l Lock, onWait func()) error {
	var waited bool
	var start time.Time
	for {
		wait, err := t.tryLock(o, []Lock{l}, true)
		if err != ErrLockNotGranted || wait == nil {
			return err
		}
		if onWait != nil {
			onWait()
			onWait = nil
		}
		if !waited {
			waited, start = true, time.Now()
			t.waiting.Add(1)
			defer t.endWait(start)
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// endWait ends the wait of a blocking lock request that began at start.
func (t *LockTable) endWait(start time.Time) {
	t.waiting.Add(-1)
	if t.Waited != nil {
		t.Waited(time.Since(start))
	}
}

// Held is the number of byte-range locks held in the table; Waiting the
// number of blocking lock requests waiting for a range.
func (t *LockTable) Held() int64    { return t.held.Load() }
func (t *LockTable) Waiting() int64 { return t.waiting.Load() }

// Unlock releases o's locks matching each range in order (offset and
// length exactly, an exclusive lock before a shared one, [MS-FSA]
// 2.1.5.8). It stops at the first range o does not hold and returns
// ErrRangeNotLocked with the number released before it; released locks
// stay released.
func (t *LockTable) Unlock(o *Open, ranges []Lock) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.files[lockKeyOf(o)]
	done := 0
	for _, r := range ranges {
		if f == nil || !removeLocked(f, o, r) {
			break
		}
		done++
	}
	if done > 0 {
		t.held.Add(-int64(done))
		t.wakeLocked(f)
		t.forgetIfEmptyLocked(lockKeyOf(o), f)
	}
	if done < len(ranges) {
		return done, ErrRangeNotLocked
	}
	return done, nil
}

// removeLocked drops one lock of o on exactly r's range, preferring an
// exclusive one; it reports whether there was one.
func removeLocked(f *lockFile, o *Open, r Lock) bool {
	at := -1
	for i, h := range f.locks {
		if h.owner != o || h.Offset != r.Offset || h.Length != r.Length {
			continue
		}
		if at < 0 || h.Exclusive && !f.locks[at].Exclusive {
			at = i
		}
	}
	if at < 0 {
		return false
	}
	f.locks = slices.Delete(f.locks, at, at+1)
	return true
}

// wakeLocked wakes the waiters of f: its locks changed.
func (t *LockTable) wakeLocked(f *lockFile) {
	if f.changed != nil {
		close(f.changed)
		f.changed = nil
	}
}

// forgetIfEmptyLocked drops f from the table when it holds no lock and
// nobody waits on it.
func (t *LockTable) forgetIfEmptyLocked(key lockKey, f *lockFile) {
	if len(f.locks) == 0 && f.changed == nil {
		delete(t.files, key)
	}
}

// Release drops every lock o holds and its lock sequence array, waking
// the waiters on its file, as closing the open does ([MS-FSA] 2.1.5.4).
func (t *LockTable) Release(o *Open) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.seqs, o)
	f := t.files[lockKeyOf(o)]
	if f == nil {
		return
	}
	kept := f.locks[:0]
	for _, h := range f.locks {
		if h.owner != o {
			kept = append(kept, h)
		}
	}
	if dropped := len(f.locks) - len(kept); dropped > 0 {
		clear(f.locks[len(kept):])
		f.locks = kept
		t.held.Add(-int64(dropped))
		t.wakeLocked(f)
	}
	t.forgetIfEmptyLocked(lockKeyOf(o), f)
}

// CheckIO reports ErrLockConflict if o may not read (or write) n bytes at
// off because of byte-range locks ([MS-FSA] 2.1.4.10): a read meets the
// exclusive locks of other opens, a write meets those and every shared
// lock, o's own included. An empty access meets nothing.
func (t *LockTable) CheckIO(o *Open, off, n uint64, write bool) error {
	if n == 0 || t.held.Load() == 0 || skipLockCheck {
		return nil
	}
	io := Lock{Offset: off, Length: n}
	if off > 0 && n > math.MaxUint64-off+1 {
		io.Length = math.MaxUint64 - off + 1 // up to the last addressable byte
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.files[lockKeyOf(o)]
	if f == nil {
		return nil
	}
	for _, h := range f.locks {
		if h.Length == 0 || !overlaps(h.Lock, io) {
			continue
		}
		if h.Exclusive && h.owner != o || !h.Exclusive && write {
			return ErrLockConflict
		}
	}
	return nil
}

// HasLocks reports whether any stream of the file holds a byte-range lock.
func (t *LockTable) HasLocks(key FileKey) bool {
	if t.held.Load() == 0 {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.files {
		if k.FileKey == key {
			return true
		}
	}
	return false
}

// LockCount returns the number of locks o holds.
func (t *LockTable) LockCount(o *Open) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	if f := t.files[lockKeyOf(o)]; f != nil {
		for _, h := range f.locks {
			if h.owner == o {
				n++
			}
		}
	}
	return n
}

// Replayed checks a LOCK request's LockSequenceIndex and LockSequenceNumber
// against o's LockSequenceArray ([MS-SMB2] 3.3.5.14): it reports true when
// the entry at index (1 to 64) holds number, a replay the caller answers
// with success without locking anything. Otherwise it invalidates the
// entry until Sequenced records the request's success. Indexes outside
// 1..64 are not checked.
func (t *LockTable) Replayed(o *Open, index uint32, number uint8) bool {
	if index == 0 || index > lockSeqLen {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.seqs[o]
	if s == nil {
		return false
	}
	if s[index-1] == number&0xF+1 {
		return true
	}
	s[index-1] = 0
	return false
}

// Sequenced records that the request with index and number succeeded on
// o, so that a replay of it is recognized.
func (t *LockTable) Sequenced(o *Open, index uint32, number uint8) {
	if index == 0 || index > lockSeqLen {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.seqs[o]
	if s == nil {
		s = new(lockSeq)
		t.seqs[o] = s
	}
	s[index-1] = number&0xF + 1
}

// lockKey names the stream whose byte ranges a lock covers: each data
// stream of a file has its own ranges ([MS-FSA] 2.1.5.7).
type lockKey struct {
	FileKey
	Stream string
}

func lockKeyOf(o *Open) lockKey { return lockKey{o.Key, o.Stream} }
