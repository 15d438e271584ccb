package server

import (
	"crypto/cipher"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smbcluster/smbcluster/node/auth"
	"github.com/smbcluster/smbcluster/node/metrics"
	"github.com/smbcluster/smbcluster/node/smb2/signing"
)

type sessionState uint8

const (
	sessionInProgress sessionState = iota
	sessionValid
	sessionExpired
)

// Session is an authenticated user's session ([MS-SMB2] 3.3.1.8). Its
// immutable part (set when authentication completes) is what a cluster
// publishes so that a channel can bind to it on another node; see Record.
type Session struct {
	ID uint64

	// Set once when authentication succeeds; read-only afterwards.
	User, Domain     string
	Guest, Anonymous bool
	Dialect          uint16
	ClientGUID       [16]byte
	Cipher           uint16 // 0 when the connection negotiated none
	SigningAlg       uint16
	SessionKey       []byte
	Keys             signing.Keys
	SigningRequired  bool
	EncryptData      bool // every message of the session is encrypted
	CreatedAt        time.Time
	encrypter        cipher.AEAD // server → client
	decrypter        cipher.AEAD // client → server
	nonces           *signing.NonceSource

	mu       sync.Mutex
	state    sessionState
	trees    map[uint32]*Tree
	nextTree uint32
	channels map[*conn]*channel
	opening  int // CREATEs admitted and not yet registered (limits.go)

	addr string          // the client's address, set with User
	io   metrics.IOCount // requests and bytes, for the top-N tables (metrics.go)
}

// channel is one connection bound to a session ([MS-SMB2] 3.3.1.14).
type channel struct {
	seq    uint64 // creation order: breaks try a session's channels in it
	signer signing.Signer
	// The signer's algorithm and key, for the node a handed-over
	// channel's client is connected to (remoteread.go).
	signAlg uint16
	signKey []byte
	// authentication in progress on this connection (first setup or binding)
	auth    *auth.Context
	preauth signing.PreauthHash
	binding bool
}

// channelSeq numbers channels as they are made (channel.seq).
var channelSeq atomic.Uint64

// SessionRecord is the portable description of a session: everything another
// node needs to accept a channel bound to it.
type SessionRecord struct {
	ID              uint64
	User, Domain    string
	Dialect         uint16
	ClientGUID      [16]byte
	Cipher          uint16
	SigningAlg      uint16
	SessionKey      []byte
	SigningRequired bool
	EncryptData     bool
	CreatedAt       time.Time
}

// Record returns the session's portable record.
func (s *Session) Record() SessionRecord {
	return SessionRecord{
		ID: s.ID, User: s.User, Domain: s.Domain, Dialect: s.Dialect,
		ClientGUID: s.ClientGUID, Cipher: s.Cipher, SigningAlg: s.SigningAlg,
		SessionKey: append([]byte(nil), s.SessionKey...), SigningRequired: s.SigningRequired,
		EncryptData: s.EncryptData, CreatedAt: s.CreatedAt,
	}
}

// channelFor returns the session's channel on c, or nil.
func (s *Session) channelFor(c *conn) *channel {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.channels[c]
}

func (s *Session) valid() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state == sessionValid
}

// Tree is a tree connect ([MS-SMB2] 3.3.1.10).
type Tree struct {
	ID            uint32
	Session       *Session
	Share         *Share
	MaximalAccess uint32
	EncryptData   bool
	met           *metrics.Share // the share's instruments (metrics.go)

	mu    sync.Mutex
	opens map[uint64]*Open
}

// Open is an open of a file, directory or pipe ([MS-SMB2] 3.3.1.11).
type Open struct {
	ID      uint64 // both halves of the FileId
	Tree    *Tree
	Session *Session
	Handle  Handle
	Name    string // share-relative path, for logging and listings
	Access  uint32 // granted access
	created time.Time
	conn    *conn  // the connection that opened it (oplock breaks go there first)
	gen     uint64 // Server.fenceGen when it was made: older ones are abandoned

	// dur is the durable state of a durable open, nil otherwise; guarded
	// by Server.mu. A durable reconnect moves the open to a new Tree,
	// Session and conn (durable.go).
	dur *durable

	// replayed answers a replay of the DH2Q CREATE that made the open
	// (replay.go); guarded by Server.mu.
	replayed *replayed

	// In-flight operations hold a reference so that the handle is closed
	// only after they finish (a queued sendfile still reads its fd).
	mu      sync.Mutex
	refs    int
	closed  bool
	idle    *sync.Cond
	closing chan struct{} // closed when the open starts closing
	chanSeq uint16        // Open.ChannelSequence ([MS-SMB2] 3.3.5.2.10, channelseq.go)
	// Open.OutstandingRequestCount and OutstandingPreRequestCount, and
	// how often chanSeq changed (channelseq.go).
	outstanding, preOutstanding int
	chanEpoch                   uint64
	// remote: the handed-over channels whose nodes wrote to the open and
	// have not flushed since (remotefile.go).
	remote remoteWriters

	io metrics.IOCount // requests and bytes, for the top-N tables (metrics.go)
}

// Closing returns a channel closed when the open starts to close, so that
// operations waiting on it (CHANGE_NOTIFY) can finish and let it close.
func (o *Open) Closing() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closing == nil {
		o.closing = make(chan struct{})
		if o.closed {
			close(o.closing)
		}
	}
	return o.closing
}

// acquire takes a reference; it fails once the open is closing.
func (o *Open) acquire() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return false
	}
	o.refs++
	return true
}

// release drops a reference taken by acquire.
func (o *Open) release() {
	o.mu.Lock()
	o.refs--
	if o.refs == 0 && o.idle != nil {
		o.idle.Broadcast()
	}
	o.mu.Unlock()
}

// drain marks the open closing and waits until no operation holds it.
func (o *Open) drain() {
	o.mu.Lock()
	o.closed = true
	if o.closing == nil {
		o.closing = make(chan struct{})
	}
	select {
	case <-o.closing:
	default:
		close(o.closing)
	}
	for o.refs > 0 {
		if o.idle == nil {
			o.idle = sync.NewCond(&o.mu)
		}
		o.idle.Wait()
	}
	o.mu.Unlock()
}
