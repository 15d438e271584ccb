package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/state"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// Defaults for Config's zero fields.
const (
	DefaultLeaseTTL     = 3 * time.Second
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
	// LinkSpeed is the speed, in bits per second, the node's addresses
	// are offered to multichannel clients with; it is published in the
	// live record. Zero → DefaultLinkSpeed.
	LinkSpeed uint64
	// MetricsAddress is where the node serves /metrics and /stats
	// (host:port, empty: nowhere); published in the live record for the
	// coordinator (smbctl top).
	MetricsAddress string
	// DialOptions are added to the etcd client's (metrics interceptors).
	DialOptions []grpc.DialOption
	// Fenced, if set, is told why each incarnation ended (metrics).
	Fenced func(reason error)
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
	// SetPrincipals sets the Kerberos principals ("name@REALM") that
	// log on as cluster user name.
	SetPrincipals(name string, principals []string)
}

// Keytabs is where the cluster's Kerberos service keytab goes.
type Keytabs interface {
	// SetKeytab makes keytab (a keytab file's contents) the node's service
	// keys, accepting only spns when not empty; a nil keytab removes the
	// cluster's (the node falls back to its own, if any).
	SetKeytab(keytab []byte, spns []string) error
}

// OpenFiles is what the node knows of its opens' per-file state, for the
// open records the agent publishes.
type OpenFiles interface {
	// Describe returns the node owning the shard of h's file ("" while
	// it has none, or for a handle without per-file state such as a
	// pipe) and the byte-range locks h holds, in the order granted.
	Describe(h server.Handle) (owner string, locks []state.Lock)
}

// DurableFiles is what OpenFiles may also tell of a durable open: its
// entry at its file's owner, published so that another node can take
// the open over when this one dies.
type DurableFiles interface {
	DescribeDurable(h server.Handle) (state.HeldEntry, bool)
}

// Node is what the agent drives.
type Node struct {
	Server  *server.Server
	Control *server.Control
	Shares  Shares
	Users   Users
	Files   OpenFiles // nil: open records name no owner and no locks
	Keytabs Keytabs   // nil: the cluster's keytab is ignored
	// Addresses serves the public addresses the node holds; nil: the
	// node takes none (and its live record lists those it was admitted
	// with).
	Addresses PublicAddresses
}

// Agent is a node's membership in the cluster.
type Agent struct {
	// Immutable after New.
	cfg     Config
	node    Node
	log     *slog.Logger
	cli     *clientv3.Client
	life    context.Context // ends at Leave
	endLife context.CancelFunc

	// cur is the current incarnation (fence.go); written by Join and Run.
	cur atomic.Pointer[incarnation]

	// admMu serializes what the server admits: the agent's loop and
	// whoever ends a Fencing both set it (updateAdmission).
	admMu    sync.Mutex
	draining bool     // under admMu
	admitted *Fencing // under admMu: the incarnation whose join completed

	// Owned by Join, then by Run.
	rec     *statev1.NodeRecord // this node's admission record
	claimed uint64              // the highest epoch this agent tried to take
	start   time.Time
	conf    configState
	offer   offerState
	pub     pubState
	addrs   addrState
	kick    chan struct{}
	// Publication requests (Publish) and the highest one a completed
	// sweep covered; done is closed and replaced after every sweep.
	pubReq  atomic.Uint64
	pubMu   sync.Mutex
	pubDone uint64
	pubTick chan struct{}
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
	cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.Endpoints, TLS: cfg.TLS, DialTimeout: dialTimeout, DialOptions: cfg.DialOptions})
	if err != nil {
		return nil, fmt.Errorf("etcd %v: %w", cfg.Endpoints, err)
	}
	a := &Agent{cfg: cfg, node: node, log: log.With("node", cfg.Name), cli: cli, kick: make(chan struct{}, 1), pubTick: make(chan struct{})}
	a.life, a.endLife = context.WithCancel(context.Background())
	a.conf.init()
	a.offer.init()
	a.pub.init()
	a.addrs.init()
	a.updateAdmission() // nothing before the join
	return a, nil
}

// Admitted returns the public addresses the node was admitted with, as
// Join read them; call it between Join and Run.
func (a *Agent) Admitted() []string { return slices.Clone(a.rec.GetAddresses()) }

// Epoch returns the epoch of the node's current incarnation, 0 before it
// joined (Fence().Epoch()).
func (a *Agent) Epoch() uint64 { return a.Fence().Epoch() }

// joinBudget bounds Join as a whole (each etcd call is bounded by
// callTimeout): a node that starts with etcd gives it that long.
const joinBudget = 2 * dialTimeout

// Join admits the node into the cluster: it checks the admission, takes
// a lease, obtains the next epoch with the live record, and loads the
// configuration. It fails with ErrNotAdmitted for a node that is not
// admitted or whose join token does not match; other failures are
// retried for joinBudget.
func (a *Agent) Join(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, joinBudget)
	defer cancel()
	var last error
	err := retry(ctx, func() error {
		last = a.joinOnce(ctx)
		if errors.Is(last, ErrNotAdmitted) || errors.Is(last, ErrSuperseded) {
			return errStop{last}
		}
		return last
	})
	var stop errStop
	if errors.As(err, &stop) {
		return stop.err
	}
	if ctx.Err() != nil && last != nil {
		return last
	}
	a.log.Info("joined the cluster", "epoch", a.Epoch(), "lease_ttl", a.cfg.LeaseTTL)
	a.admit()
	return nil
}

// admit lets the server take work under the current incarnation, once
// its join has loaded the configuration.
func (a *Agent) admit() {
	a.admMu.Lock()
	a.admitted = a.Fence()
	a.admMu.Unlock()
	a.updateAdmission()
}

// errStop makes retry return the error it wraps.
type errStop struct{ err error }

func (e errStop) Error() string { return fmt.Sprint(e.err) }

// joinOnce is one attempt of Join; on failure it drops what it obtained.
func (a *Agent) joinOnce(ctx context.Context) error {
	if err := a.join(ctx); err != nil {
		return err
	}
	a.start = time.Now()
	err := a.load(ctx)
	if err == nil {
		// The opens of an earlier incarnation are this node's no more;
		// its durable opens' records stay for other nodes to take them
		// over (node/peer orphans.go), until a reconnect or their timeout.
		err = a.clearEarlierOpens(ctx)
	}
	if err != nil {
		inc := a.inc()
		inc.fencing.end(fmt.Errorf("%w: joining failed: %v", errLeaseLost, err))
		a.revoke(context.WithoutCancel(ctx), inc.lease)
		return err
	}
	return nil
}

// clearEarlierOpens deletes the open records of the node's earlier
// incarnations but those of durable opens.
func (a *Agent) clearEarlierOpens(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, callTimeout(a.cfg.LeaseTTL))
	resp, err := a.cli.Get(cctx, statev1.NodeOpensPrefix(a.cfg.Name), clientv3.WithPrefix())
	cancel()
	if err != nil {
		return err
	}
	var ops []clientv3.Op
	for _, kv := range resp.Kvs {
		rec := &statev1.OpenRecord{}
		if proto.Unmarshal(kv.Value, rec) == nil && rec.DurableOpen != nil {
			continue
		}
		ops = append(ops, clientv3.OpDelete(string(kv.Key)))
	}
	for len(ops) > 0 { // etcd bounds the operations of one transaction
		n := min(len(ops), 64)
		if err := a.guarded(ctx, ops[:n]...); err != nil {
			return err
		}
		ops = ops[n:]
	}
	return nil
}

// load reads the configuration, bounded by callTimeout.
func (a *Agent) load(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, callTimeout(a.cfg.LeaseTTL))
	defer cancel()
	return a.loadAll(cctx)
}

// revoke revokes lease (best effort, bounded by callTimeout), so that
// what the node published on it goes at once.
func (a *Agent) revoke(ctx context.Context, lease clientv3.LeaseID) {
	if lease == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout(a.cfg.LeaseTTL))
	defer cancel()
	if _, err := a.cli.Revoke(cctx, lease); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		a.log.Warn("revoking the lease", "err", err)
	}
}

// Leave ends the node's incarnation (it serves nothing from then on) and
// revokes its lease, so that the node shows down at once and its
// sessions, channels and opens go, and closes the etcd client. The
// records of its durable opens, which outlive the lease, are deleted
// first: a node leaves after its server closed them (server.Shutdown), and
// no other node must keep them as a dead node's.
func (a *Agent) Leave(ctx context.Context) {
	if a.inc().fencing.Valid() {
		if err := a.guarded(ctx, clientv3.OpDelete(statev1.NodeOpensPrefix(a.cfg.Name), clientv3.WithPrefix())); err != nil {
			a.log.Warn("deleting the open records on leaving", "err", err)
		}
	}
	a.endLife()
	inc := a.inc()
	inc.fencing.end(errLeft)
	a.revoke(ctx, inc.lease)
	a.cli.Close()
}

// Run keeps the node in step with the cluster until ctx ends or Leave is
// called (then it returns nil), the node is removed (ErrRemoved) or
// superseded by another process under its name (ErrSuperseded). A lost
// lease is not an error: Run joins again.
func (a *Agent) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(a.life, cancel)
	defer stop()
	for {
		err := a.watch(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, ErrRemoved):
			a.log.Error("leaving the cluster", "err", err)
			inc := a.inc()
			inc.fencing.end(err)
			a.revoke(ctx, inc.lease)
			return err
		case errors.Is(err, ErrSuperseded):
			a.log.Error("superseded: another smbnode joined the cluster under this node's name; stopping", "err", err)
			return err
		case errors.Is(err, errLeaseLost):
			a.log.Warn("lost the cluster lease: serving nothing until joined again", "err", err)
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
// until it succeeds, the incarnation ends or ctx ends.
func (a *Agent) resync(ctx context.Context) error {
	f := a.Fence()
	err := retry(ctx, func() error {
		if !f.Valid() {
			return errStop{f.Err()} // watch returns why
		}
		return a.load(ctx)
	})
	if errors.As(err, new(errStop)) {
		return nil
	}
	return err
}

// retry calls f with a growing pause until it succeeds, returns
// ErrRemoved, ErrSuperseded or an errStop, or ctx ends (then it returns
// nil).
func retry(ctx context.Context, f func() error) error {
	pause := 100 * time.Millisecond
	for {
		err := f()
		if err == nil || errors.Is(err, ErrRemoved) || errors.Is(err, ErrSuperseded) || errors.As(err, new(errStop)) {
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

// setDraining records the node's draining mark and updates what the
// server admits.
func (a *Agent) setDraining(on bool) {
	a.admMu.Lock()
	a.draining = on
	a.admMu.Unlock()
	a.updateAdmission()
}

// updateAdmission derives the server's admission from the Fencing (valid,
// and its join complete) and the draining mark. Whoever ends a Fencing
// calls it after, so that a concurrent call from the agent's loop cannot
// admit work again.
func (a *Agent) updateAdmission() {
	a.admMu.Lock()
	defer a.admMu.Unlock()
	adm := server.AdmitAll
	switch f := a.Fence(); {
	case f != a.admitted || !f.Valid():
		adm = server.AdmitNothing
	case a.draining:
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

// Publish asks Run to publish sessions and opens now and waits until a
// sweep that began after the call has written them to etcd, or ctx ends:
// a persistent handle's record is in etcd before its CREATE is answered.
func (a *Agent) Publish(ctx context.Context) error {
	want := a.pubReq.Add(1)
	a.Kick()
	for {
		a.pubMu.Lock()
		done, tick := a.pubDone, a.pubTick
		a.pubMu.Unlock()
		if done >= want {
			return nil
		}
		select {
		case <-tick:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// publish sweeps and then tells the Publish calls made before it began.
func (a *Agent) publish(ctx context.Context) error {
	req := a.pubReq.Load()
	if err := a.sweep(ctx); err != nil {
		return err
	}
	a.swept(req)
	return nil
}

// swept records that a sweep begun when req publication requests were
// made has written everything.
func (a *Agent) swept(req uint64) {
	a.pubMu.Lock()
	a.pubDone = max(a.pubDone, req)
	close(a.pubTick)
	a.pubTick = make(chan struct{})
	a.pubMu.Unlock()
}
