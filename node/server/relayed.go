package server

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/signing"
)

// One connection, channels of sessions held by several nodes.
//
// A connection is handed over whole to the home node of the session it
// binds to (handoff.go). Once it is a channel of a session here that
// cannot move with it (one with opens, or with other channels), a binding
// to a session another node holds relays that session instead: this node
// keeps serving the connection — its credit window, its other sessions —
// and passes the frames of the other session to its home node (a
// session relay), which serves them on a connection of its own standing
// for this one (Adopt with CreditsAtRelay), and whose responses this node
// writes to the client as they come. The credit window stays here: each
// frame relayed has its message ids checked and its credits charged here,
// and travels with the grants (Grant) telling the home node how many
// credits each of its requests' responses grants (the first response,
// interim or final, as on one node). The home node signs and seals its
// responses with the session's keys, grants included.

// SessionRelay is this node's end of a session relay.
type SessionRelay interface {
	// Send passes msg, a message of the session the client sent, to the
	// session's node with the credits its requests' responses grant; it
	// may keep msg.
	Send(msg []byte, grants []Grant) error
	// Recv returns bytes the session's node sends the client, and
	// whether the next bytes continue the same write; io.EOF once that
	// node ended the relay.
	Recv() (p []byte, more bool, err error)
	// Open opens msg, a sealed message of the session, with the
	// session's keys (asked of its node once).
	Open(ctx context.Context, msg []byte) ([]byte, error)
	// Close ends the relay: the session's node ends the connection
	// standing for this one.
	Close()
}

// Grant is the credits the first response to a request grants, named by
// its message id.
type Grant struct {
	MessageID uint64
	Credits   uint16
}

// maxGrants bounds the grants of one relayed message: a compound's
// requests.
const maxGrants = 64

// errRelayed ends the dispatch of a message passed to a session relay.
var errRelayed = errors.New("relayed to the session's node")

// sessionRelay is the node end of a session relay: the session's frames
// go to its home node through rl.
type sessionRelay struct {
	id uint64
	rl SessionRelay
	mu sync.Mutex // Send is not safe for concurrent use
}

// relayGrants are the credits a relaying node granted, by message id: a
// connection adopted with CreditsAtRelay grants them, not its own window.
type relayGrants struct {
	mu sync.Mutex
	m  map[uint64]uint16
}

// grantFor returns the credits the response to the request h grants.
func (c *conn) grantFor(h *smb2.Header) uint16 {
	if g := c.relayed; g != nil {
		g.mu.Lock()
		defer g.mu.Unlock()
		n := g.m[h.MessageID]
		delete(g.m, h.MessageID)
		return n
	}
	return c.credits.grant(max(h.Credits, 1))
}

// Grant records the credits the node relaying the connection granted the
// requests of the message it relays next (SessionRelay.Send); an error
// ends the connection.
func (a *Adopted) Grant(grants []Grant) error {
	g := a.c.relayed
	switch {
	case g == nil:
		return errors.New("server: credits granted for a connection that keeps its own window")
	case len(grants) > maxGrants:
		return fmt.Errorf("server: %d grants for one message", len(grants))
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.m) > 1<<16 {
		return errors.New("server: too many credits granted and not answered")
	}
	for _, gr := range grants {
		g.m[gr.MessageID] = gr.Credits
	}
	return nil
}

// relayedSession returns the session relay msg, a message the client
// sent, goes to, or nil when it is served here.
func (c *conn) relayedSession(msg []byte) *sessionRelay {
	if !c.hasRelays.Load() || len(msg) < smb2.HeaderSize {
		return nil
	}
	var sid uint64
	switch binary.LittleEndian.Uint32(msg) {
	case smb2.TransformProtocolID:
		id, err := signing.ParseTransformHeader(msg)
		if err != nil {
			return nil
		}
		sid = id
	case smb2.ProtocolID:
		sid = binary.LittleEndian.Uint64(msg[40:])
	default:
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.relays[sid]
}

// relaySession opens a session relay to the node holding session sid,
// whose binding request h the connection received, and passes it msg.
// It returns errRelayed, or nil when no other node holds the session (the
// binding is then refused here, as on one node).
func (c *conn) relaySession(msg []byte, h *smb2.Header) error {
	st := c.handoffState()
	st.CreditsLow, st.CreditsHigh, st.CreditsUsed = 0, 0, nil
	st.CreditsAtRelay, st.Node = true, c.via
	ctx, cancel := context.WithTimeout(c.ctx, handoffWait)
	rl, err := c.srv.cfg.SessionPeers.RelaySession(ctx, h.SessionID, st)
	cancel()
	if err != nil {
		c.peersFailed(h.SessionID, err)
		return nil
	}
	sr := &sessionRelay{id: h.SessionID, rl: rl}
	c.mu.Lock()
	if c.closing || c.relays[h.SessionID] != nil {
		c.mu.Unlock()
		rl.Close()
		return nil
	}
	if c.relays == nil {
		c.relays = map[uint64]*sessionRelay{}
	}
	c.relays[h.SessionID] = sr
	c.hasRelays.Store(true)
	c.relaying.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.relaying.Done()
		if err := c.relayToClient(rl); err != nil {
			c.srv.log.Info("session relay ended", "remote", c.remote, "session", fmt.Sprintf("%#x", sr.id), "err", err)
		}
	}()
	c.srv.log.Debug("session relayed to its node", "remote", c.remote, "session", fmt.Sprintf("%#x", h.SessionID))
	if err := c.forwardRelayed(sr, msg); err != nil {
		return err
	}
	return errRelayed
}

// forwardRelayed passes msg, a message of the session sr relays, to its
// node, with the credits its requests' responses grant, after charging
// them here as dispatch does. A sealed message is opened (with the
// session's keys) to read its requests' headers.
func (c *conn) forwardRelayed(sr *sessionRelay, msg []byte) error {
	if !c.srv.cfg.Control.Valid() { // fenced: pass nothing on either (cluster.go)
		return dropError{errFenced}
	}
	plain := msg
	if binary.LittleEndian.Uint32(msg) == smb2.TransformProtocolID {
		var err error
		if plain, err = sr.rl.Open(c.ctx, msg); err != nil {
			return dropError{fmt.Errorf("opening a relayed session's message: %w", err)}
		}
	}
	pdus, err := smb2.SplitCompound(plain)
	if err != nil || len(pdus) == 0 || len(pdus) > maxGrants {
		return dropError{fmt.Errorf("bad message: %v", err)}
	}
	grants := make([]Grant, 0, len(pdus))
	for _, p := range pdus {
		var h smb2.Header
		if err := h.Decode(p); err != nil {
			return dropError{err}
		}
		if h.Command == smb2.CmdCancel {
			continue
		}
		if err := c.charge(&h); err != nil {
			return dropError{err}
		}
		grants = append(grants, Grant{MessageID: h.MessageID, Credits: c.grantFor(&h)})
	}
	out := make([]byte, 4+len(msg)) // Send may keep it; msg goes back to the pool
	smb2.PutTransportHeader(out, len(msg))
	copy(out[4:], msg)
	sr.mu.Lock()
	err = sr.rl.Send(out, grants)
	sr.mu.Unlock()
	if err != nil {
		return dropError{fmt.Errorf("relaying session %#x: %w", sr.id, err)}
	}
	return nil
}

// relayToClient writes what a session's node sends the client, a whole
// write at a time (a write cut in chunks holds wmu until its last).
func (c *conn) relayToClient(rl SessionRelay) error {
	held := false
	defer func() {
		if held {
			c.wmu.Unlock()
		}
	}()
	for {
		p, more, err := rl.Recv()
		if err != nil {
			c.nc.Close() // ends the read side
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return err
		}
		if !held {
			c.wmu.Lock()
			held = true
		}
		if err := c.bw.Write(p); err != nil {
			c.nc.Close()
			return err
		}
		if !more {
			c.wmu.Unlock()
			held = false
		}
	}
}

// closeRelays ends the connection's session relays: the home nodes end
// their connections standing for it.
func (c *conn) closeRelays() {
	c.mu.Lock()
	relays := c.relays
	c.relays = nil
	c.mu.Unlock()
	for _, sr := range relays {
		sr.mu.Lock()
		sr.rl.Close()
		sr.mu.Unlock()
	}
}
