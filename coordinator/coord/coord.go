package coord

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/smbcluster/smbcluster/coordinator/devtoken"
	"github.com/smbcluster/smbcluster/coordinator/service"
	"github.com/smbcluster/smbcluster/coordinator/store"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// Config describes one coordinator.
type Config struct {
	Listen string // address of the admin API

	// The cluster's etcd: Endpoints, or an embedded one with its data in
	// EmbeddedEtcd (store.StartEmbedded). EtcdTLS, if set, secures the
	// client's connections.
	Endpoints    []string
	EmbeddedEtcd string
	EtcdTLS      *tls.Config

	// SecretFile holds the cluster secret; CreateSecret makes one there
	// (mode 0600) if the file does not exist.
	SecretFile   string
	CreateSecret bool

	// DevLoopback serves on a loopback address only and links TokenFile
	// where the starting user's smbctl finds it (devtoken.Publish).
	DevLoopback bool
	TokenFile   string

	Token      string   // bearer token clients must present; "" for none
	ShareRoots []string // where shares may be created
	Version    string
	Log        *slog.Logger        // nil: slog.Default()
	GRPC       []grpc.ServerOption // e.g. TLS credentials

	// MetricsAddr, if set, serves /metrics (Prometheus text) there:
	// the admin calls and etcd calls, timed (metrics.go).
	MetricsAddr string

	etcdDial []grpc.DialOption // set by Start
}

// Coordinator is a running coordinator.
type Coordinator struct {
	Addr      net.Addr // where the admin API listens
	Endpoints []string // of the etcd it uses
	Link      string   // where the development token is linked; "" if not
	// MetricsAddr is where /metrics is served; nil without Config.MetricsAddr.
	MetricsAddr net.Addr

	g     *grpc.Server
	done  chan error
	undo  []func() // in reverse order on Stop
	log   *slog.Logger
	tls   bool
	roots []string
}

// Start listens, opens etcd, loads the cluster secret and serves the
// admin API in the background. It listens first, so that an address in
// use (another coordinator, a second `make run`) is refused before
// anything else starts; on any error it undoes what it did.
func Start(c Config) (_ *Coordinator, err error) {
	co := &Coordinator{log: c.Log, done: make(chan error, 1), roots: c.ShareRoots, tls: len(c.GRPC) > 0}
	if co.log == nil {
		co.log = slog.Default()
	}
	defer func() {
		if err != nil {
			co.runUndo()
		}
	}()
	l, err := Listen(c.Listen, c.DevLoopback)
	if err != nil {
		return nil, err
	}
	co.undo = append(co.undo, func() { l.Close() })
	co.Addr = l.Addr()
	var met *coordMetrics
	if c.MetricsAddr != "" {
		met = newCoordMetrics()
		addr, stop, err := met.serve(c.MetricsAddr, co.log)
		if err != nil {
			return nil, err
		}
		co.MetricsAddr = addr
		co.undo = append(co.undo, stop)
		c.GRPC = append(c.GRPC[:len(c.GRPC):len(c.GRPC)], met.serverOption())
		c.etcdDial = append(c.etcdDial, met.etcdOption())
	}
	sealer, err := LoadSealer(c.SecretFile, c.CreateSecret)
	if err != nil {
		return nil, err
	}
	cli, err := co.openEtcd(c)
	if err != nil {
		return nil, err
	}
	o := service.Options{Store: store.New(cli), Sealer: sealer, Token: c.Token, ShareRoots: c.ShareRoots, Version: c.Version, Logger: c.Log}
	if c.DevLoopback {
		abs, _ := filepath.Abs(c.TokenFile)
		o.TokenHint = fmt.Sprintf("this development coordinator is administered only by the user who started it, with the token in %s", abs)
		co.publish(l.Addr().String(), c.TokenFile)
	}
	if len(c.ShareRoots) == 0 {
		co.log.Warn("no --share-root: every share path will be refused")
	}
	co.g = service.NewGRPCServer(o, c.GRPC...)
	co.log.Info("coordinator serving", "addr", co.Addr.String(), "tls", co.tls, "token", c.Token != "", "share_roots", c.ShareRoots, "version", c.Version)
	go func() { co.done <- co.g.Serve(l) }()
	return co, nil
}

// openEtcd starts the embedded etcd if there is one and dials it.
func (co *Coordinator) openEtcd(c Config) (*clientv3.Client, error) {
	co.Endpoints = c.Endpoints
	if c.EmbeddedEtcd != "" {
		eps, stop, err := store.StartEmbedded(c.EmbeddedEtcd)
		if err != nil {
			return nil, err
		}
		co.undo = append(co.undo, stop)
		co.Endpoints = eps
		co.log.Info("embedded etcd started", "endpoints", eps, "dir", c.EmbeddedEtcd)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: co.Endpoints, DialTimeout: 5 * time.Second, TLS: c.EtcdTLS, DialOptions: c.etcdDial})
	if err != nil {
		return nil, fmt.Errorf("etcd %v: %w", co.Endpoints, err)
	}
	co.undo = append(co.undo, func() { cli.Close() })
	return cli, nil
}

// publish links the development token where the starting user's smbctl
// finds it; failing that, it says where the token is.
func (co *Coordinator) publish(addr, tokenFile string) {
	link, unpublish, err := devtoken.Publish(addr, tokenFile)
	if err != nil {
		co.log.Warn("development token not linked for smbctl: give it --token-file", "token_file", tokenFile, "err", err)
		return
	}
	co.log.Info("development token linked for smbctl", "token_file", tokenFile, "link", link)
	co.Link = link
	co.undo = append(co.undo, unpublish)
}

// Wait returns when the server stops serving, with Serve's error (nil
// after Stop).
func (co *Coordinator) Wait() error {
	err := <-co.done
	co.done <- err
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// Stop ends the admin API (graceful lets calls in progress finish), then
// unlinks the token, closes the etcd client and stops an embedded etcd.
func (co *Coordinator) Stop(graceful bool) {
	if graceful {
		co.g.GracefulStop()
	} else {
		co.g.Stop()
	}
	co.runUndo()
}

func (co *Coordinator) runUndo() {
	for i := len(co.undo) - 1; i >= 0; i-- {
		co.undo[i]()
	}
	co.undo = nil
}

// LoadSealer reads the cluster secret from path; with create, it first
// makes one there (mode 0600) if there is none.
func LoadSealer(path string, create bool) (*statev1.Sealer, error) {
	if _, err := os.Stat(path); create && errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(path, statev1.GenerateSecret(), 0o600); err != nil {
			return nil, fmt.Errorf("creating cluster secret: %w", err)
		}
	}
	secret, err := statev1.LoadSecretFile(path)
	if err != nil {
		return nil, err
	}
	return statev1.NewSealer(secret)
}

// Listen listens on addr; with loopbackOnly it refuses an address that
// is not loopback (after resolving it, so "localhost" is checked too).
func Listen(addr string, loopbackOnly bool) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, ListenError("coordinator", addr, err)
	}
	if tcp, ok := l.Addr().(*net.TCPAddr); loopbackOnly && (!ok || !tcp.IP.IsLoopback()) {
		l.Close()
		return nil, fmt.Errorf("coordinator %s: not a loopback address, and the development mode serves without TLS", l.Addr())
	}
	return l, nil
}

// ListenError says why what (a server, a flag) cannot listen on addr;
// an address in use is named as such, with the likely cause.
func ListenError(what, addr string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%s: address in use: %s (held by another process: another `make run`, coordinator or node?)", what, addr)
	}
	return fmt.Errorf("%s %s: %w", what, addr, err)
}
