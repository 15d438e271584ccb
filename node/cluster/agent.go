package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/smbcluster/smbcluster/node/server"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Defaults for Config's zero fields.
const (
	DefaultLeaseTTL     = 5 * time.Second
	DefaultSyncInterval = time.Second
	dialTimeout         = 5 * time.Second
)

// ErrNotAdmitted is returned by Join for a node that was never admitted
// (or was removed) with `smbctl node add`.
var ErrNotAdmitted = errors.New("not admitted")

// ErrRemoved is returned by Run when the node's admission is revoked
// while it runs (smbctl node rm): the node leaves the cluster.
var ErrRemoved = errors.New("removed from the cluster")

// Config configures an Agent.
type Config struct {
	// Endpoints are the etcd client URLs. Required.
	Endpoints []string
	// TLS, if set, secures the connection to etcd.
	TLS *tls.Config
	// Name is the node's name, as admitted. Required.
	Name string
	// JoinToken is the token `smbctl node add` printed. Required.
	JoinToken string
	// Sealer opens the NT hashes and seals session keys with the cluster
	// secret. Required.
	Sealer *statev1.Sealer
	// Advertise are the SMB endpoints (host:port) the node publishes;
	// empty publishes the addresses it was admitted with.
	Advertise []string
	// Version is the node's build version.
	Version string
	// PeerAddress is where the node serves the node-to-node API; it is
	// published in the live record.
	PeerAddress string
	// LeaseTTL is the etcd lease's time to live; zero → DefaultLeaseTTL.
	LeaseTTL time.Duration
	// SyncInterval is how often sessions and opens are published; zero →
	// DefaultSyncInterval.
	SyncInterval time.Duration
	Logger       *slog.Logger
}

// Shares is the node's share table as the agent changes it.
type Shares interface {
	// Put serves share rec (encrypted if rec or encryptAll says so),
	// replacing a share of the same name. replaced is the share it
	// replaced when that one's trees must end (its path or mode changed).
	Put(rec *statev1.ShareRecord, encryptAll bool) (replaced *server.Share, err error)
	// Delete stops serving share name and returns it.
	Delete(name string) (*server.Share, bool)
	// Release frees what a share no longer served holds, after its trees
	// have ended.
	Release(*server.Share)
}

// Users is the node's user table as the agent changes it.
type Users interface {
	SetUser(name string, ntHash [16]byte)
	DeleteUser(name string)
}

// Node is what the agent drives.
type Node struct {
	Server  *server.Server
	Control *server.Control
	Shares  Shares
	Users   Users
}

// Agent is a node's membership in the cluster.
type Agent struct {
	// Immutable after New.
	cfg  Config
	node Node
	log  *slog.Logger
	cli  *clientv3.Client

	// Owned by Join, then by Run.
	lease    clientv3.LeaseID
	epoch    uint64
	rec      *statev1.NodeRecord // this node's admission record
	fenced   bool
	start    time.Time
	ka       <-chan *clientv3.LeaseKeepAliveResponse
	kaCancel context.CancelFunc
	conf     configState
	offer    offerState
	pub      pubState
	kick     chan struct{}
}

// New connects to etcd (lazily: nothing is sent before Join).
func New(cfg Config, node Node) (*Agent, error) {
	switch {
	case len(cfg.Endpoints) == 0:
		return nil, errors.New("cluster: no etcd endpoints")
	case cfg.Name == "":
		return nil, errors.New("cluster: --name is required with --etcd")
	case cfg.JoinToken == "":
		return nil, errors.New("cluster: a join token is required with --etcd (the one `smbctl node add` printed)")
	case cfg.Sealer == nil:
		return nil, errors.New("cluster: the cluster secret is required with --etcd")
	}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.SyncInterval == 0 {
		cfg.SyncInterval = DefaultSyncInterval
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.Endpoints, TLS: cfg.TLS, DialTimeout: dialTimeout})
	if err != nil {
		return nil, fmt.Errorf("etcd %v: %w", cfg.Endpoints, err)
	}
	a := &Agent{cfg: cfg, node: node, log: log.With("node", cfg.Name), cli: cli, kick: make(chan struct{}, 1)}
	a.conf.init()
	a.offer.init()
	a.pub.init()
	return a, nil
}

// Epoch returns the epoch of the node's current incarnation (for tests
// and logs; only valid between Join and Run, or from Run's goroutine).
func (a *Agent) Epoch() uint64 { return a.epoch }

// Join admits the node into the cluster: it checks the admission, takes
// a lease, obtains the next epoch with the live record, and loads the
// configuration. It fails with ErrNotAdmitted for a node that is not
// admitted or whose join token does not match.
func (a *Agent) Join(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*dialTimeout)
	defer cancel()
	if err := a.join(ctx); err != nil {
		return err
	}
	a.start = time.Now()
	if err := a.loadAll(ctx); err != nil {
		return err
	}
	if _, err := a.cli.Delete(ctx, statev1.NodeOpensPrefix(a.cfg.Name), clientv3.WithPrefix()); err != nil {
		return fmt.Errorf("clearing the opens of an earlier incarnation: %w", err)
	}
	a.log.Info("joined the cluster", "epoch", a.epoch, "lease_ttl", a.cfg.LeaseTTL)
	return nil
}

// dropLease stops the keep-alive and revokes the lease, so that the
// node's live record and published sessions go at once.
func (a *Agent) dropLease() {
	if a.kaCancel != nil {
		a.kaCancel()
		a.kaCancel = nil
	}
	if a.lease != 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if _, err := a.cli.Revoke(ctx, a.lease); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			a.log.Warn("revoking the lease", "err", err)
		}
		cancel()
		a.lease = 0
	}
}

// Leave revokes the lease, so that the node shows down at once and its
// sessions, channels and opens go, and closes the etcd client.
func (a *Agent) Leave(ctx context.Context) {
	a.dropLease()
	a.cli.Close()
}

// Run keeps the node in step with the cluster until ctx ends (then it
// returns nil) or the node is removed (ErrRemoved).
func (a *Agent) Run(ctx context.Context) error {
	for {
		err := a.watch(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, ErrRemoved):
			a.log.Error("leaving the cluster", "err", err)
			a.setFenced(true)
			a.dropLease()
			return err
		case errors.Is(err, errLeaseLost):
			a.log.Warn("lost the cluster lease: refusing new work until joined again")
			a.setFenced(true)
			if err := a.rejoin(ctx); err != nil {
				return err
			}
		default:
			a.log.Warn("cluster watch interrupted, resynchronising", "err", err)
			if err := a.resync(ctx); err != nil {
				return err
			}
		}
	}
}

// resync reloads the whole configuration after a watch failure, retrying
// until it succeeds or ctx ends.
func (a *Agent) resync(ctx context.Context) error {
	return retry(ctx, func() error {
		lctx, cancel := context.WithTimeout(ctx, 2*dialTimeout)
		defer cancel()
		return a.loadAll(lctx)
	})
}

// retry calls f with a growing pause until it succeeds, returns
// ErrRemoved or ctx ends.
func retry(ctx context.Context, f func() error) error {
	pause := 100 * time.Millisecond
	for {
		err := f()
		if err == nil || errors.Is(err, ErrRemoved) {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		pause = min(2*pause, 2*time.Second)
	}
}

// setFenced records whether the node holds its lease and updates what
// the server admits.
func (a *Agent) setFenced(on bool) {
	a.fenced = on
	a.updateAdmission()
}

// updateAdmission derives the server's admission from the lease and the
// draining mark.
func (a *Agent) updateAdmission() {
	adm := server.AdmitAll
	switch {
	case a.fenced:
		adm = server.AdmitNothing
	case a.rec != nil && a.rec.Draining:
		adm = server.AdmitNoSessions
	}
	if a.node.Control != nil {
		a.node.Control.SetAdmission(adm)
	}
}

// Kick asks Run to publish sessions and opens now rather than at the next
// sweep.
func (a *Agent) Kick() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}
