package nodemain

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof" // --debug-addr
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/smbcluster/smbcluster/node/auth"
	"github.com/smbcluster/smbcluster/node/cluster"
	"github.com/smbcluster/smbcluster/node/ipc"
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

// serve opens the shares and listeners and serves until ctx is done.
func serve(ctx context.Context, cfg *Config, log *slog.Logger) error {
	coh, err := startCoherence(ctx, cfg, log)
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
	users := newUserDB()
	for _, u := range cfg.Users {
		users.static[strings.ToLower(u.Name)] = auth.NTHash(u.Password)
	}
	control := &server.Control{}
	srv := server.New(server.Config{
		ServerName:      orDefault(cfg.ServerName, "SMBCLUSTER"),
		Workgroup:       orDefault(cfg.Workgroup, "WORKGROUP"),
		Users:           users,
		AllowGuest:      cfg.AllowGuest,
		SigningRequired: cfg.SigningRequired,
		Encryption:      encryptionMode(cfg.Encryption),
		Shares:          shares,
		Logger:          log,
		Control:         control,

		ZeroCopyThreshold:    orDefaultSize(cfg.ZeroCopyThreshold, defaultZeroCopyThreshold),
		SpliceWriteThreshold: orDefaultSize(cfg.SpliceWriteThreshold, defaultSpliceWriteThreshold),
		NoDirectoryLeases:    cfg.NoDirectoryLeases,

		HandshakeTimeout:   limitDuration(cfg.HandshakeTimeout, defaultHandshakeTimeout), // limits.go
		IdleTimeout:        limitDuration(cfg.IdleTimeout, 0),
		MaxConnections:     limitCount(cfg.MaxConnections, defaultMaxConnections),
		MaxOpens:           limitCount(cfg.MaxOpens, defaultMaxOpens()),
		MaxOpensPerSession: limitCount(cfg.MaxOpensPerSession, defaultMaxOpensPerSession),
	})
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
	var listeners []net.Listener
	for _, addr := range cfg.Listen {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			for _, l := range listeners {
				l.Close()
			}
			return fmt.Errorf("listen %s: %w", addr, err)
		}
		listeners = append(listeners, l)
	}
	errc := make(chan error, len(listeners)+1)
	var wg sync.WaitGroup
	actx, stopAgent := context.WithCancel(ctx) // the agent follows the cluster until the shutdown
	defer stopAgent()
	agent, err := startAgent(actx, cfg, log, cluster.Node{Server: srv, Control: control, Shares: shares, Users: users, Files: coh}, coh.peerAddr, errc)
	if agent != nil && coh.shards != nil {
		// The node answers for shards only while its incarnation is valid.
		coh.shards.SetValid(func() bool { return agent.Fence().Valid() })
		srv.OnDurableChange(agent.Kick) // a durable open's record is in etcd at once (durable.go)
		control.SetValid(func() bool { return agent.Fence().Valid() })
	}
	if err != nil {
		for _, l := range listeners {
			l.Close()
		}
		return err
	}
	for _, l := range listeners {
		l := gateListener{Listener: l, srv: srv}
		log.Info("listening", "addr", l.Addr().String())
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Serve(l); !errors.Is(err, server.ErrServerClosed) {
				errc <- fmt.Errorf("serve %s: %w", l.Addr(), err)
			}
		}()
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
	// Immutable after openShares.
	opens  state.Files
	locks  state.Locks
	notify share.ClusterNotify // nil on a single node
	resume *share.ResumeKeys   // one per node: a copy may take its source from another share
	log    *slog.Logger

	mu      sync.RWMutex
	shares  map[string]*server.Share       // by lower-case name
	closers map[*server.Share]func() error // the cluster's shares' directories
}

func (t *shareTable) Lookup(name string) (*server.Share, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	s, ok := t.shares[strings.ToLower(name)]
	return s, ok
}

func (t *shareTable) List() []*server.Share {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]*server.Share, 0, len(t.shares))
	for _, s := range t.shares {
		out = append(out, s)
	}
	return out
}

// openShares opens every configured share and adds IPC$; the shares
// reach per-file state and other nodes' watches through coh.
func openShares(cfg *Config, log *slog.Logger, coh *coherence) (*shareTable, func(), error) {
	// One per node: shares over the same files share it.
	t := &shareTable{opens: coh.files, locks: coh.locks, notify: coh.notify, resume: share.NewResumeKeys(), log: log, shares: map[string]*server.Share{}, closers: map[*server.Share]func() error{}}
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
