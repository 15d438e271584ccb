package server

import (
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/smbcluster/smbcluster/node/auth"
	"github.com/smbcluster/smbcluster/node/metrics"
)

// EncryptionMode is the server-wide encryption policy.
type EncryptionMode uint8

const (
	// EncryptOff encrypts only sessions on shares that ask for it.
	EncryptOff EncryptionMode = iota
	// EncryptDesired encrypts every session of a client that supports it and
	// still serves clients that do not.
	EncryptDesired
	// EncryptRequired encrypts every session and refuses clients that cannot.
	EncryptRequired
)

// Config is a Server's configuration. It must not change after Serve.
type Config struct {
	ServerName string   // NetBIOS name announced in NTLM target info
	Workgroup  string   // NetBIOS domain
	ServerGUID [16]byte // zero → random
	// Cluster makes disk shares answer TREE_CONNECT from SMB 3.x clients
	// with SMB2_SHARE_CAP_CLUSTER ([MS-SMB2] 3.3.5.7): clients then
	// register with the witness service ([MS-SWN]). SMB2_SHARE_CAP_SCALEOUT
	// is not sent: it promises a scale-out file server's CREATE semantics
	// (no batch oplocks, read-only leases, durable handles only when
	// persistent; smbtorture's smb2.replay tests hold a SCALEOUT share to
	// them), which the engine does not implement.
	Cluster bool

	Users           auth.UserDB
	Kerberos        *auth.Kerberos // nil: no Kerberos offered or accepted
	NoNTLM          bool           // refuse NTLMSSP (Kerberos only)
	AllowGuest      bool
	AllowAnonymous  bool
	SigningRequired bool
	Encryption      EncryptionMode

	MinDialect, MaxDialect uint16 // zero → 2.0.2 and 3.1.1

	Shares Shares

	MaxCredits     uint16        // credit window per connection; zero → 8192
	MaxTransact    uint32        // zero → 8 MiB
	IdleTimeout    time.Duration // a connection with no request for this long is closed (before logon, HandshakeTimeout instead when set); zero → none
	MaxConnections int           // connections past it are closed at once; zero → unlimited

	// HandshakeTimeout is how long a connection may go without
	// authenticating (a SESSION_SETUP that completes, or binds a channel)
	// before it is closed; zero → no limit. Until then its frames are
	// bounded by PreAuthMessageMax (limits.go).
	HandshakeTimeout time.Duration

	// MaxOpens bounds the opens the server holds (disconnected durable
	// ones included), MaxOpensPerSession those of one session; a CREATE
	// past either fails with STATUS_TOO_MANY_OPENED_FILES, as Samba's
	// "max open files" does. Zero → unlimited.
	MaxOpens           int
	MaxOpensPerSession int

	// NoDirectoryLeases withholds SMB2_GLOBAL_CAP_DIRECTORY_LEASING, so
	// that 3.x clients get no leases on directories ([MS-SMB2] 3.3.5.4).
	NoDirectoryLeases bool

	// ZeroCopyThreshold is the smallest plain READ answered with sendfile;
	// zero or negative disables zero-copy reads.
	ZeroCopyThreshold int

	// SpliceWriteThreshold is the smallest plain WRITE payload moved from
	// the socket to the file with splice(2) (splice.go); zero or negative
	// reads every payload into memory.
	SpliceWriteThreshold int

	// HandoffIOMin is the smallest READ or WRITE of a channel handed to
	// another node that this node, the one its client is connected to,
	// serves from its own descriptor (remoteread.go, remotewrite.go);
	// smaller ones go through the relay. Zero: 32 KiB.
	HandoffIOMin int

	// Interfaces lists the addresses announced by FSCTL_QUERY_NETWORK_INTERFACE_INFO;
	// nil → the listeners' addresses.
	Interfaces []Interface

	// Control, if set, lets a cluster agent change what the server
	// admits and offers while it runs (cluster.go).
	Control *Control

	// SessionPeers, if set, finds the sessions other nodes of a cluster
	// hold, so that a channel bound here to one of them is handed to its
	// node (handoff.go).
	SessionPeers SessionPeers
	// SessionTag, if set, is the top 16 bits of every session id the
	// server hands out (the low 48 count): in a cluster, the node's tag
	// (node/handoff Tag), so that any node knows which node made a
	// session from its id alone and asks that node, not every node, for
	// it (a channel bind, a reconnect's PreviousSessionId).
	SessionTag uint16

	Logger *slog.Logger

	// Metrics, if set, records requests, bytes, breaks and the held state
	// (node/metrics, metrics.go); nil records nothing.
	Metrics *metrics.Node
}

// Interface is one address the node offers to multichannel clients.
type Interface struct {
	Index     uint32
	IP        net.IP
	LinkSpeed uint64 // bits per second
	RSS       bool
}

// Shares resolves share names for TREE_CONNECT and lists them for srvsvc.
type Shares interface {
	Lookup(name string) (*Share, bool) // case-insensitive
	List() []*Share
}

// Share is a tree-connectable share.
type Share struct {
	Name     string
	Comment  string
	Path     string
	Pipe     bool // IPC$
	Encrypt  bool // SMB2_SHAREFLAG_ENCRYPT_DATA
	ReadOnly bool
	// CA is continuous availability (SMB2_SHARE_CAP_CONTINUOUS_AVAILABILITY):
	// durable v2 opens asking for it are made persistent (durable.go).
	CA      bool
	Backend Backend

	// uncached: reads through this node's page cache of the share may be
	// stale (SetPageCacheReads).
	uncached atomic.Bool
}

// SetPageCacheReads says whether READs of the share may come from the
// node's page cache without a read of the file: sendfile and RWF_NOWAIT
// reads. A cluster turns them off where its storage check found them
// stale while plain reads were not (a FUSE mount in direct-io mode still
// splices through a page cache another node's writes do not reach).
func (s *Share) SetPageCacheReads(on bool) { s.uncached.Store(!on) }

// PageCacheReads reports SetPageCacheReads' setting (on by default).
func (s *Share) PageCacheReads() bool { return !s.uncached.Load() }
