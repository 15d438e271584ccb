package server

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smbcluster/smbcluster/node/clock"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("server: closed")

// Server serves SMB2/3 on any number of listeners.
type Server struct {
	// Immutable after New.
	cfg       Config
	log       *slog.Logger
	guid      [16]byte
	startTime time.Time

	nextSession  atomic.Uint64
	nextOpen     atomic.Uint64
	fenceGen     atomic.Uint64 // AbandonDurable calls (durable_cluster.go)
	nConns       atomic.Int64
	offloaded    atomic.Uint64 // requests the read loop handed off (ErrWouldBlock)
	spliced      atomic.Uint64 // WRITEs whose payload was spliced (splice.go)
	remoteReads  atomic.Uint64 // READs of handed-over channels sent from here (remoteread.go)
	remoteWrites atomic.Uint64 // WRITEs of handed-over channels written from here (remotewrite.go)

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	sessions  map[uint64]*Session
	opens     map[uint64]*Open
	opening   int // CREATEs admitted by admitOpen and not yet registered (limits.go)
	closed    bool
	// clientConns lists the connections of each ClientGuid, oldest first,
	// for lease breaks (oplock.go); dead ones are pruned on lookup.
	clientConns map[[16]byte][]*conn
	wg          sync.WaitGroup

	dur    durables // durable opens and their records (durable.go)
	replay replays  // DH2Q CREATEs in progress and done (replay.go)

	hooks atomic.Pointer[orderHooks] // tests only (order.go); nil in production
}

// Offloaded counts the requests the connections' readers handed to
// goroutines because their data was not in memory (Request.MayWait).
func (s *Server) Offloaded() uint64 { return s.offloaded.Load() }

// RemoteReads counts the READs of channels handed to other nodes whose
// bytes this node sent from its own descriptors (remoteread.go).
func (s *Server) RemoteReads() uint64 { return s.remoteReads.Load() }

// RemoteWrites counts the WRITEs of channels handed to other nodes whose
// payload this node wrote to its own descriptors (remotewrite.go).
func (s *Server) RemoteWrites() uint64 { return s.remoteWrites.Load() }

// SplicedWrites counts the WRITEs whose payload went from the socket to a
// pipe instead of memory (splice.go).
func (s *Server) SplicedWrites() uint64 { return s.spliced.Load() }

// New returns a server for cfg.
func New(cfg Config) *Server {
	if cfg.MaxCredits == 0 {
		cfg.MaxCredits = 8192
	}
	if cfg.HandoffIOMin <= 0 {
		cfg.HandoffIOMin = remoteIOMin
	}
	if cfg.MaxTransact == 0 {
		cfg.MaxTransact = 8 << 20
	}
	if cfg.MinDialect == 0 {
		cfg.MinDialect = smb2.Dialect202
	}
	if cfg.MaxDialect == 0 {
		cfg.MaxDialect = smb2.Dialect311
	}
	if cfg.ServerName == "" {
		cfg.ServerName = "SMBCLUSTER"
	}
	if cfg.Workgroup == "" {
		cfg.Workgroup = "WORKGROUP"
	}
	s := &Server{
		cfg:       cfg,
		log:       cfg.Logger,
		guid:      cfg.ServerGUID,
		startTime: time.Now(),
		listeners: map[net.Listener]struct{}{},
		conns:     map[*conn]struct{}{},
		sessions:  map[uint64]*Session{},
		opens:     map[uint64]*Open{},
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.guid == ([16]byte{}) {
		rand.Read(s.guid[:])
	}
	var seed [8]byte
	rand.Read(seed[:])
	// Session ids start at a random point (of their 48 counting bits,
	// sessionID) so that ids from a restarted node do not collide with
	// stale ones a client may still hold.
	s.nextSession.Store(binary.LittleEndian.Uint64(seed[:]) >> 16)
	// FileIds too: the nodes of a cluster each draw their own, and a
	// durable open moving between nodes keeps its FileId when the new
	// node has not handed it out (8 random bits made that a gamble).
	rand.Read(seed[:])
	s.nextOpen.Store(binary.LittleEndian.Uint64(seed[:]) >> 16)
	cfg.Metrics.SetSource(s) // metrics.go
	return s
}

// Config returns the server's configuration.
func (s *Server) Config() *Config { return &s.cfg }

// Serve accepts connections on l until Shutdown. It always returns a non-nil error.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
	}()
	var backoff time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			if s.isClosed() {
				return ErrServerClosed
			}
			if temporaryAcceptError(err) { // limits.go
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				if backoff == 5*time.Millisecond {
					s.log.Warn("accept failed; retrying", "err", err)
				}
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		if max := s.cfg.MaxConnections; max > 0 && s.nConns.Load() >= int64(max) {
			s.log.Warn("connection refused: limit reached", "remote", nc.RemoteAddr().String(), "limit", max)
			nc.Close()
			continue
		}
		c := newConn(s, nc)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			return ErrServerClosed
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		s.run(c)
	}
}

// run serves c, registered in s.conns with s.wg counted, on its own
// goroutine.
func (s *Server) run(c *conn) {
	s.nConns.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.nConns.Add(-1)
		c.serve()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Shutdown shuts the server down gracefully, as net/http's does: it
// closes the listeners, stops every connection reading new requests,
// cancels the requests that went async to wait (CHANGE_NOTIFY, blocking
// LOCKs, breaks), lets the requests being served finish, writes their
// responses (a WRITE that was read is written to its file and answered),
// then ends each connection with a FIN, closes the opens and returns.
// A request that was not read is never answered: the client sees the
// connection end and sends it again after it reconnects, as it does after
// any lost connection; SMB2 has no status that tells a client to go
// elsewhere ([MS-SMB2] 3.3.4.23 disconnects every connection).
//
// When ctx ends first, Shutdown closes every connection at once (Close)
// and returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	for _, c := range s.stop() {
		c.drain()
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); s.closeDetached(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.Close()
		return ctx.Err()
	}
}

// Close closes the listeners and every connection at once: requests being
// served are cancelled and responses not yet written are lost. Shutdown
// is the graceful way.
func (s *Server) Close() error {
	for _, c := range s.stop() {
		c.close()
	}
	return nil
}

// stop marks the server closed, closes its listeners, and returns its
// connections.
func (s *Server) stop() []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for l := range s.listeners {
		l.Close()
	}
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	return conns
}

// Sessions returns a snapshot of the valid sessions.
func (s *Server) Sessions() []*Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		if ss.valid() {
			out = append(out, ss)
		}
	}
	return out
}

// OpenCount is the number of opens the server holds (tests use it to find leaks).
func (s *Server) OpenCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.opens)
}

func (s *Server) lookupSession(id uint64) *Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

// sessionIDBits are the bits of a session id that count; the ones above
// them are Config.SessionTag.
const sessionIDBits = 48

// sessionID returns a new session id: the next count under the
// configured tag, never 0 nor all ones (which a request's header uses for
// "none" and "the previous request's").
func (s *Server) sessionID() uint64 {
	for {
		n := s.nextSession.Add(1) & (1<<sessionIDBits - 1)
		id := uint64(s.cfg.SessionTag)<<sessionIDBits | n
		if n != 0 && id != ^uint64(0) {
			return id
		}
	}
}

func (s *Server) newSession() *Session {
	ss := &Session{
		ID:       s.sessionID(),
		trees:    map[uint32]*Tree{},
		channels: map[*conn]*channel{},
	}
	s.mu.Lock()
	s.sessions[ss.ID] = ss
	s.mu.Unlock()
	return ss
}

// newOpen allocates an open of tree t made on connection c; it is
// registered by addOpen once the backend has created its handle.
func (s *Server) newOpen(t *Tree, c *conn, name string, access uint32) *Open {
	return &Open{ID: s.nextOpen.Add(1), Tree: t, Session: t.Session, Name: name, Access: access, created: clock.Now(), conn: c,
		gen: s.fenceGen.Load()}
}

// addOpen registers an open with its handle.
func (s *Server) addOpen(o *Open, h Handle) {
	o.Handle = h
	t := o.Tree
	s.mu.Lock()
	s.opens[o.ID] = o
	s.mu.Unlock()
	t.mu.Lock()
	t.opens[o.ID] = o
	t.mu.Unlock()
}

// removeOpen unregisters o; it reports false if o was already removed, so
// that exactly one caller closes its handle.
func (s *Server) removeOpen(o *Open) bool {
	s.mu.Lock()
	_, ok := s.opens[o.ID]
	delete(s.opens, o.ID)
	durable := ok && o.dur != nil
	s.forgetDurable(o)
	s.forgetCreate(o)
	s.mu.Unlock()
	if !ok {
		return false
	}
	s.openGone(o) // metrics.go
	if durable {
		s.durableChanged() // its record goes at once (durable.go)
	}
	o.Tree.mu.Lock()
	delete(o.Tree.opens, o.ID)
	o.Tree.mu.Unlock()
	return true
}

// closeOpen closes o's handle if nobody has yet, after in-flight
// operations on it finish.
func (s *Server) closeOpen(o *Open) {
	if s.removeOpen(o) {
		o.drain()
		if _, err := o.Handle.Close(false); err != nil {
			s.log.Debug("close on teardown", "file", o.Name, "err", err)
		}
	}
}

// closeTree closes every open of t.
func (s *Server) closeTree(t *Tree) {
	t.mu.Lock()
	opens := make([]*Open, 0, len(t.opens))
	for _, o := range t.opens {
		opens = append(opens, o)
	}
	t.mu.Unlock()
	for _, o := range opens {
		s.closeOpen(o)
	}
}

// expireSession ends a session: its trees and opens are closed.
func (s *Server) expireSession(ss *Session) { s.endSession(ss, false) }

// endSession ends a session. Its trees and opens are closed, but with
// keepDurable (a lost connection, a reconnect naming the session in
// PreviousSessionId) its durable opens are kept for their client to
// reconnect (durable.go, [MS-SMB2] 3.3.7.1).
func (s *Server) endSession(ss *Session, keepDurable bool) {
	s.mu.Lock()
	delete(s.sessions, ss.ID)
	s.mu.Unlock()
	ss.mu.Lock()
	ss.state = sessionExpired
	trees := make([]*Tree, 0, len(ss.trees))
	for _, t := range ss.trees {
		trees = append(trees, t)
	}
	ss.trees = map[uint32]*Tree{}
	ss.mu.Unlock()
	s.sessionGone(ss) // metrics.go
	for _, t := range trees {
		if keepDurable {
			s.detachTree(t)
		} else {
			s.closeTree(t)
		}
	}
}

// connsOfClient returns the live connections whose client negotiated
// ClientGuid guid, oldest first: a lease break goes out on one of them
// ([MS-SMB2] 3.3.4.7), the oldest as Windows and Samba choose.
func (s *Server) connsOfClient(guid [16]byte) []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	live := s.clientConns[guid][:0]
	for _, c := range s.clientConns[guid] {
		if c.ctx.Err() == nil && !c.handedOff.Load() {
			live = append(live, c)
		}
	}
	if len(live) == 0 {
		delete(s.clientConns, guid)
		return nil
	}
	s.clientConns[guid] = live
	return append([]*conn(nil), live...)
}

// addClientConn records that c negotiated with its ClientGuid.
func (s *Server) addClientConn(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clientConns == nil {
		s.clientConns = map[[16]byte][]*conn{}
	}
	s.clientConns[c.clientGUID] = append(s.clientConns[c.clientGUID], c)
}
