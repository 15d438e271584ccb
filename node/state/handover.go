package state

import (
	"context"
	"errors"
)

// Durable opens across nodes. A client whose connection broke may
// reconnect a durable open (DHnC, DH2C) through any node of a cluster:
// the node it reaches takes the open over from the node that held it. The
// open's entry at its file's owner — share modes, oplock or lease,
// byte-range locks — stays in force throughout and changes hands: it
// becomes the new node's open, and the old holder forgets its copy
// without running close semantics.

// HolderRef names an open cluster-wide: the node holding it, the node's
// epoch and the node's id for the open (Open.Ref).
type HolderRef struct {
	Node  string
	Epoch uint64
	ID    uint64
}

// DurableQuery is a durable reconnect as the node it reached asks the
// cluster for the open ([MS-SMB2] 3.3.5.9.7, 3.3.5.9.12): what names the
// open and what the holder checks before it gives it up.
type DurableQuery struct {
	FileID     uint64 // FileId.Persistent
	V2         bool   // DH2C: CreateGUID must match
	CreateGUID [16]byte
	ClientGUID [16]byte
	User       string
	Domain     string
	Share      string
	Name       string // the reconnect's file name
	LeaseKey   [16]byte
	HasLease   bool
}

// Handover is a detached durable open as its holder gave it up: its
// record and what a new holder needs to serve it.
type Handover struct {
	Rec           DurableRecord
	Name, Stream  string
	WirePath      bool // Name is the CREATE's name as on the wire (stream included), not the share's path
	Access        uint32
	ShareAccess   uint32
	DeleteOnClose bool
	Position      int64
	Allocation    int64 // the allocation size set through the open
	Caching       Caching
	Locks         []Lock
}

// ErrNoDurable is returned when no node holds the durable open a
// reconnect names.
var ErrNoDurable = errors.New("state: no node holds the durable open")

// DurableFiles is implemented by the state of a cluster (node/peer's
// Router), where a durable open may be held by another node.
type DurableFiles interface {
	// TakeDurable finds a detached durable open that another node holds
	// and makes it this node's: the returned open, not yet given a
	// Breaker, holds the handed-over entry at the file's owner. It
	// returns ErrNoDurable if no node holds the open, or the NTSTATUS
	// error with which its holder refused the reconnect.
	TakeDurable(ctx context.Context, q DurableQuery) (*Open, Handover, error)
	// GiveUp hands this node's open o, a detached durable open, over to
	// another node's open to: at the file's owner o's entry becomes to's,
	// and this node forgets o without closing it. It returns o's caching
	// and byte-range locks as the owner has them.
	GiveUp(o *Open, to HolderRef) (Caching, []Lock, error)
	// Forget forgets o, an open this node held, without closing it at
	// its file's owner: a fenced node's durable opens belong to the
	// cluster (their owners keep them for their clients to reconnect).
	Forget(o *Open)
	// CloseAppInstance closes the opens of application instance id that
	// user holds on share through the other nodes.
	CloseAppInstance(ctx context.Context, id [16]byte, share, user string)
}

// HeldEntry is a held open's entry at its file's owner, as its holder
// knows it: what another node needs to find and serve the open if the
// holder dies.
type HeldEntry struct {
	Ref         uint64 // the holder's id of the open at the owner
	Epoch       uint64 // the holder's epoch
	Key         FileKey
	Stream      string
	Access      uint32 // granted, as share modes count it
	ShareAccess uint32
	Caching     Caching
}
