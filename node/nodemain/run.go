package nodemain

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/smbcluster/smbcluster/node/clock"
	"github.com/smbcluster/smbcluster/node/storecheck"
	clientv3 "go.etcd.io/etcd/client/v3"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof" // --debug-addr
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/smbcluster/smbcluster/node/auth"
	"github.com/smbcluster/smbcluster/node/cluster"
	"github.com/smbcluster/smbcluster/node/ipc"
	"github.com/smbcluster/smbcluster/node/ipc/dcerpc"
	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/share"
	"github.com/smbcluster/smbcluster/node/state"
	"github.com/smbcluster/smbcluster/node/vfs/osfs"
)

// Run runs a node until ctx ends or a SIGTERM/SIGINT arrives and returns
// the process exit code: 0 after a clean shutdown, 1 on a runtime error,
// 2 on a usage or configuration error.
func Run(ctx context.Context, args []string) int {
	cfg, err := parseFlags(args, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "smbnode: %v\n", err)
		return 2
	}
	log := newLogger(cfg.LogLevel)
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	clock.Watch(ctx, log) // a test's clock offset (SMBCLUSTER_TEST_CLOCK_FILE); nothing otherwise
	if err := serve(ctx, cfg, log); err != nil {
		log.Error("node failed", "err", err)
		return 1
	}
	return 0
}

func newLogger(level string) *slog.Logger {
	var lv slog.Level
	if level != "" {
		lv.UnmarshalText([]byte(level))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))
}

// offerListeners makes a node outside a cluster offer multichannel
// clients its listeners' addresses, one interface each, at --link-speed
// when it is set (else the server offers them at its default).
func offerListeners(control *server.Control, listeners []net.Listener, linkSpeed string) {
	speed, err := parseLinkSpeed(linkSpeed) // validated with the configuration
	if err != nil || speed == 0 {
		return
	}
	var ifs []server.Interface
	for _, l := range listeners {
		if ta, ok := l.Addr().(*net.TCPAddr); ok && !ta.IP.IsUnspecified() {
			ifs = append(ifs, server.Interface{Index: uint32(len(ifs) + 1), IP: ta.IP, LinkSpeed: speed, RSS: true})
		}
	}
	control.SetInterfaces(ifs)
}

// serve opens the shares and listeners and serves until ctx is done.
func serve(ctx context.Context, cfg *Config, log *slog.Logger) error {
	nm, err := startMetrics(cfg, log) // metrics.go
	if err != nil {
		return err
	}
	defer nm.stop()
	coh, err := startCoherence(ctx, cfg, log, nm.m)
	if err != nil {
		return err
	}
	defer coh.stop()
	shares, closeShares, err := openShares(cfg, log, coh)
	if err != nil {
		return err
	}
	defer closeShares()
	if coh.router != nil {
		coh.router.SetNotifySinks(shares.notifySinks)
	}
	var joined atomic.Pointer[member] // the storage checks' records go on its lease
	if coh.etcd != nil {
		shares.checks = storecheck.New(storecheck.Config{
			Client: coh.etcd, Node: cfg.Name, Interval: time.Duration(cfg.StorageCheckInterval), Log: log.With("component", "storecheck"),
			Lease: func() (clientv3.LeaseID, bool) {
				if m := joined.Load(); m != nil {
					return m.Lease()
				}
				return 0, false
			},
		})
	}
	users := newUserDB()
	for _, u := range cfg.Users {
		users.static[strings.ToLower(u.Name)] = auth.NTHash(u.Password)
	}
	krb, err := kerberosFor(cfg, users) // kerberos.go
	if err != nil {
		return err
	}
	control := &server.Control{}
	srv := server.New(server.Config{
		ServerName:      orDefault(cfg.ServerName, "SMBCLUSTER"),
		Workgroup:       orDefault(cfg.Workgroup, "WORKGROUP"),
		Users:           users,
		Kerberos:        krb,
		NoNTLM:          cfg.Auth == authKerberos,
		AllowGuest:      cfg.AllowGuest,
		SigningRequired: cfg.SigningRequired,
		Encryption:      encryptionMode(cfg.Encryption),
		Shares:          shares,
		Logger:          log,
		Control:         control,
		SessionPeers:    coh.sessionPeers(),
		SessionTag:      coh.sessionTag(cfg.Name),
		ServerGUID:      coh.serverGUID,
		Cluster:         cfg.Etcd != "", // witness.go
		Metrics:         nm.m,

		ZeroCopyThreshold:    orDefaultSize(cfg.ZeroCopyThreshold, defaultZeroCopyThreshold),
		SpliceWriteThreshold: orDefaultSize(cfg.SpliceWriteThreshold, defaultSpliceWriteThreshold),
		NoDirectoryLeases:    cfg.NoDirectoryLeases,

		HandshakeTimeout:   limitDuration(cfg.HandshakeTimeout, defaultHandshakeTimeout), // limits.go
		IdleTimeout:        limitDuration(cfg.IdleTimeout, 0),
		MaxConnections:     limitCount(cfg.MaxConnections, defaultMaxConnections),
		MaxOpens:           limitCount(cfg.MaxOpens, defaultMaxOpens()),
		MaxOpensPerSession: limitCount(cfg.MaxOpensPerSession, defaultMaxOpensPerSession),
	})
	if coh.sessions != nil {
		coh.sessions.Attach(srv)
	}
	if coh.router != nil { // durable reconnects through other nodes (durable.go)
		coh.router.SetDurableHolder(srv.SurrenderDurable, server.RefusalStatus, srv.CloseAppInstance)
	}
	if cfg.DebugAddr != "" {
		go func() {
			log.Info("profiling endpoints", "addr", cfg.DebugAddr)
			if err := http.ListenAndServe(cfg.DebugAddr, nil); err != nil {
				log.Warn("profiling endpoints stopped", "err", err)
			}
		}()
	}
	errc := make(chan error, len(cfg.Listen)+1)
	var wg sync.WaitGroup
	actx, stopAgent := context.WithCancel(ctx) // the agent follows the cluster until the shutdown
	defer stopAgent()
	var pub *publicAddrs
	node := cluster.Node{Server: srv, Control: control, Shares: shares, Users: users, Files: coh, Keytabs: keytabsFor(krb, users, cfg)}
	if cfg.Etcd != "" {
		pub = newPublicAddrs(srv, cfg.AddressHook, cfg.AddressInterface, log)
		node.Addresses = pub
	}
	shares.endTrees = srv.EndShareTrees
	shares.viewChanged = func(share string, v storecheck.View) { nm.m.ShareStorage(share, v.State) }
	agent, err := joinCluster(actx, cfg, log, node, coh.peerAddr, nm)
	if err != nil {
		return err
	}
	joined.Store(agent)
	var valid func() bool
	if agent != nil {
		// The node answers for shards, and takes connections, only while
		// its incarnation is valid.
		valid = func() bool { return agent.Fence().Valid() }
		if coh.shards != nil {
			coh.shards.SetValid(valid)
			srv.OnDurableChange(agent.Kick)      // a durable open's record is in etcd at once (durable.go)
			srv.OnPersistentGrant(agent.Publish) // a persistent one's before its CREATE is answered
		}
		control.SetValid(valid) // the engine answers nothing while fenced
		pub.valid = valid
	}
	wit, err := startWitness(actx, cfg, log, witnessDeps{users: users, krb: krb, serverName: orDefault(cfg.ServerName, "SMBCLUSTER"),
		workgroup: orDefault(cfg.Workgroup, "WORKGROUP"), shares: shares, etcd: coh.etcd, agent: agent, metrics: nm.m}) // witness.go
	if err != nil {
		if agent != nil {
			agent.Leave(context.Background())
		}
		return err
	}
	defer wit.stop()
	listeners, err := listenStatic(cfg, agent)
	if err != nil {
		if agent != nil {
			agent.Leave(context.Background())
		}
		return err
	}
	if agent == nil {
		offerListeners(control, listeners, cfg.LinkSpeed)
	}
	for _, l := range listeners {
		if pub != nil {
			pub.static = append(pub.static, l.Addr())
		}
		l := &gateListener{Listener: l, srv: srv, valid: valid}
		log.Info("listening", "addr", l.Addr().String())
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Serve(l); !errors.Is(err, server.ErrServerClosed) {
				errc <- fmt.Errorf("serve %s: %w", l.Addr(), err)
			}
		}()
	}
	if agent != nil {
		agent.run(actx, errc)
	}
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
	}
	stopAgent()
	shutdown(srv, agent, time.Duration(cfg.ShutdownTimeout), log)
	wg.Wait()
	return runErr
}

// listenStatic listens on the --listen addresses but the node's public
// addresses (those it was admitted with), which it listens on only while
// it holds them (publicAddrs).
func listenStatic(cfg *Config, agent *member) ([]net.Listener, error) {
	var public []string
	if agent != nil {
		public = agent.Admitted()
	}
	var listeners []net.Listener
	for _, addr := range cfg.Listen {
		if slices.ContainsFunc(public, func(p string) bool { return sameEndpoint(p, addr) }) {
			continue
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			for _, l := range listeners {
				l.Close()
			}
			return nil, listenError("--listen", addr, err)
		}
		listeners = append(listeners, l)
	}
	return listeners, nil
}

// shutdown stops the node gracefully within timeout: in a cluster the
// node first leaves the interface list (no new channel is bound here),
// then the server stops reading requests, answers those it is serving and
// closes its connections (forcibly once timeout has passed), and last the
// node leaves the cluster, its lease revoked so that it shows down and
// its sessions and opens are released at once.
func shutdown(srv *server.Server, agent *member, timeout time.Duration, log *slog.Logger) {
	if timeout == 0 {
		timeout = defaultShutdownTimeout
	}
	log.Info("shutting down", "timeout", timeout)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if agent != nil {
		if err := agent.drain(ctx); err != nil {
			log.Warn("leaving the interface list", "err", err)
		}
	}
	if err := srv.Shutdown(ctx); err != nil {
		log.Warn("shutdown timed out: the remaining connections were closed", "timeout", timeout)
	}
	if agent != nil {
		agent.Leave(ctx)
	}
	log.Info("shut down", "took", time.Since(start).Round(time.Millisecond))
}

func encryptionMode(s string) server.EncryptionMode {
	switch s {
	case "desired":
		return server.EncryptDesired
	case "required":
		return server.EncryptRequired
	}
	return server.EncryptOff
}

// orDefaultSize is a size setting: 0 means the default d.
func orDefaultSize(n, d int) int {
	if n == 0 {
		return d
	}
	return n
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// shareTable implements server.Shares; it is safe for concurrent use so
// that shares can later be added and removed while serving.
type shareTable struct {
	pipeSecurity *dcerpc.Security // DCE/RPC authentication on IPC$ pipes; set before serving (witness.go)
	// Immutable after openShares.
	opens  state.Files
	locks  state.Locks
	notify share.ClusterNotify // nil on a single node
	resume *share.ResumeKeys   // one per node: a copy may take its source from another share
	log    *slog.Logger

	// In a cluster (nil on a single node): the storage checks of the
	// cluster's shares (storage.go), and, set before serving, how the
	// trees of a share refused are ended and who hears of a view's change.
	checks      *storecheck.Checker
	endTrees    func(*server.Share) int
	viewChanged func(share string, v storecheck.View)

	mu      sync.RWMutex
	shares  map[string]*server.Share       // by lower-case name
	closers map[*server.Share]func() error // the cluster's shares' directories
	gates   map[string]*storageGate        // the cluster's shares' storage checks, by lower-case name
}

// List implements server.Shares: the shares clients may connect to now.
func (t *shareTable) List() []*server.Share {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]*server.Share, 0, len(t.shares))
	for k, s := range t.shares {
		if g := t.gates[k]; g != nil {
			if v, _ := g.get(); !served(v) {
				continue
			}
		}
		out = append(out, s)
	}
	return out
}

// openShares opens every configured share and adds IPC$; the shares
// reach per-file state and other nodes' watches through coh.
func openShares(cfg *Config, log *slog.Logger, coh *coherence) (*shareTable, func(), error) {
	// One per node: shares over the same files share it.
	t := &shareTable{opens: coh.files, locks: coh.locks, notify: coh.notify, resume: share.NewResumeKeys(), log: log, shares: map[string]*server.Share{}, closers: map[*server.Share]func() error{}, gates: map[string]*storageGate{}}
	var closers []func() error
	closeAll := func() {
		for _, c := range closers {
			c()
		}
		t.releaseAll()
	}
	for _, sc := range cfg.Shares {
		fsys, err := osfs.New(sc.Path)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("share %q: %w", sc.Name, err)
		}
		closers = append(closers, fsys.Close)
		disk := share.NewDisk(sc.Name, fsys, sc.ReadOnly, log)
		disk.SetState(t.opens, t.locks)
		if t.notify != nil {
			disk.SetClusterNotify(t.notify)
		}
		disk.SetResumeKeys(t.resume)
		t.shares[strings.ToLower(sc.Name)] = &server.Share{
			Name: sc.Name, Comment: sc.Comment, Path: sc.Path, ReadOnly: sc.ReadOnly, Encrypt: sc.Encrypt,
			Backend: disk,
		}
	}
	env := &ipc.Env{
		ServerName: orDefault(cfg.ServerName, "SMBCLUSTER"),
		Domain:     orDefault(cfg.Workgroup, "WORKGROUP"),
		Shares:     func() []ipc.ShareInfo { return shareInfos(t) },
		Security:   func() *dcerpc.Security { return t.pipeSecurity }, // witness.go
	}
	t.shares["ipc$"] = &server.Share{Name: "IPC$", Comment: "IPC Service", Pipe: true, Backend: share.NewIPC(env)}
	return t, closeAll, nil
}

// shareInfos describes the shares for srvsvc.
func shareInfos(t *shareTable) []ipc.ShareInfo {
	var out []ipc.ShareInfo
	for _, s := range t.List() {
		si := ipc.ShareInfo{Name: s.Name, Comment: s.Comment, Type: ipc.ShareTypeDisk, Path: `C:\` + strings.ReplaceAll(strings.TrimPrefix(s.Path, "/"), "/", `\`)}
		if s.Pipe {
			si.Type = ipc.ShareTypeIPC | ipc.ShareTypeSpecial
			si.Path = ""
		}
		out = append(out, si)
	}
	return out
}

// listenError says why the node cannot listen on addr (given by flag);
// an address in use is named as such.
func listenError(flag, addr string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%s: address in use: %s (held by another process: another node or `make run`?)", flag, addr)
	}
	return fmt.Errorf("%s %s: %w", flag, addr, err)
}
