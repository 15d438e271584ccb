package state

import (
	"context"
	"errors"
	"sync"
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
	accessDelete    = 0x00010000

	shareRead   = 1
	shareWrite  = 2
	shareDelete = 4
)

// Errors of the open table; the share layer maps them to NTSTATUS.
var (
	ErrSharingViolation = errors.New("state: sharing violation")
	ErrDeletePending    = errors.New("state: delete pending")
)

// Breaker delivers an oplock break to the client holding an open. It must
// not block on the client: the acknowledgment arrives through Ack.
type Breaker interface {
	BreakOplock(to uint8) error
}

// Open is one open's entry in the table.
type Open struct {
	Key         FileKey
	Name        string // share-relative path, kept current by Rename
	Access      uint32
	ShareAccess uint32
	Breaker     Breaker

	// Guarded by the table's mutex.
	oplock   uint8
	breaking bool
	breakTo  uint8
	acked    chan struct{} // closed when a pending break is acknowledged or times out
}

// Oplock returns the open's current oplock level.
func (t *Table) Oplock(o *Open) uint8 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return o.oplock
}

type file struct {
	opens         []*Open
	deletePending bool
}

// Table is one node's open table. It is safe for concurrent use.
type Table struct {
	// BreakTimeout bounds the wait for an oplock break acknowledgment
	// ([MS-SMB2] 3.3.2.1, 35 s by default).
	BreakTimeout time.Duration

	mu    sync.Mutex
	files map[FileKey]*file
}

// NewTable returns an empty table.
func NewTable() *Table {
	return &Table{BreakTimeout: 35 * time.Second, files: map[FileKey]*file{}}
}

// Admit adds o to its file's opens if its access and sharing are compatible
// with the opens already there, first breaking the oplocks that stand in
// the way (waiting for their acknowledgment or the break timeout). It
// returns the oplock granted for the requested level.
// onWait, if not nil, is called once before the first wait.
func (t *Table) Admit(ctx context.Context, o *Open, want uint8, breakToNone bool, onWait func()) (uint8, error) {
	for {
		wait, err := t.tryAdmit(o, want, breakToNone)
		if err != nil || wait == nil {
			return o.oplock, err
		}
		if onWait != nil {
			onWait()
			onWait = nil
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return OplockNone, ctx.Err()
		}
	}
}

// tryAdmit admits o, or starts the breaks it needs and returns a channel
// to wait on before trying again.
func (t *Table) tryAdmit(o *Open, want uint8, breakToNone bool) (<-chan struct{}, error) {
	t.mu.Lock()
	f := t.files[o.Key]
	if f == nil {
		f = &file{}
		t.files[o.Key] = f
	}
	if f.deletePending {
		t.mu.Unlock()
		return nil, ErrDeletePending
	}
	// Exclusive and batch oplocks of other opens break before the share
	// modes are judged: the holder may close and lift the conflict.
	var breaks []*Open
	var wait <-chan struct{}
	for _, e := range f.opens {
		if e.oplock >= OplockExclusive || e.breaking {
			if !e.breaking {
				e.breaking, e.breakTo, e.acked = true, OplockLevelII, make(chan struct{})
				if breakToNone {
					e.breakTo = OplockNone
				}
				breaks = append(breaks, e)
			}
			wait = e.acked
		}
	}
	if wait != nil {
		t.mu.Unlock()
		for _, e := range breaks {
			t.sendBreak(e)
		}
		return wait, nil
	}
	for _, e := range f.opens {
		if conflicts(e, o) {
			t.mu.Unlock()
			return nil, ErrSharingViolation
		}
	}
	o.oplock = grant(f, want)
	f.opens = append(f.opens, o)
	t.mu.Unlock()
	return nil, nil
}

// grant decides the oplock for a new open given the file's other opens.
func grant(f *file, want uint8) uint8 {
	switch {
	case want == OplockNone:
		return OplockNone
	case len(f.opens) == 0 && (want == OplockExclusive || want == OplockBatch):
		return want
	}
	for _, e := range f.opens {
		if e.oplock > OplockLevelII {
			return OplockNone
		}
	}
	return OplockLevelII
}

// sendBreak asks the holder to break, and arms the timeout after which
// the break counts as acknowledged to none.
func (t *Table) sendBreak(e *Open) {
	t.mu.Lock()
	to, acked := e.breakTo, e.acked
	t.mu.Unlock()
	if e.Breaker == nil || e.Breaker.BreakOplock(to) != nil {
		t.Ack(e, OplockNone)
		return
	}
	timer := time.AfterFunc(t.BreakTimeout, func() { t.Ack(e, OplockNone) })
	go func() {
		<-acked
		timer.Stop()
	}()
}

// Ack records the acknowledgment of a pending break (or its timeout) and
// sets the open's oplock to level. It reports false if no break was pending.
func (t *Table) Ack(o *Open, level uint8) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !o.breaking {
		return false
	}
	o.breaking = false
	o.oplock = min(level, o.breakTo)
	close(o.acked)
	return true
}

// BreakLevelII breaks every level II oplock on the file except except's to
// none, as a write or truncate does ([MS-FSA] 2.1.5.17); no acknowledgment
// is awaited.
func (t *Table) BreakLevelII(key FileKey, except *Open) {
	t.mu.Lock()
	var breaks []*Open
	if f := t.files[key]; f != nil {
		for _, e := range f.opens {
			if e != except && e.oplock == OplockLevelII {
				e.oplock = OplockNone
				breaks = append(breaks, e)
			}
		}
	}
	t.mu.Unlock()
	for _, e := range breaks {
		if e.Breaker != nil {
			e.Breaker.BreakOplock(OplockNone)
		}
	}
}

// conflicts reports whether the share modes of an existing open e and a
// new open o exclude each other ([MS-FSA] 2.1.5.1.2).
func conflicts(e, o *Open) bool {
	const data = accessReadData | accessWriteData | accessAppend | accessExecute | accessDelete
	if e.Access&data == 0 || o.Access&data == 0 {
		return false
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
	if o.breaking {
		o.breaking = false
		close(o.acked)
	}
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
		if conflicts(e, probe) {
			return ErrSharingViolation
		}
	}
	return nil
}
