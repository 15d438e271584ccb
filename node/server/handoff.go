package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/signing"
)

// Channels of one session on several nodes of a cluster.
//
// A session lives on the node that authenticated it, its home, with its
// trees and opens. A client that binds a channel to it through another
// node (a SESSION_SETUP with SMB2_SESSION_FLAG_BINDING whose session this
// node does not hold) has its connection handed over: the arrival node
// asks the cluster which node holds the session, passes it the
// connection's negotiated state (HandoffState) and the binding request,
// and from then on only carries the connection's bytes both ways (the
// Relay). The home node serves the handed-over connection as one of its
// own (Adopt): the binding, its signing keys, every later request, async
// completions and breaks all happen there, under one session table, so
// that a channel bound on another node behaves exactly as one bound on the
// same node.

// SessionPeers is how a server reaches the sessions that other nodes of
// its cluster hold; nil on a single node.
type SessionPeers interface {
	// Handoff finds the node holding session id and hands it the
	// connection whose state is st. The Carrier returned carries the
	// connection's bytes to and from that node once the engine gives the
	// connection up (hijack.go). It returns ErrNoSession when no other
	// node holds the session.
	Handoff(ctx context.Context, id uint64, st *HandoffState) (Carrier, error)
	// RelaySession finds the node holding session id and relays to it the
	// frames of that session on the connection whose state is st, which
	// stays here (relayed.go; st.CreditsAtRelay). It returns ErrNoSession
	// when no other node holds the session.
	RelaySession(ctx context.Context, id uint64, st *HandoffState) (SessionRelay, error)
	// EndPrevious ends session id on whichever other node holds it, if
	// user owns it ([MS-SMB2] 3.3.5.5.3, PreviousSessionId); newID is the
	// session replacing it, for the log.
	EndPrevious(ctx context.Context, id uint64, user string, newID uint64)
	// SendLeaseBreak sends n on the oldest connection of client guid in
	// the cluster when another node holds one made before the given time
	// (Server.OldestClientConn); it reports whether it did.
	SendLeaseBreak(ctx context.Context, guid [16]byte, before time.Time, n *smb2.LeaseBreakNotification) bool
}

// ErrNoSession is SessionPeers.Handoff's answer when no node holds the session.
var ErrNoSession = errors.New("server: no node holds the session")

// HandoffState is a negotiated connection's state ([MS-SMB2] 3.3.1.7):
// what the home node needs to go on serving it.
type HandoffState struct {
	Dialect        uint16
	ClientGUID     [16]byte
	ClientCaps     uint32
	ClientSecMode  uint16
	ClientDialects []uint16
	ServerSecMode  uint16
	ServerCaps     uint32
	Cipher         uint16
	SigningAlg     uint16
	SigningChosen  bool
	Preauth        signing.PreauthHash
	// The credit window before the binding request was counted.
	CreditsLow, CreditsHigh uint64
	CreditsUsed             []uint64
	ClientAddr, LocalAddr   string
	// Node is the node the client is connected to; empty on that node.
	Node string
	// Sessions the connection authenticated on the arrival node move
	// with it (none of them has an open or another channel).
	Sessions []MovedSession
	// CreditsAtRelay: the node relaying keeps the credit window and
	// grants the credits (relayed.go); the credit fields are unset.
	CreditsAtRelay bool
}

// MovedSession is a session that moves with its connection to the home
// node of another session the connection binds to.
type MovedSession struct {
	ID                 uint64
	User, Domain       string
	Guest, Anonymous   bool
	Dialect            uint16
	ClientGUID         [16]byte
	Cipher, SigningAlg uint16
	SessionKey         []byte
	Keys               signing.Keys
	SigningRequired    bool
	EncryptData        bool
	CreatedAt          time.Time
	Trees              []MovedTree
	NextTree           uint32
	ChannelAlg         uint16 // the connection's channel: its signing algorithm and key
	ChannelKey         []byte
}

// MovedTree is a tree connect of a MovedSession.
type MovedTree struct {
	ID            uint32
	Share         string
	MaximalAccess uint32
	EncryptData   bool
}

// handoffWait bounds how long a binding request waits for the cluster to
// say which node holds its session.
const handoffWait = 5 * time.Second

// errHandedOff ends the read loop of a connection handed to another node:
// serve then gives it up to carrier (hijack.go), first the frame read.
type errHandedOff struct {
	carrier Carrier
	first   []byte
}

func (errHandedOff) Error() string { return "connection handed to the session's node" }

// maybeHandoff hands the connection over when msg, the connection's
// message (without its NetBIOS header), is a plain binding SESSION_SETUP
// for a session another node holds. It returns errHandedOff then, nil when
// the message is to be served here (on any doubt: a binding this node
// cannot place is refused here as on a single node).
//
// A connection is handed over with no session of its own, as every
// multichannel client's new channel is, or with sessions it authenticated
// here that move with it (movableSessions: no open, no other channel);
// otherwise its binding to another node's session is refused with
// STATUS_USER_SESSION_DELETED.
func (c *conn) maybeHandoff(msg []byte, h *smb2.Header) error {
	// Whatever the dialect: the home node refuses a binding the
	// connection's dialect does not allow, with the status a single node
	// would give.
	if c.srv.cfg.SessionPeers == nil || !c.negotiated ||
		h.Command != smb2.CmdSessionSetup || h.SessionID == 0 || h.NextCommand != 0 {
		return nil
	}
	var req smb2.SessionSetupRequest
	if req.Decode(msg) != nil || req.Flags&smb2.SessionFlagBinding == 0 || c.srv.lookupSession(h.SessionID) != nil {
		return nil
	}
	st := c.handoffState()
	var moved []*Session
	if c.authed.Load() {
		var ok bool
		if moved, st.Sessions, ok = c.movableSessions(); !ok {
			// It stays here; the other session's frames go to its node.
			return c.relaySession(msg, h)
		}
	}
	ctx, cancel := context.WithTimeout(c.ctx, handoffWait)
	cr, err := c.srv.cfg.SessionPeers.Handoff(ctx, h.SessionID, st)
	cancel()
	if err != nil {
		c.peersFailed(h.SessionID, err)
		return nil
	}
	c.srv.forgetSessions(moved) // they live at the home node now
	first := make([]byte, 4+len(msg))
	smb2.PutTransportHeader(first, len(msg))
	copy(first[4:], msg)
	c.srv.log.Debug("channel handed to the session's node", "remote", c.remote, "session", fmt.Sprintf("%#x", h.SessionID))
	return errHandedOff{carrier: cr, first: first}
}

// peersFailed logs why the node holding session id was not found, unless
// no node holds it.
func (c *conn) peersFailed(id uint64, err error) {
	if !errors.Is(err, ErrNoSession) {
		c.srv.log.Info("channel bind: the session's node cannot be reached", "remote", c.remote,
			"session", fmt.Sprintf("%#x", id), "err", err)
	}
}

// handoffState captures the connection's negotiated state. The read loop
// calls it before it counts the binding request's credits: the home node
// counts them when it serves the request.
func (c *conn) handoffState() *HandoffState {
	st := &HandoffState{
		Dialect: c.dialect, ClientGUID: c.clientGUID, ClientCaps: c.clientCaps, ClientSecMode: c.clientSecMode,
		ClientDialects: append([]uint16(nil), c.clientDialects...), ServerSecMode: c.serverSecMode,
		ServerCaps: c.serverCaps, Cipher: c.cipher, SigningAlg: c.signingAlg, SigningChosen: c.signingChosen,
		Preauth: c.preauth, ClientAddr: c.remote, LocalAddr: c.local,
	}
	st.CreditsLow, st.CreditsHigh, st.CreditsUsed = c.credits.snapshot()
	return st
}

// HoldsSession reports whether the server holds session id (valid, or
// still authenticating: a binding to it is refused there with the status
// a single node gives).
func (s *Server) HoldsSession(id uint64) bool {
	ss := s.lookupSession(id)
	if ss == nil {
		return false
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.state != sessionExpired
}

// Adopt serves a connection handed over by another node of the cluster:
// nc carries its bytes (the client's binding request first) and st its
// negotiated state. The connection is then one of the server's own,
// listed as connected through st.Node.
func (s *Server) Adopt(st *HandoffState, nc net.Conn) (*Adopted, error) {
	if !s.AcceptsConnections() {
		return nil, errors.New("server: not accepting connections")
	}
	c := newConn(s, nc)
	c.negotiated = true
	c.dialect, c.clientGUID, c.clientCaps, c.clientSecMode = st.Dialect, st.ClientGUID, st.ClientCaps, st.ClientSecMode
	c.clientDialects = append([]uint16(nil), st.ClientDialects...)
	c.serverSecMode, c.serverCaps, c.cipher, c.signingAlg = st.ServerSecMode, st.ServerCaps, st.Cipher, st.SigningAlg
	c.signingChosen, c.preauth, c.via = st.SigningChosen, st.Preauth, st.Node
	if st.ClientAddr != "" {
		c.remote = st.ClientAddr
	}
	if st.LocalAddr != "" {
		c.local = st.LocalAddr
	}
	if st.CreditsAtRelay {
		// It stands for a connection another node serves, which
		// authenticated it and keeps its credit window (relayed.go).
		c.relayed = &relayGrants{m: map[uint64]uint16{}}
		c.authed.Store(true)
	} else if err := c.credits.restore(st.CreditsLow, st.CreditsHigh, st.CreditsUsed); err != nil {
		return nil, err
	}
	sessions, err := s.movedSessions(c, st.Sessions)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrServerClosed
	}
	for _, ss := range sessions {
		if s.sessions[ss.ID] != nil {
			s.mu.Unlock()
			return nil, fmt.Errorf("server: session %#x moving here exists", ss.ID)
		}
	}
	for _, ss := range sessions {
		s.sessions[ss.ID] = ss
	}
	if len(sessions) > 0 {
		c.authed.Store(true) // its handshake happened on the arrival node
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	s.addClientConn(c)
	s.run(c)
	return &Adopted{c: c}, nil
}

// EndPreviousSession ends session prev if user owns it, as a reconnect
// through another node asks ([MS-SMB2] 3.3.5.5.3); it reports whether it
// did.
func (s *Server) EndPreviousSession(prev uint64, user string, newID uint64) bool {
	old := s.lookupSession(prev)
	if old == nil || !old.valid() || !strings.EqualFold(old.User, user) || old.Anonymous || old.Guest {
		return false
	}
	s.log.Info("session replaced by a reconnect through another node", "old", old.ID, "new", newID, "user", user)
	s.endSession(old, true) // durable opens wait for the reconnect
	return true
}

// OldestClientConn returns when the oldest live connection of client guid
// that takes lease breaks (SMB 2.1 and later) was made.
func (s *Server) OldestClientConn(guid [16]byte) (time.Time, bool) {
	for _, c := range s.connsOfClient(guid) {
		if c.dialect >= smb2.Dialect210 {
			return c.born, true
		}
	}
	return time.Time{}, false
}

// SendLeaseBreak sends a lease break notification on the oldest live
// connection of client guid, as another node asks when this node holds the
// client's oldest connection in the cluster; it reports whether it did.
func (s *Server) SendLeaseBreak(guid [16]byte, n *smb2.LeaseBreakNotification) bool {
	for _, c := range s.connsOfClient(guid) {
		if c.dialect >= smb2.Dialect210 {
			c.sendBreak(leaseBreakResult(n), func() { s.SendLeaseBreak(guid, n) })
			return true
		}
	}
	return false
}

// leaseBreakResult is an unencrypted lease break notification.
func leaseBreakResult(n *smb2.LeaseBreakNotification) result {
	return result{
		hdr:  smb2.Header{Command: smb2.CmdOplockBreak, Flags: smb2.FlagServerToRedir, MessageID: ^uint64(0)},
		body: n,
	}
}

// movableSessions returns the sessions authenticated on c that can move
// with it to another node, and their state: every session c is a channel
// of, each with c as its only channel and no open. It reports false when
// one cannot move.
func (c *conn) movableSessions() ([]*Session, []MovedSession, bool) {
	var sessions []*Session
	var out []MovedSession
	for _, ss := range c.srv.allSessions() {
		ss.mu.Lock()
		ch, bound := ss.channels[c]
		if !bound {
			ss.mu.Unlock()
			continue
		}
		ok := ss.state == sessionValid && len(ss.channels) == 1 && ch.signer != nil == (ch.signKey != nil) && ss.opening == 0
		m := MovedSession{
			ID: ss.ID, User: ss.User, Domain: ss.Domain, Guest: ss.Guest, Anonymous: ss.Anonymous, Dialect: ss.Dialect,
			ClientGUID: ss.ClientGUID, Cipher: ss.Cipher, SigningAlg: ss.SigningAlg, SessionKey: ss.SessionKey, Keys: ss.Keys,
			SigningRequired: ss.SigningRequired, EncryptData: ss.EncryptData, CreatedAt: ss.CreatedAt, NextTree: ss.nextTree,
			ChannelAlg: ch.signAlg, ChannelKey: ch.signKey,
		}
		for _, t := range ss.trees {
			t.mu.Lock()
			ok = ok && len(t.opens) == 0
			t.mu.Unlock()
			m.Trees = append(m.Trees, MovedTree{ID: t.ID, Share: t.Share.Name, MaximalAccess: t.MaximalAccess, EncryptData: t.EncryptData})
		}
		ss.mu.Unlock()
		if !ok {
			return nil, nil, false
		}
		sessions, out = append(sessions, ss), append(out, m)
	}
	return sessions, out, true
}

// forgetSessions removes sessions that moved to another node, without
// ending them: their trees hold no open.
func (s *Server) forgetSessions(sessions []*Session) {
	s.mu.Lock()
	for _, ss := range sessions {
		delete(s.sessions, ss.ID)
	}
	s.mu.Unlock()
	for _, ss := range sessions {
		ss.mu.Lock()
		ss.state = sessionExpired
		ss.trees = map[uint32]*Tree{}
		ss.channels = map[*conn]*channel{}
		ss.mu.Unlock()
		s.sessionGone(ss)
	}
}

// movedSessions rebuilds the sessions a handed-over connection brings, c
// their channel.
func (s *Server) movedSessions(c *conn, moved []MovedSession) ([]*Session, error) {
	var out []*Session
	for _, m := range moved {
		ss := &Session{
			ID: m.ID, User: m.User, Domain: m.Domain, Guest: m.Guest, Anonymous: m.Anonymous, Dialect: m.Dialect,
			ClientGUID: m.ClientGUID, Cipher: m.Cipher, SigningAlg: m.SigningAlg, SessionKey: m.SessionKey, Keys: m.Keys,
			SigningRequired: m.SigningRequired, EncryptData: m.EncryptData, CreatedAt: m.CreatedAt,
			state: sessionValid, trees: map[uint32]*Tree{}, nextTree: m.NextTree, channels: map[*conn]*channel{},
		}
		if m.Dialect >= smb2.Dialect300 && m.Cipher != 0 && len(m.Keys.ServerOut) > 0 {
			var err error
			if ss.encrypter, err = signing.NewCipher(m.Cipher, m.Keys.ServerOut); err != nil {
				return nil, err
			}
			if ss.decrypter, err = signing.NewCipher(m.Cipher, m.Keys.ServerIn); err != nil {
				return nil, err
			}
			ss.nonces = signing.NewNonceSource()
		}
		ch := &channel{seq: channelSeq.Add(1), preauth: c.preauth, signAlg: m.ChannelAlg, signKey: m.ChannelKey}
		if m.ChannelKey != nil {
			var err error
			if ch.signer, err = signing.NewSigner(m.ChannelAlg, m.ChannelKey); err != nil {
				return nil, err
			}
		}
		ss.channels[c] = ch
		for _, mt := range m.Trees {
			sh, ok := s.cfg.Shares.Lookup(mt.Share)
			if !ok {
				continue // the client's next request on it is refused
			}
			ss.trees[mt.ID] = &Tree{ID: mt.ID, Session: ss, Share: sh, MaximalAccess: mt.MaximalAccess, EncryptData: mt.EncryptData,
				opens: map[uint64]*Open{}, met: s.cfg.Metrics.Share(sh.Name)}
		}
		out = append(out, ss)
	}
	return out, nil
}
