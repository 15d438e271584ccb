package share

import (
	"context"
	"errors"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/state"
)

// errOpenClosing ends the wait of a blocking lock whose open closes.
var errOpenClosing = errors.New("share: open closing")

// Lock handles SMB2 LOCK ([MS-SMB2] 3.3.5.14): the first element decides
// whether the request locks or unlocks. A replay recognized by the lock
// sequence succeeds without doing anything.
func (o *open) Lock(r *server.Request, req *smb2.LockRequest) error {
	if o.isDir || o.so == nil {
		return smb2.StatusInvalidParameter
	}
	if len(req.Locks) == 0 {
		return smb2.StatusInvalidParameter
	}
	lt := o.d.locks
	seq := lockSequenceChecked(r)
	if seq && lt.Replayed(o.so, req.LockSequenceIndex, req.LockSequenceNumber) {
		return nil
	}
	var err error
	if req.Locks[0].Flags == smb2.LockFlagUnlock {
		err = o.unlock(lt, req.Locks)
	} else {
		err = o.lock(r, lt, req.Locks)
	}
	if err == nil && seq {
		lt.Sequenced(o.so, req.LockSequenceIndex, req.LockSequenceNumber)
	}
	return err
}

// lockSequenceChecked reports whether the server verifies lock sequence
// numbers for the request ([MS-SMB2] 3.3.5.14): on every open of a 3.x
// connection, as the server advertises SMB2_GLOBAL_CAP_MULTI_CHANNEL
// there. Durable and resilient opens of 2.1 join when they exist.
func lockSequenceChecked(r *server.Request) bool {
	if r.Open != nil && r.Open.Durable() {
		return true // durable opens of 2.1 too ([MS-SMB2] 3.3.5.14)
	}
	return r.Session != nil && r.Session.Dialect >= smb2.Dialect300 && r.Session.Dialect != smb2.DialectWildcard
}

// lock processes the lock elements of a request ([MS-SMB2] 3.3.5.14.2):
// each must be SHARED or EXCLUSIVE, optionally FAIL_IMMEDIATELY, and with
// more than one element every one must fail immediately. The elements are
// granted in order, all or none; a single element without
// FAIL_IMMEDIATELY waits for its range.
func (o *open) lock(r *server.Request, lt state.Locks, els []smb2.LockElement) error {
	locks := make([]state.Lock, len(els))
	for i, e := range els {
		switch e.Flags &^ smb2.LockFlagFailImmediately {
		case smb2.LockFlagShared, smb2.LockFlagExclusive:
		default:
			return smb2.StatusInvalidParameter
		}
		if len(els) > 1 && e.Flags&smb2.LockFlagFailImmediately == 0 {
			return smb2.StatusInvalidParameter
		}
		locks[i] = state.Lock{Offset: e.Offset, Length: e.Length, Exclusive: e.Flags&smb2.LockFlagExclusive != 0}
	}
	// Taking a byte-range lock breaks the read caching (level II oplocks,
	// R leases) of the file's other opens ([MS-FSA] 2.1.5.7).
	o.d.table.BreakRead(o.so.Key, o.so)
	if len(els) == 1 && els[0].Flags&smb2.LockFlagFailImmediately == 0 {
		return o.lockWait(r, lt, locks[0])
	}
	return lockStatus(lt.Lock(o.so, locks))
}

// lockWait takes a blocking lock: if the range is taken the request goes
// async (interim STATUS_PENDING) and completes when the range frees. CANCEL
// ends it with STATUS_CANCELLED; the close of the open (CLOSE, tree
// disconnect, logoff) with STATUS_RANGE_NOT_LOCKED, as Windows does.
func (o *open) lockWait(r *server.Request, lt state.Locks, l state.Lock) error {
	parent := r.Ctx
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	var closing <-chan struct{}
	if r.Open != nil {
		closing = r.Open.Closing()
	}
	onWait := func() {
		r.GoAsync()
		if closing != nil {
			go func() {
				select {
				case <-closing:
					cancel(errOpenClosing)
				case <-ctx.Done():
				}
			}()
		}
	}
	err := lt.LockWait(ctx, o.so, l, onWait)
	if err != nil && ctx.Err() != nil {
		if errors.Is(context.Cause(ctx), errOpenClosing) {
			return smb2.StatusRangeNotLocked
		}
		return smb2.StatusCancelled
	}
	return lockStatus(err)
}

// unlock processes the unlock elements of a request in order ([MS-SMB2]
// 3.3.5.14.1): an element that is not a plain UNLOCK fails the request
// with STATUS_INVALID_PARAMETER, a range the open does not hold exactly
// with STATUS_RANGE_NOT_LOCKED; ranges unlocked before stay unlocked.
func (o *open) unlock(lt state.Locks, els []smb2.LockElement) error {
	ranges := make([]state.Lock, 0, len(els))
	for _, e := range els {
		if e.Flags != smb2.LockFlagUnlock {
			break
		}
		ranges = append(ranges, state.Lock{Offset: e.Offset, Length: e.Length})
	}
	if _, err := lt.Unlock(o.so, ranges); err != nil {
		return lockStatus(err)
	}
	if len(ranges) < len(els) {
		return smb2.StatusInvalidParameter
	}
	return nil
}

// lockStatus maps the lock table's errors to NTSTATUS.
func lockStatus(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, state.ErrLockNotGranted):
		return smb2.StatusLockNotGranted
	case errors.Is(err, state.ErrRangeNotLocked):
		return smb2.StatusRangeNotLocked
	case errors.Is(err, state.ErrInvalidLockRange):
		return smb2.StatusInvalidLockRange
	case errors.Is(err, state.ErrLockConflict):
		return smb2.StatusFileLockConflict
	}
	return err
}

// checkLocks fails a READ or WRITE of n bytes at off that byte-range locks
// forbid with STATUS_FILE_LOCK_CONFLICT ([MS-FSA] 2.1.4.10, [MS-SMB2]
// 3.3.5.12, 3.3.5.13).
func (o *open) checkLocks(off, n uint64, write bool) error {
	if o.so == nil {
		return nil
	}
	return lockStatus(o.d.locks.CheckIO(o.so, off, n, write))
}

// releaseLocks drops the open's byte-range locks and wakes the blocking
// locks waiting for them; closing the open calls it.
func (o *open) releaseLocks() {
	if o.so != nil {
		o.d.locks.Release(o.so)
	}
}
