package state

import (
	"context"
	"time"
)

// Lease states ([MS-SMB2] 2.2.13.2.8); an oplock is held as the lease state
// it amounts to: level II is R, exclusive RW, batch RWH.
const (
	LeaseNone   uint32 = 0
	LeaseRead   uint32 = 0x01
	LeaseHandle uint32 = 0x02
	LeaseWrite  uint32 = 0x04
)

// LeaseID names a lease: the ClientGuid of its client and its LeaseKey
// ([MS-SMB2] 3.3.1.11, the GlobalLeaseTableList keyed by ClientGuid).
type LeaseID struct {
	Client [16]byte
	Key    [16]byte
}

// LeaseRequest is an SMB2_CREATE_REQUEST_LEASE(_V2) context of a CREATE.
type LeaseRequest struct {
	ID        LeaseID
	State     uint32
	Version   int // 1 or 2
	Epoch     uint16
	ParentKey [16]byte
	HasParent bool
}

// LeaseGrant is what a CREATE answers in its lease response context.
type LeaseGrant struct {
	Key             [16]byte
	State           uint32
	BreakInProgress bool
	Version         int
	Epoch           uint16
	ParentKey       [16]byte
	HasParent       bool
}

// LeaseBreak is a lease break notification to deliver ([MS-SMB2] 2.2.23.2).
type LeaseBreak struct {
	ID          LeaseID
	From, To    uint32
	Epoch       uint16 // NewEpoch, for version 2 leases
	Version     int
	AckRequired bool
}

// Breaker delivers oplock and lease breaks to the client holding an open.
// It must not block on the client: the acknowledgment arrives through Ack
// or AckLease. A lease break may go out on any connection of the client.
type Breaker interface {
	BreakOplock(to uint8) error
	BreakLease(b LeaseBreak) error
}

// holder is one caching grant: a lease shared by the opens of one client
// with one lease key, or the oplock of a single open.
type holder struct {
	id      LeaseID
	isLease bool
	file    FileKey
	stream  string // the named stream its opens opened, "" for the file
	opens   []*Open

	state    uint32
	breaking bool          // a break awaits its acknowledgment
	breakTo  uint32        // the state the client was asked to break to
	required uint32        // the state the waiting opens need (at most breakTo)
	acked    chan struct{} // closed when the pending break ends
	gen      int           // counts breaks, so a stale timer does nothing
	timer    *time.Timer   // the break acknowledgment timer
	started  time.Time     // when the pending break began

	version   int
	epoch     uint16
	parentKey [16]byte
	hasParent bool
	dir       bool // a lease on a directory (dirlease.go)
}

// breakMsg is a break to send once the table's mutex is released.
type breakMsg struct {
	h       *holder
	gen     int
	lease   LeaseBreak
	oplock  uint8
	targets []Breaker
}

func stateOf(level uint8) uint32 {
	switch level {
	case OplockLevelII:
		return LeaseRead
	case OplockExclusive:
		return LeaseRead | LeaseWrite
	case OplockBatch:
		return LeaseRead | LeaseWrite | LeaseHandle
	}
	return LeaseNone
}

func levelOf(s uint32) uint8 {
	switch {
	case s&(LeaseWrite|LeaseHandle) == LeaseWrite|LeaseHandle:
		return OplockBatch
	case s&LeaseWrite != 0:
		return OplockExclusive
	case s&LeaseRead != 0:
		return OplockLevelII
	}
	return OplockNone
}

// startBreak begins breaking h to the state to ([MS-SMB2] 3.3.4.6,
// 3.3.4.7) and returns the notification to send, or nil if h is already
// breaking (the pending break then goes on down to to once acknowledged).
// A break that needs no acknowledgment takes effect at once. A version 2
// lease gets a new epoch, except for a break that continues an
// acknowledged one (keepEpoch), as Windows does. The caller holds t.mu.
func (t *Table) startBreak(h *holder, to uint32, keepEpoch bool) *breakMsg {
	if h.breaking {
		h.required &= to
		return nil
	}
	if h.state&^to == 0 {
		return nil
	}
	m := &breakMsg{h: h}
	for _, o := range h.opens {
		if o.Breaker != nil {
			m.targets = append(m.targets, o.Breaker)
		}
	}
	ackRequired := h.state&LeaseWrite != 0 || h.isLease && h.state&LeaseHandle != 0
	if h.isLease {
		if h.version >= 2 && !keepEpoch {
			h.epoch++
		}
		m.lease = LeaseBreak{ID: h.id, From: h.state, To: to, Epoch: h.epoch, Version: h.version, AckRequired: ackRequired}
	} else {
		m.oplock = levelOf(to & LeaseRead)
	}
	if !ackRequired {
		h.state = to
		return m
	}
	h.breaking, h.breakTo, h.required = true, to, to
	h.acked = make(chan struct{})
	h.gen++
	gen := h.gen
	m.gen = gen
	h.started = time.Now()
	h.timer = time.AfterFunc(t.BreakTimeout, func() { t.timeout(h, gen) })
	return m
}

// send delivers the breaks; a break that reaches no connection of its
// client counts as acknowledged to none.
func (t *Table) send(msgs []*breakMsg) {
	for _, m := range msgs {
		delivered := false
		for _, b := range m.targets {
			var err error
			if m.h.isLease {
				err = b.BreakLease(m.lease)
			} else {
				err = b.BreakOplock(m.oplock)
			}
			if err == nil {
				delivered = true
				break
			}
		}
		if !delivered {
			t.expire(m.h, m.gen)
		}
	}
}

// expire ends break gen of h without an acknowledgment: the holder is
// left with nothing ([MS-SMB2] 3.3.6.5, the lease break acknowledgment
// timer).
func (t *Table) expire(h *holder, gen int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !h.breaking || h.gen != gen {
		return false
	}
	h.breaking, h.state = false, LeaseNone
	close(h.acked)
	return true
}

// timeout is expire for the acknowledgment timer: a break that ends so
// is told to Table.BreakTimedOut.
func (t *Table) timeout(h *holder, gen int) {
	if !t.expire(h, gen) || t.BreakTimedOut == nil {
		return
	}
	t.mu.Lock()
	d := time.Since(h.started)
	var holders []Breaker
	for _, o := range h.opens {
		if o.Breaker != nil {
			holders = append(holders, o.Breaker)
		}
	}
	t.mu.Unlock()
	t.BreakTimedOut(h.isLease, d, holders)
}

// AckLease records the client's acknowledgment of a lease break
// ([MS-SMB2] 3.3.5.22.2). If the opens waiting need the lease broken
// further, the next break goes out at once.
func (t *Table) AckLease(id LeaseID, state uint32) (uint32, error) {
	t.mu.Lock()
	h := t.leases[id]
	switch {
	case h == nil:
		t.mu.Unlock()
		return 0, ErrNoLease
	case !h.breaking:
		t.mu.Unlock()
		return 0, ErrNotBreaking
	case state&^h.breakTo != 0:
		t.mu.Unlock()
		return 0, ErrAckNotAccepted
	}
	m := t.finishBreak(h, state)
	t.mu.Unlock()
	if m != nil {
		t.send([]*breakMsg{m})
	}
	return state, nil
}

// finishBreak ends h's pending break at state and starts the next one if
// the waiting opens need less. Windows breaks a handle lease in steps:
// RH to R first, then R to none. The caller holds t.mu.
func (t *Table) finishBreak(h *holder, state uint32) *breakMsg {
	h.breaking, h.state = false, state
	h.timer.Stop()
	if t.BreakAcked != nil {
		t.BreakAcked(h.isLease, time.Since(h.started))
	}
	close(h.acked)
	required := h.required
	if state&^required == 0 {
		return nil
	}
	to := required
	if h.isLease && state&LeaseHandle != 0 && to&LeaseHandle == 0 {
		to |= state & LeaseRead
	}
	m := t.startBreak(h, to, true)
	h.required = required
	return m
}

// Ack records the acknowledgment of a pending oplock break (or its
// timeout) and sets the open's oplock to level, at most the level the
// break asked for ([MS-SMB2] 3.3.5.22.1). It reports false if no break was
// pending.
func (t *Table) Ack(o *Open, level uint8) bool {
	t.mu.Lock()
	h := o.h
	if h == nil || h.isLease || !h.breaking {
		t.mu.Unlock()
		return false
	}
	m := t.finishBreak(h, stateOf(min(level, levelOf(h.breakTo))))
	t.mu.Unlock()
	if m != nil {
		t.send([]*breakMsg{m})
	}
	return true
}

// BreakRead breaks the read caching of the leases and level II oplocks of
// except's stream to none, as a write or truncate through except does ([MS-FSA]
// 2.1.5.17, [MS-SMB2] 3.3.4.7): except's own lease keeps its state, but
// its own level II oplock breaks too, as Windows does. It does not wait.
func (t *Table) BreakRead(key FileKey, except *Open) {
	t.mu.Lock()
	var msgs []*breakMsg
	var skip *holder
	if h := except.h; h != nil && (h.isLease || h.state&LeaseWrite != 0) {
		skip = h // the writer's own lease, exclusive or batch oplock stays
	}
	if f := t.files[key]; f != nil {
		for _, h := range streamHolders(f, except.Stream, skip) {
			if h.state&LeaseRead == 0 {
				continue
			}
			if m := t.startBreak(h, LeaseNone, false); m != nil {
				msgs = append(msgs, m)
			}
		}
	}
	t.mu.Unlock()
	t.send(msgs)
}

// BreakLevelII is BreakRead, under the name the oplock-only table had.
func (t *Table) BreakLevelII(key FileKey, except *Open) { t.BreakRead(key, except) }

// holders lists the distinct holders of f's opens but skip.
func holders(f *file, skip *holder) []*holder {
	return holdersOf(f, skip, func(*Open) bool { return true })
}

// streamHolders lists the distinct holders of f's opens of stream but skip.
func streamHolders(f *file, stream string, skip *holder) []*holder {
	return holdersOf(f, skip, func(e *Open) bool { return e.Stream == stream })
}

func holdersOf(f *file, skip *holder, match func(*Open) bool) []*holder {
	var hs []*holder
	for _, e := range f.opens {
		h := e.h
		if h == nil || h == skip || !match(e) {
			continue
		}
		dup := false
		for _, x := range hs {
			dup = dup || x == h
		}
		if !dup {
			hs = append(hs, h)
		}
	}
	return hs
}

// detach takes o out of its holder; a holder left without opens goes,
// ending any break in progress. The caller holds t.mu.
func (t *Table) detach(o *Open) {
	h := o.h
	if h == nil {
		return
	}
	o.h = nil
	for i, e := range h.opens {
		if e == o {
			h.opens = append(h.opens[:i], h.opens[i+1:]...)
			break
		}
	}
	if len(h.opens) > 0 {
		return
	}
	if h.breaking {
		h.breaking = false
		h.timer.Stop()
		close(h.acked)
	}
	if h.isLease && t.leases[h.id] == h {
		delete(t.leases, h.id)
	}
	if h.dir {
		t.dirLeases.Add(-1)
	}
}

// LeaseState reports the state of a lease, for tests and diagnostics.
func (t *Table) LeaseState(id LeaseID) (state uint32, breaking, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.leases[id]
	if h == nil {
		return 0, false, false
	}
	return h.state, h.breaking, true
}

// BreakHandle breaks the handle caching of every other lease on the file,
// as a rename or a pending delete of the file needs the cached handles
// closed ([MS-SMB2] 3.3.4.7); for an except of a named stream, only the
// leases on that stream. With a non-nil ctx it waits until those
// breaks are acknowledged or time out (calling onWait once before the
// first wait); with a nil ctx it does not wait.
func (t *Table) BreakHandle(ctx context.Context, key FileKey, except *Open, onWait func()) error {
	for {
		t.mu.Lock()
		var msgs []*breakMsg
		var wait <-chan struct{}
		if f := t.files[key]; f != nil {
			hs := holders(f, except.h)
			if except.Stream != "" {
				hs = streamHolders(f, except.Stream, except.h)
			}
			for _, h := range hs {
				if !h.isLease || h.state&LeaseHandle == 0 {
					continue
				}
				if m := t.startBreak(h, h.state&^LeaseHandle, false); m != nil {
					msgs = append(msgs, m)
				}
				if h.breaking {
					wait = h.acked
				}
			}
		}
		t.mu.Unlock()
		t.send(msgs)
		if wait == nil || ctx == nil {
			return nil
		}
		if onWait != nil {
			onWait()
			onWait = nil
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
