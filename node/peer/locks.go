package peer

import (
	"context"

	"github.com/smbcluster/smbcluster/node/state"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
)

// Lock implements state.Locks.
func (lk *lockSide) Lock(o *state.Open, locks []state.Lock) (err error) {
	lk.r.dg.convert(o) // deleg.go: the owner must know it
	lk.r.hs.asked(o)
	resp, cerr := lk.r.call(o.Key, func() { err = lk.lockLocal(o, locks) },
		&peerv1.CallRequest{Key: keyPB(o.Key), Op: &peerv1.CallRequest_Lock{Lock: &peerv1.LockOp{Open: lk.r.ref(o), Locks: locksPB(locks)}}})
	err = lk.lockAnswer(o.Key, resp, cerr, err)
	if resp != nil && err == nil {
		lk.r.mirror.Lock(o, locks) // recover.go
	}
	return err
}

// lockAnswer is the result of a lock operation at the owner.
func (lk *lockSide) lockAnswer(key state.FileKey, resp *peerv1.CallResponse, cerr, local error) error {
	switch {
	case cerr != nil:
		return cerr
	case resp == nil:
		return local
	}
	if resp.LocksPresent {
		lk.r.hs.setHint(key)
	}
	return codeErr(resp.Error, resp.Message)
}

// LockWait implements state.Locks.
func (lk *lockSide) LockWait(ctx context.Context, o *state.Open, l state.Lock, onWait func()) error {
	lk.r.dg.convert(o) // deleg.go: the owner must know it
	lk.r.hs.asked(o)
	req := &peerv1.CallRequest{Key: keyPB(o.Key), Op: &peerv1.CallRequest_LockWait{LockWait: &peerv1.LockWaitOp{Open: lk.r.ref(o), Lock: lockPB(l)}}}
	local := false
	err := lk.r.wait(ctx, o.Key, func() error { local = true; return lk.lockWaitLocal(ctx, o, l, onWait) }, req, onWait)
	if err == nil && !local {
		lk.r.mirror.Lock(o, []state.Lock{l}) // recover.go
	}
	return err
}

// Unlock implements state.Locks.
func (lk *lockSide) Unlock(o *state.Open, ranges []state.Lock) (n int, err error) {
	lk.r.dg.convert(o) // deleg.go: the owner must know it
	resp, cerr := lk.r.call(o.Key, func() { n, err = lk.r.locks.Unlock(o, ranges) },
		&peerv1.CallRequest{Key: keyPB(o.Key), Op: &peerv1.CallRequest_Unlock{Unlock: &peerv1.UnlockOp{Open: lk.r.ref(o), Locks: locksPB(ranges)}}})
	if cerr != nil {
		return 0, cerr
	}
	if resp != nil {
		n := resp.GetUnlock().GetCount()
		lk.r.mirror.Unlock(o, ranges[:n]) // recover.go
		return int(n), codeErr(resp.Error, resp.Message)
	}
	return n, err
}

// Release implements state.Locks: the owner drops o's locks, and this
// node its lock sequences. An open of a remote file that never asked for
// a lock has none to drop there: no call (its close at the owner drops
// its locks anyway).
func (lk *lockSide) Release(o *state.Open) {
	lk.r.hs.mu.Lock()
	asked := lk.r.hs.locked[o.Ref]
	delete(lk.r.hs.locked, o.Ref)
	lk.r.hs.mu.Unlock()
	if asked {
		lk.r.call(o.Key, func() {},
			&peerv1.CallRequest{Key: keyPB(o.Key), Op: &peerv1.CallRequest_ReleaseLocks{ReleaseLocks: &peerv1.ReleaseLocksOp{Open: lk.r.ref(o)}}})
	}
	lk.r.locks.Release(o) // the locks when the file is ours; the lock sequences
	lk.r.mirror.Release(o)
}

// HeldLocks returns the byte-range locks of o, an open this node holds,
// in the order granted: from the local table when this node owns the
// file, from its copy of what the owner granted otherwise (for
// listings; read-only).
func (lk *lockSide) HeldLocks(o *state.Open) []state.Lock {
	return append(lk.r.locks.Locks(o), lk.r.mirror.Locks(o)...)
}

// CheckIO implements state.Locks. A READ or WRITE asks the owner only
// when the file has byte-range locks: the owner tells every node that
// has the file open before it grants the first lock (Deliver), and tells
// a node that opens a locked file in Admit's answer. Otherwise the file
// is ours — its locks are in the local table — or has none: the local
// table of a file another node owns holds only what this node kept from
// an earlier ownership of its shard (it fenced; dropStale forgets it
// when it takes the shard back), locks the owner has long let go.
func (lk *lockSide) CheckIO(o *state.Open, off, n uint64, write bool) (err error) {
	lk.r.hs.mu.Lock()
	// deleg.go: the owner recalls a delegation before its file's first lock.
	hinted := lk.r.hs.hint[o.Key] && !lk.r.isDelegated(o)
	lk.r.hs.mu.Unlock()
	if !hinted {
		err := lk.r.locks.CheckIO(o, off, n, write)
		if err != nil && lk.ownedElsewhere(o.Key) {
			return nil // what this node kept from an earlier ownership
		}
		return err
	}
	resp, cerr := lk.r.call(o.Key, func() { err = lk.r.locks.CheckIO(o, off, n, write) },
		&peerv1.CallRequest{Key: keyPB(o.Key), Op: &peerv1.CallRequest_CheckIo{CheckIo: &peerv1.CheckIOOp{Open: lk.r.ref(o), Offset: off, Length: n, Write: write}}})
	if cerr != nil {
		return cerr
	}
	if resp != nil {
		return codeErr(resp.Error, resp.Message)
	}
	return err
}

// ownedElsewhere reports whether another node owns key's shard. Asked
// only of a conflict the local table found: a READ or WRITE takes no
// lock of the shard map.
func (lk *lockSide) ownedElsewhere(key state.FileKey) bool {
	rt, ok := lk.r.routes.Owner(ShardOf(key))
	return ok && rt.Node != lk.r.routes.Self()
}

// LockCount implements state.Locks.
func (lk *lockSide) LockCount(o *state.Open) (n int) {
	if lk.r.isDelegated(o) { // deleg.go
		return 0
	}
	resp, _ := lk.r.call(o.Key, func() { n = lk.r.locks.LockCount(o) },
		&peerv1.CallRequest{Key: keyPB(o.Key), Op: &peerv1.CallRequest_LockCount{LockCount: &peerv1.LockCountOp{Open: lk.r.ref(o)}}})
	if resp != nil {
		return int(resp.GetLockCount().GetCount())
	}
	return n
}

// Replayed implements state.Locks: lock sequences belong to the open,
// and so to the node that holds it.
func (lk *lockSide) Replayed(o *state.Open, index uint32, number uint8) bool {
	return lk.r.locks.Replayed(o, index, number)
}

// Sequenced implements state.Locks.
func (lk *lockSide) Sequenced(o *state.Open, index uint32, number uint8) {
	lk.r.locks.Sequenced(o, index, number)
}

// lockLocal grants locks at this node as the owner, first telling the
// other nodes that hold the file open that it has locks now.
// The file's delegations are recalled first, and none is granted until
// the lock is (deleg.go).
func (lk *lockSide) lockLocal(o *state.Open, locks []state.Lock) (err error) {
	lk.r.dg.without(o.Key, func(bool) {
		lk.announceLocks(o.Key)
		err = lk.r.locks.Lock(o, locks)
	})
	return err
}

func (lk *lockSide) lockWaitLocal(ctx context.Context, o *state.Open, l state.Lock, onWait func()) (err error) {
	lk.r.dg.without(o.Key, func(bool) {
		lk.announceLocks(o.Key)
		err = lk.r.locks.LockWait(ctx, o, l, onWait)
	})
	return err
}

// announceLocks tells every other node with an open of key, when the
// file has no locks yet, that it is about to have some, and waits for
// their answers, so that none of their READs or WRITEs after the grant
// misses a lock. (A node that opens the file while it has locks learns it
// from Admit's answer; a node forgets it when it closes the file.)
func (lk *lockSide) announceLocks(key state.FileKey) {
	if lk.r.locks.HasLocks(key) {
		return
	}
	lk.r.own.tellHolders(key, "", &peerv1.DeliverRequest{LocksPresent: keyPB(key)}, "byte-range locks")
}

// lockSide is a node's byte-range locks as the holder of opens
// (state.Locks): each call goes to the table of the file's owner, and
// READs and WRITEs ask it only while the file has locks (hint).
type lockSide struct {
	r *Router
}
