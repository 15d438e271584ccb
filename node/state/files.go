package state

import "context"

// Files is a file's state as the share layer reaches it: the Table itself
// on a single node, or, in a cluster, a router that takes each call to the
// node owning the file's shard (node/peer). Every method behaves as the
// Table's of the same name.
type Files interface {
	Admit(ctx context.Context, o *Open, req Request, onWait func()) (Grant, error)
	Remove(o *Open) (last, deletePending bool)
	Drop(o *Open) (deleteStream, deleteFile bool)

	Ack(o *Open, level uint8) bool
	AckLease(id LeaseID, state uint32) (uint32, error)
	Oplock(o *Open) uint8
	CachingOf(o *Open) Caching
	BreakRead(key FileKey, except *Open)
	BreakHandle(ctx context.Context, key FileKey, except *Open, onWait func()) error

	DirLeases() bool
	ParentLeaseOf(o *Open) (LeaseID, bool)
	BreakDirLeases(dir FileKey, except LeaseID, hasExcept bool)

	Detach(o *Open, b Breaker) bool
	Reattach(o *Open, b Breaker)
	Sole(o *Open) (sole, deletePending bool)

	MarkDeletePending(o *Open, on bool)
	SetDeletePending(key FileKey, on bool)
	DeletePending(key FileKey) bool
	CheckRename(o *Open) error
	Renamed(key FileKey, name string)
	NameOf(o *Open) string
	HasOpenBelow(dir string) bool
	CheckAccess(key FileKey, access, share uint32) error

	StreamOpen(key FileKey, stream string, except *Open) bool
	StreamOf(o *Open) string
	RenamedStream(key FileKey, from, to string)
}

// Locks is the byte-range lock state as the share layer reaches it: the
// LockTable on a single node, or a router to the owner nodes in a cluster.
type Locks interface {
	Lock(o *Open, locks []Lock) error
	LockWait(ctx context.Context, o *Open, l Lock, onWait func()) error
	Unlock(o *Open, ranges []Lock) (int, error)
	Release(o *Open)
	CheckIO(o *Open, off, n uint64, write bool) error
	LockCount(o *Open) int
	Replayed(o *Open, index uint32, number uint8) bool
	Sequenced(o *Open, index uint32, number uint8)
}

var (
	_ Files = (*Table)(nil)
	_ Locks = (*LockTable)(nil)
)
