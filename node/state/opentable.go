package state

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// FileKey identifies a file across nodes: the volume and the file id.
type FileKey struct {
	Volume uint64
	FileID uint64
}

// Oplock levels ([MS-SMB2] 2.2.13), in increasing strength.
const (
	OplockNone      uint8 = 0x00
	OplockLevelII   uint8 = 0x01
	OplockExclusive uint8 = 0x08
	OplockBatch     uint8 = 0x09
)

// Access bits that take part in share-mode checks ([MS-FSA] 2.1.5.1.2).
const (
	accessReadData  = 0x0001
	accessWriteData = 0x0002
	accessAppend    = 0x0004
	accessExecute   = 0x0020
	accessReadAttr  = 0x0080
	accessWriteAttr = 0x0100
	accessReadCtl   = 0x00020000
	accessSync      = 0x00100000
	accessDelete    = 0x00010000

	shareRead   = 1
	shareWrite  = 2
	shareDelete = 4
)

// Errors of the open table; the share layer maps them to NTSTATUS.
var (
	ErrSharingViolation = errors.New("state: sharing violation")
	ErrDeletePending    = errors.New("state: delete pending")
	ErrLeaseKeyInUse    = errors.New("state: lease key in use on another file")
	// ErrDuplicateCreate refuses an open whose CREATE names, with a DH2Q
	// and without SMB2_FLAGS_REPLAY_OPERATION, the ClientGuid and
	// CreateGuid of an open of the file held by another node
	// (STATUS_DUPLICATE_OBJECTID, [MS-SMB2] 3.3.5.9.10).
	ErrDuplicateCreate = errors.New("state: CreateGuid in use by an open on another node")
	ErrNoLease         = errors.New("state: no such lease")
	ErrNotBreaking     = errors.New("state: no lease break pending")
	ErrAckNotAccepted  = errors.New("state: acknowledged lease state not a subset of the break")
)

// Open is one open's entry in the table.
type Open struct {
	Key         FileKey
	Name        string // share-relative path, kept current by Rename
	Stream      string // the named data stream opened, "" for the file itself
	Access      uint32
	ShareAccess uint32
	Breaker     Breaker
	// Ref names the open to the other nodes of a cluster (node/peer sets
	// it when it admits the open; zero on a single node).
	Ref uint64
	// Create names the CREATE that made the open when it carried a DH2Q
	// (its client's ClientGuid and the CreateGuid), zero otherwise; Origin
	// is the node that holds the open, "" for the table's own node's
	// (node/peer sets it for another node's). See ErrDuplicateCreate.
	Create CreateID
	Origin string

	h *holder // guarded by the table's mutex: the open's oplock or lease, nil if none
}

// CreateID names a CREATE with a DH2Q: the client's ClientGuid and the
// CreateGuid ([MS-SMB2] 3.3.5.9.10).
type CreateID struct{ Client, Create [16]byte }

// Oplock returns the open's current oplock level (none for a lease).
func (t *Table) Oplock(o *Open) uint8 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if o.h == nil || o.h.isLease {
		return OplockNone
	}
	return levelOf(o.h.state)
}

// file is one file's opens, of all its data streams: each stream is its
// own object for share modes and caching ([MS-FSA] 2.1.5.1.2), but the
// file's pending delete holds for all of them.
type file struct {
	opens         []*Open
	deletePending bool            // of the file itself
	streamPending map[string]bool // of named streams
}

// Table is one node's open and lease table. It is safe for concurrent use.
type Table struct {
	// BreakTimeout bounds the wait for an oplock or lease break
	// acknowledgment ([MS-SMB2] 3.3.2.1, 35 s by default).
	BreakTimeout time.Duration
	// BreakAcked, if set, is told how long each break that needed an
	// acknowledgment took to get it; it is called under the table's
	// mutex and must not block. BreakTimedOut is told of each that timed
	// out instead, with the Breakers of its opens; it is called without
	// the mutex. Both are set before the table is used (metrics, logs).
	BreakAcked    func(lease bool, d time.Duration)
	BreakTimedOut func(lease bool, d time.Duration, holders []Breaker)

	mu     sync.Mutex
	files  map[FileKey]*file
	leases map[LeaseID]*holder

	dirLeases atomic.Int32 // holders of directory leases (dirlease.go)
}

// NewTable returns an empty table.
func NewTable() *Table {
	return &Table{BreakTimeout: 35 * time.Second, files: map[FileKey]*file{}, leases: map[LeaseID]*holder{}}
}

// conflicts reports whether the share modes of an existing open e and a
// new open o exclude each other ([MS-FSA] 2.1.5.1.2). Opens of different
// streams conflict only in one way: an open of the file itself for
// DELETE is refused while a named stream is open without
// FILE_SHARE_DELETE, since deleting the file deletes its streams.
func conflicts(e, o *Open) bool {
	const data = accessReadData | accessWriteData | accessAppend | accessExecute | accessDelete
	if e.Access&data == 0 || o.Access&data == 0 {
		return false
	}
	if e.Stream != o.Stream {
		return o.Stream == "" && o.Access&accessDelete != 0 && e.ShareAccess&shareDelete == 0
	}
	return denies(e.ShareAccess, o.Access) || denies(o.ShareAccess, e.Access)
}

// denies reports whether sharing share refuses access.
func denies(share, access uint32) bool {
	return share&shareRead == 0 && access&(accessReadData|accessExecute) != 0 ||
		share&shareWrite == 0 && access&(accessWriteData|accessAppend) != 0 ||
		share&shareDelete == 0 && access&accessDelete != 0
}

// Remove drops o from the table. It reports whether o was the file's last
// open and whether a delete is pending, in which case the caller deletes
// the file.
func (t *Table) Remove(o *Open) (last, deletePending bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.detach(o)
	f := t.files[o.Key]
	if f == nil {
		return true, false
	}
	for i, e := range f.opens {
		if e == o {
			f.opens = append(f.opens[:i], f.opens[i+1:]...)
			break
		}
	}
	if len(f.opens) > 0 {
		return false, false
	}
	delete(t.files, o.Key)
	return true, f.deletePending
}

// Drop takes o out of the table and reports what its close deletes: its
// stream, when it was the stream's last open and the stream has a delete
// pending, or the whole file, when it was the last open of any of the
// file's streams and the file has a delete pending ([MS-FSA] 2.1.5.4).
func (t *Table) Drop(o *Open) (deleteStream, deleteFile bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.detach(o)
	f := t.files[o.Key]
	if f == nil {
		return false, false
	}
	streamLeft := false
	for i := 0; i < len(f.opens); i++ {
		if f.opens[i] == o {
			f.opens = append(f.opens[:i], f.opens[i+1:]...)
			i--
			continue
		}
		streamLeft = streamLeft || f.opens[i].Stream == o.Stream
	}
	if o.Stream != "" && !streamLeft && f.streamPending[o.Stream] {
		delete(f.streamPending, o.Stream)
		deleteStream = true
	}
	if len(f.opens) > 0 {
		return deleteStream, false
	}
	delete(t.files, o.Key)
	return deleteStream, f.deletePending
}

// MarkDeletePending marks (or unmarks) for deletion what o opened: the
// file, or its named stream. Opens of it arriving meanwhile fail with
// ErrDeletePending; a pending delete of the file refuses opens of all
// its streams.
func (t *Table) MarkDeletePending(o *Open, on bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.files[o.Key]
	switch {
	case f == nil:
	case o.Stream == "":
		f.deletePending = on
	case on:
		if f.streamPending == nil {
			f.streamPending = map[string]bool{}
		}
		f.streamPending[o.Stream] = true
	default:
		delete(f.streamPending, o.Stream)
	}
}

// SetDeletePending marks (or unmarks) the file for deletion when its last
// open closes; opens arriving meanwhile fail with ErrDeletePending.
func (t *Table) SetDeletePending(key FileKey, on bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if f := t.files[key]; f != nil {
		f.deletePending = on
	}
}

// DeletePending reports whether the file has a delete pending.
func (t *Table) DeletePending(key FileKey) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.files[key]
	return f != nil && f.deletePending
}

// CheckRename reports ErrSharingViolation if another open of o's file does
// not share delete access ([MS-FSA] 2.1.5.15.11: a rename needs it).
func (t *Table) CheckRename(o *Open) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.files[o.Key]
	if f == nil {
		return nil
	}
	for _, e := range f.opens {
		if e != o && e.ShareAccess&shareDelete == 0 {
			return ErrSharingViolation
		}
	}
	return nil
}

// Renamed records o's file under its new name, for every open of it.
func (t *Table) Renamed(key FileKey, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if f := t.files[key]; f != nil {
		for _, e := range f.opens {
			e.Name = name
		}
	}
}

// NameOf returns the name of o's file, which Renamed keeps current for
// every open of it.
func (t *Table) NameOf(o *Open) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return o.Name
}

// HasOpenBelow reports whether any open names a path inside directory dir.
func (t *Table) HasOpenBelow(dir string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	prefix := dir + "/"
	for _, f := range t.files {
		for _, e := range f.opens {
			if len(e.Name) > len(prefix) && e.Name[:len(prefix)] == prefix {
				return true
			}
		}
	}
	return false
}

// CheckAccess reports ErrSharingViolation if an open of key with access and
// share would conflict with the file's current opens. A rename uses it for
// the directories it changes, as if it opened them for adding a file.
func (t *Table) CheckAccess(key FileKey, access, share uint32) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.files[key]
	if f == nil {
		return nil
	}
	probe := &Open{Access: access, ShareAccess: share}
	for _, e := range f.opens {
		if e.Stream == "" && conflicts(e, probe) {
			return ErrSharingViolation
		}
	}
	return nil
}

// StreamOpen reports whether an open other than except has the data
// stream stream of key's file open ("" for the unnamed one).
func (t *Table) StreamOpen(key FileKey, stream string, except *Open) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if f := t.files[key]; f != nil {
		for _, e := range f.opens {
			if e != except && e.Stream == stream {
				return true
			}
		}
	}
	return false
}

// StreamOf returns the data stream o has open, which RenamedStream keeps
// current.
func (t *Table) StreamOf(o *Open) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return o.Stream
}

// RenamedStream records that the named stream from of key's file is now
// called to: its opens, leases and pending delete follow it ([MS-FSA]
// 2.1.5.15.12.1).
func (t *Table) RenamedStream(key FileKey, from, to string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.files[key]
	if f == nil {
		return
	}
	for _, e := range f.opens {
		if e.Stream != from {
			continue
		}
		e.Stream = to
		if e.h != nil {
			e.h.stream = to
		}
	}
	if f.streamPending[from] {
		delete(f.streamPending, from)
		f.streamPending[to] = true
	}
}

// Delegable reports whether opens with access and share could all be
// open together without one refusing another, and none of them asks for
// delete access: the opens a node in a cluster may admit by itself under
// an admission delegation of their file (node/peer).
func Delegable(access, share uint32) bool {
	return access&accessDelete == 0 && !denies(share, access)
}

// Caches reports whether an open of the file (of any stream) has an
// oplock or lease with some caching, or one being broken.
func (t *Table) Caches(key FileKey) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.files[key]
	if f == nil {
		return false
	}
	for _, o := range f.opens {
		if o.h != nil && (o.h.state != LeaseNone || o.h.breaking) {
			return true
		}
	}
	return false
}
