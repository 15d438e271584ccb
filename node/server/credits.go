package server

import (
	"errors"
	"fmt"
	"sync"

	"github.com/smbcluster/smbcluster/node/smb2"
)

// errBadMessageID drops the connection: a message id outside the granted
// window, or one used twice ([MS-SMB2] 3.3.5.2.3).
var errBadMessageID = errors.New("server: message id outside the credit window")

// creditWindow tracks the message ids a client may use ([MS-SMB2] 3.3.1.1):
// ids in [low, high) are granted; used ids below high are marked in a ring of
// bits so that ids may complete out of order. high-low never exceeds the ring.
type creditWindow struct {
	mu   sync.Mutex
	low  uint64 // lowest id not yet used
	high uint64 // one past the highest id granted
	max  uint64 // size of the ring of used bits: limit rounded up to 64
	lim  uint64 // window size limit (Config.MaxCredits)
	used []uint64
}

func newCreditWindow(max uint16) *creditWindow {
	n := (uint64(max) + 63) / 64
	return &creditWindow{high: 1, max: n * 64, lim: uint64(max), used: make([]uint64, n)}
}

func (w *creditWindow) bit(id uint64) (int, uint64) {
	i := id % w.max
	return int(i / 64), 1 << (i % 64)
}

// consume marks ids [id, id+charge) as used.
func (w *creditWindow) consume(id uint64, charge uint16) error {
	if charge == 0 {
		charge = 1
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	end := id + uint64(charge)
	if id < w.low || end > w.high || end < id {
		return errBadMessageID
	}
	for m := id; m < end; m++ {
		i, b := w.bit(m)
		if w.used[i]&b != 0 {
			return errBadMessageID
		}
	}
	for m := id; m < end; m++ {
		i, b := w.bit(m)
		w.used[i] |= b
	}
	for w.low < w.high {
		i, b := w.bit(w.low)
		if w.used[i]&b == 0 {
			break
		}
		w.used[i] &^= b
		w.low++
	}
	return nil
}

// charge marks the message ids request h uses in the connection's window
// ([MS-SMB2] 3.3.5.2.3: CreditCharge of them, one before 2.1 or before
// NEGOTIATE); an error drops the connection.
func (c *conn) charge(h *smb2.Header) error {
	charge := h.CreditCharge
	if c.dialect == smb2.Dialect202 || !c.negotiated {
		charge = 1
	}
	if err := c.credits.consume(h.MessageID, charge); err != nil {
		return fmt.Errorf("%w: mid %d charge %d", err, h.MessageID, charge)
	}
	return nil
}

// grant extends the window by up to want credits (at least one when the
// client would otherwise hold none) and returns the number granted.
func (w *creditWindow) grant(want uint16) uint16 {
	w.mu.Lock()
	defer w.mu.Unlock()
	outstanding := w.high - w.low
	room := w.lim - min(outstanding, w.lim)
	g := uint64(want)
	if g == 0 && outstanding == 0 {
		g = 1
	}
	g = min(g, room)
	w.high += g
	return uint16(g)
}

// inWindow reports whether id could be a pending request (for CANCEL).
func (w *creditWindow) outstanding() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.high - w.low
}

// snapshot returns the window's state, for a connection handed to
// another node (handoff.go).
func (w *creditWindow) snapshot() (low, high uint64, used []uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.low, w.high, append([]uint64(nil), w.used...)
}

// restore sets the window to a snapshot another node's window took.
func (w *creditWindow) restore(low, high uint64, used []uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if high < low || high-low > w.lim || len(used) != len(w.used) {
		return errors.New("server: credit window of another size")
	}
	w.low, w.high = low, high
	copy(w.used, used)
	return nil
}
