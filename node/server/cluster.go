package server

import (
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/state"
)

// Admission is how much new work a server takes. A cluster agent lowers
// it while its node drains or has lost its cluster membership.
type Admission uint32

const (
	// AdmitAll serves new connections and new sessions.
	AdmitAll Admission = iota
	// AdmitNoSessions refuses new sessions (a draining node): existing
	// sessions go on, and their channels may still be bound and
	// re-authenticated.
	AdmitNoSessions
	// AdmitNothing refuses new connections and every SESSION_SETUP (a
	// fenced node: it lost its cluster lease or was superseded). The
	// agent that sets it also ends the existing connections
	// (Server.EndConnections).
	AdmitNothing
)

// Control is what a cluster agent changes while the server runs. The zero
// value admits everything and offers the listeners' addresses; it is safe
// for concurrent use.
type Control struct {
	admission atomic.Uint32
	offline   atomic.Bool // the cluster's network name is offline
	policy    atomic.Pointer[Policy]
	valid     atomic.Pointer[func() bool]

	mu         sync.Mutex
	interfaces []Interface
	offerSet   bool
	// accepted holds, per listener, the connection Accept returned last,
	// until the listener's Serve asks for the next one (by then it has
	// registered it): what EndConnections must close beyond the server's
	// own table.
	accepted map[net.Listener]net.Conn
}

// SetAdmission sets how much new work the server takes.
func (c *Control) SetAdmission(a Admission) { c.admission.Store(uint32(a)) }

// SetValid sets what the server asks before it serves a request or
// writes to a file: a cluster node's fencing (cluster.Fencing.Valid),
// which turns false at its lease deadline itself — before the agent has
// lowered the admission and ended the connections. A request read once
// it is false is not served: the connection is dropped, so that nothing
// a stopped node had read before it lost its lease reaches a file.
func (c *Control) SetValid(f func() bool) { c.valid.Store(&f) }

// Valid reports whether the server may serve requests (true without
// SetValid).
func (c *Control) Valid() bool {
	if c == nil {
		return true
	}
	f := c.valid.Load()
	return f == nil || (*f)()
}

// SetNetNameOffline takes the cluster's network name, its client access
// point, offline (true) or back online: while it is offline TREE_CONNECT
// to a disk share fails with STATUS_NETWORK_NAME_DELETED; IPC$ and the
// trees already connected go on.
func (c *Control) SetNetNameOffline(off bool) { c.offline.Store(off) }

// NetNameOffline reports whether the cluster's network name is offline.
func (c *Control) NetNameOffline() bool { return c != nil && c.offline.Load() }

// Admission returns how much new work the server takes.
func (c *Control) Admission() Admission {
	if c == nil {
		return AdmitAll
	}
	return Admission(c.admission.Load())
}

// SetInterfaces replaces what FSCTL_QUERY_NETWORK_INTERFACE_INFO offers
// clients; an empty, non-nil list offers nothing. ResetInterfaces returns
// to Config.Interfaces or the listeners' addresses.
func (c *Control) SetInterfaces(ifs []Interface) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.interfaces = append([]Interface{}, ifs...)
	c.offerSet = true
}

// ResetInterfaces undoes SetInterfaces.
func (c *Control) ResetInterfaces() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.interfaces, c.offerSet = nil, false
}

// offered returns the interfaces set by SetInterfaces, if any.
func (c *Control) offered() ([]Interface, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.interfaces, c.offerSet
}

// AcceptsConnections reports whether new connections are served.
func (s *Server) AcceptsConnections() bool {
	return s.cfg.Control.Admission() < AdmitNothing
}

// Accept accepts the next connection on l that the admission lets in;
// one that arrives while the server admits nothing is closed at once. A
// listener given to Serve calls it from its own Accept, so that fencing
// has no window: a connection Accept returned just before the admission
// fell is closed by EndConnections even if Serve has not registered it
// yet. A nil Control accepts everything.
func (c *Control) Accept(l net.Listener) (net.Conn, error) {
	if c == nil {
		return l.Accept()
	}
	c.mu.Lock()
	delete(c.accepted, l) // Serve registered the previous one before asking
	c.mu.Unlock()
	for {
		nc, err := l.Accept()
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		if c.Admission() < AdmitNothing {
			if c.accepted == nil {
				c.accepted = map[net.Listener]net.Conn{}
			}
			c.accepted[l] = nc
			c.mu.Unlock()
			return nc, nil
		}
		c.mu.Unlock()
		nc.Close()
	}
}

// EndConnections closes every client connection, as a fenced node must:
// requests in flight are cancelled, sessions end (durable opens wait for
// a reconnect, which needs a new session) and clients reconnect
// elsewhere. Called after SetAdmission(AdmitNothing), it leaves no
// connection served: one accepted through Control.Accept before the
// admission fell is either in the server's table or still the last its
// listener accepted, because Serve registers a connection before it
// accepts the next. It returns the number of connections in the table.
func (s *Server) EndConnections() int {
	var accepted []net.Conn
	if c := s.cfg.Control; c != nil {
		c.mu.Lock()
		for l, nc := range c.accepted {
			accepted = append(accepted, nc)
			delete(c.accepted, l)
		}
		c.mu.Unlock()
	}
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, nc := range accepted {
		nc.Close()
	}
	for _, c := range conns {
		c.close()
	}
	return len(conns)
}

// EndConnectionsTo closes every client connection made to the local
// address addr ("host:port"): the node gave that public address up, and
// its clients reconnect to its next holder. Call it once the listener on
// addr has closed and its Serve returned. It returns the number closed.
func (s *Server) EndConnectionsTo(addr string) int {
	s.mu.Lock()
	var conns []*conn
	for c := range s.conns {
		if c.local == addr {
			conns = append(conns, c)
		}
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	return len(conns)
}

// serveAdmittedSessionSetup refuses a SESSION_SETUP that would create a
// session while the cluster agent admits none, with
// STATUS_REQUEST_NOT_ACCEPTED ([MS-ERREF] 2.3.1): a client then tries
// another node. Re-authentication and binding of existing sessions pass,
// but on a fenced node (AdmitNothing), where nothing is served.
func (c *conn) serveAdmittedSessionSetup(r *Request) (Response, error) {
	switch adm := c.srv.cfg.Control.Admission(); {
	case adm == AdmitNothing, r.Header.SessionID == 0 && adm != AdmitAll:
		return nil, smb2.StatusRequestNotAccepted
	}
	return c.serveSessionSetup(r)
}

// EndShareTrees ends every tree connect of share sh (a share that is no
// longer served): its opens are closed and the client's next request on
// the tree fails with STATUS_NETWORK_NAME_DELETED. It returns the number
// of trees ended.
func (s *Server) EndShareTrees(sh *Share) int {
	var trees []*Tree
	for _, ss := range s.allSessions() {
		ss.mu.Lock()
		for id, t := range ss.trees {
			if t.Share == sh {
				trees = append(trees, t)
				delete(ss.trees, id)
			}
		}
		ss.mu.Unlock()
	}
	for _, t := range trees {
		s.closeTree(t)
	}
	return len(trees)
}

// EndUserSessions ends every session of user (case-insensitive, any
// domain), as when the user is deleted. It returns how many ended.
func (s *Server) EndUserSessions(user string) int {
	n := 0
	for _, ss := range s.Sessions() {
		if strings.EqualFold(ss.User, user) {
			s.expireSession(ss)
			n++
		}
	}
	return n
}

// CloseSession ends session id; it reports whether the server held it.
func (s *Server) CloseSession(id uint64) bool {
	ss := s.lookupSession(id)
	if ss == nil {
		return false
	}
	s.expireSession(ss)
	return true
}

// CloseOpen closes the open whose persistent FileId is id; it reports
// whether the server held it. The client's next request on it fails with
// STATUS_FILE_CLOSED.
func (s *Server) CloseOpen(id uint64) bool {
	s.mu.Lock()
	o := s.opens[id]
	s.mu.Unlock()
	if o == nil {
		return false
	}
	s.closeOpen(o)
	return true
}

// OpenInfo describes an open for a cluster listing.
type OpenInfo struct {
	ID        uint64 // persistent (and volatile) FileId
	SessionID uint64
	User      string
	Share     string
	Path      string
	Access    uint32
	Durable   bool
	Created   time.Time
	Handle    Handle // the backend's handle, for what the backend knows of the open
	// Record is the durable record of a durable open (a copy), nil for
	// the others.
	Record *state.DurableRecord
}

// Opens returns a snapshot of the server's opens.
func (s *Server) Opens() []OpenInfo {
	s.mu.Lock()
	out := make([]OpenInfo, 0, len(s.opens))
	for _, o := range s.opens {
		oi := OpenInfo{
			ID: o.ID, SessionID: o.Session.ID, User: o.Session.User, Share: o.Tree.Share.Name,
			Path: o.Name, Access: o.Access, Durable: o.dur != nil, Created: o.created, Handle: o.Handle,
		}
		if o.dur != nil {
			rec := o.dur.rec
			oi.Record = &rec
		}
		out = append(out, oi)
	}
	s.mu.Unlock()
	return out
}

// ChannelAddrs returns the client addresses of the session's channels on
// this server.
func (ss *Session) ChannelAddrs() []string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	out := make([]string, 0, len(ss.channels))
	for c, ch := range ss.channels {
		if ch.signer != nil || !ch.binding {
			out = append(out, c.remote)
		}
	}
	return out
}

// Channel is one of a session's channels as a cluster lists it.
type Channel struct {
	Addr string // the client's address
	Node string // the node the client is connected to; empty for this one
}

// Channels returns the session's channels on this server, those handed
// over by other nodes included (handoff.go).
func (ss *Session) Channels() []Channel {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	out := make([]Channel, 0, len(ss.channels))
	for c, ch := range ss.channels {
		if ch.signer != nil || !ch.binding {
			out = append(out, Channel{Addr: c.remote, Node: c.via})
		}
	}
	return out
}

// allSessions returns every session, valid or not.
func (s *Server) allSessions() []*Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		out = append(out, ss)
	}
	return out
}

// Policy is the part of the configuration a cluster can change while the
// server runs: it tightens or widens Config for new negotiations and
// sessions (existing ones keep what they negotiated).
type Policy struct {
	SigningRequired        bool   // in addition to Config.SigningRequired
	AllowGuest             bool   // in addition to Config.AllowGuest
	MinDialect, MaxDialect uint16 // zero: Config's
}

// SetPolicy replaces the cluster policy.
func (c *Control) SetPolicy(p Policy) { c.policy.Store(&p) }

// effective merges the cluster policy into the server's configuration.
func (s *Server) effective() (signingRequired, allowGuest bool, minDialect, maxDialect uint16) {
	cfg := &s.cfg
	signingRequired, allowGuest = cfg.SigningRequired, cfg.AllowGuest
	minDialect, maxDialect = cfg.MinDialect, cfg.MaxDialect
	if cfg.Control == nil {
		return
	}
	p := cfg.Control.policy.Load()
	if p == nil {
		return
	}
	signingRequired = signingRequired || p.SigningRequired
	allowGuest = allowGuest || p.AllowGuest
	if p.MinDialect != 0 {
		minDialect = p.MinDialect
	}
	if p.MaxDialect != 0 {
		maxDialect = p.MaxDialect
	}
	return
}

// errFenced drops a connection whose request arrived after the node's
// cluster lease deadline (Control.SetValid).
var errFenced = errors.New("server: fenced: the node lost its cluster lease")
