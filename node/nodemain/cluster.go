package nodemain

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/smbcluster/smbcluster/node/cluster"
	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/share"
	"github.com/smbcluster/smbcluster/node/vfs/osfs"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
)

// Version is the node's build version, published to the cluster (set at
// build time with -ldflags "-X .../nodemain.Version=...").
var Version = "dev"

// member is the node's cluster agent, run in the background.
type member struct {
	*cluster.Agent
	ran chan struct{} // closed when Run has returned
}

// drain waits for Run to return (its context ended) and takes the node
// out of the interface list (cluster.Agent.Drain).
func (m *member) drain(ctx context.Context) error {
	select {
	case <-m.ran:
	case <-ctx.Done():
		return ctx.Err()
	}
	return m.Drain(ctx)
}

// joinCluster joins the cluster when cfg asks for it; run starts the
// agent after. It returns nil, nil without --etcd.
func joinCluster(ctx context.Context, cfg *Config, log *slog.Logger, node cluster.Node, peerAddr string, nm *nodeMetrics) (*member, error) {
	if cfg.Etcd == "" {
		return nil, nil
	}
	ccfg, err := clusterConfig(cfg, log)
	if err != nil {
		return nil, err
	}
	ccfg.PeerAddress = peerAddr
	ccfg.MetricsAddress, ccfg.DialOptions = nm.addr, etcdDialOptions(nm.m)
	if nm.m != nil {
		ccfg.Fenced = func(err error) { nm.m.Fenced(cluster.FenceReason(err)) }
	}
	a, err := cluster.New(ccfg, node)
	if err != nil {
		return nil, err
	}
	if err := a.Join(ctx); err != nil {
		a.Leave(context.Background())
		return nil, err
	}
	return &member{Agent: a, ran: make(chan struct{})}, nil
}

// run runs the agent in the background; its fatal error (the node was
// removed, or superseded by another process that joined under its name)
// goes to errc and ends the process.
func (m *member) run(ctx context.Context, errc chan<- error) {
	go func() {
		defer close(m.ran)
		if err := m.Run(ctx); err != nil {
			errc <- err
		}
	}()
}

// clusterConfig reads the files the cluster flags name.
func clusterConfig(cfg *Config, log *slog.Logger) (cluster.Config, error) {
	token := cfg.JoinToken
	if cfg.JoinTokenFile != "" {
		b, err := os.ReadFile(cfg.JoinTokenFile)
		if err != nil {
			return cluster.Config{}, fmt.Errorf("join token: %w", err)
		}
		token = strings.TrimSpace(string(b))
	}
	secret, err := statev1.LoadSecretFile(cfg.SecretFile)
	if err != nil {
		return cluster.Config{}, err
	}
	sealer, err := statev1.NewSealer(secret)
	if err != nil {
		return cluster.Config{}, err
	}
	tlsCfg, err := etcdTLS(cfg)
	if err != nil {
		return cluster.Config{}, err
	}
	speed, err := parseLinkSpeed(cfg.LinkSpeed) // validated with the configuration
	if err != nil {
		return cluster.Config{}, err
	}
	return cluster.Config{
		Endpoints: strings.Split(cfg.Etcd, ","), TLS: tlsCfg,
		Name: cfg.Name, JoinToken: token, Sealer: sealer,
		Advertise: cfg.Advertise, Version: Version,
		LeaseTTL: time.Duration(cfg.LeaseTTL), Logger: log, LinkSpeed: speed,
	}, nil
}

// etcdTLS is the TLS configuration for etcd, nil for plaintext.
func etcdTLS(cfg *Config) (*tls.Config, error) {
	if cfg.EtcdCA == "" && cfg.EtcdCert == "" {
		return nil, nil
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.EtcdCA != "" {
		pem, err := os.ReadFile(cfg.EtcdCA)
		if err != nil {
			return nil, fmt.Errorf("--etcd-ca: %w", err)
		}
		t.RootCAs = x509.NewCertPool()
		if !t.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--etcd-ca %s: no PEM certificates", cfg.EtcdCA)
		}
	}
	if cfg.EtcdCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.EtcdCert, cfg.EtcdKey)
		if err != nil {
			return nil, fmt.Errorf("--etcd-cert: %w", err)
		}
		t.Certificates = []tls.Certificate{cert}
	}
	return t, nil
}

// gateListener closes new connections while the server takes no new
// work (the node is fenced: it lost its cluster lease or was superseded);
// through Control.Accept, the agent's fencing also ends a connection it
// accepted a moment before (Server.EndConnections). valid, when set, is
// the agent's fencing, asked too: a node resumed after a stop past its
// lease deadline refuses what was queued before the fencing has run.
type gateListener struct {
	net.Listener
	srv   *server.Server
	valid func() bool
}

func (g *gateListener) Accept() (net.Conn, error) {
	for {
		nc, err := g.srv.Config().Control.Accept(g.Listener)
		if err != nil || g.valid == nil || g.valid() {
			return nc, err
		}
		nc.Close()
	}
}

// userDB is the node's user table: lower-case name → NT hash. Users from
// the cluster take precedence over those from flags. Safe for concurrent
// use: the cluster agent changes it while sessions authenticate.
type userDB struct {
	mu         sync.RWMutex
	static     map[string][16]byte // from --user; set before serving
	cluster    map[string][16]byte
	principals map[string]string // lower-case "name@realm" → cluster user (kerberos.go)
	mapRealms  []string          // realms whose principals map to the user of their name
}

func newUserDB() *userDB {
	return &userDB{static: map[string][16]byte{}, cluster: map[string][16]byte{}, principals: map[string]string{}}
}

func (u *userDB) NTHash(user, domain string) ([16]byte, bool) {
	name := strings.ToLower(user)
	u.mu.RLock()
	defer u.mu.RUnlock()
	if h, ok := u.cluster[name]; ok {
		return h, true
	}
	h, ok := u.static[name]
	return h, ok
}

// SetUser adds or changes a cluster user.
func (u *userDB) SetUser(name string, h [16]byte) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.cluster[strings.ToLower(name)] = h
}

// DeleteUser removes a cluster user.
func (u *userDB) DeleteUser(name string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.cluster, strings.ToLower(name))
	for p, user := range u.principals {
		if strings.EqualFold(user, name) {
			delete(u.principals, p)
		}
	}
}

// Put serves a share from the cluster (cluster.Shares). A share whose path
// and read-only mode are unchanged keeps its backend, so its trees go on.
func (t *shareTable) Put(rec *statev1.ShareRecord, encryptAll bool) (*server.Share, error) {
	key := strings.ToLower(rec.Name)
	if key == "ipc$" {
		return nil, errors.New("IPC$ is built in")
	}
	t.mu.RLock()
	old := t.shares[key]
	t.mu.RUnlock()
	sh := &server.Share{
		Name: rec.Name, Comment: rec.Comment, Path: rec.Path, ReadOnly: rec.ReadOnly,
		Encrypt: rec.EncryptData || encryptAll, CA: rec.ContinuousAvailability,
	}
	var oldDisk *share.Disk
	if old != nil {
		oldDisk, _ = old.Backend.(*share.Disk)
	}
	reuse := oldDisk != nil && old.Path == rec.Path && old.ReadOnly == rec.ReadOnly && oldDisk.VolumeID() == statev1.VolumeID(rec)
	if reuse {
		sh.Backend = old.Backend
	} else {
		fsys, err := osfs.New(rec.Path)
		if err != nil {
			return nil, err
		}
		fsys.Hide(statev1.StorageProbePrefix) // the storage check's probes (storage.go)
		disk := share.NewDisk(rec.Name, fsys, rec.ReadOnly, t.log)
		disk.SetVolumeID(statev1.VolumeID(rec)) // one identity on every node, whatever its mount reports
		disk.SetState(t.opens, t.locks)
		if t.notify != nil {
			disk.SetClusterNotify(t.notify)
		}
		disk.SetResumeKeys(t.resume)
		sh.Backend = disk
		t.mu.Lock()
		t.closers[sh] = fsys.Close
		t.mu.Unlock()
	}
	t.mu.Lock()
	t.shares[key] = sh
	if reuse {
		t.closers[sh] = t.closers[old]
		delete(t.closers, old)
	}
	t.mu.Unlock()
	if t.checks != nil {
		t.startCheck(rec, sh)
	}
	if reuse {
		return nil, nil
	}
	return old, nil
}

// Delete stops serving share name (cluster.Shares).
func (t *shareTable) Delete(name string) (*server.Share, bool) {
	key := strings.ToLower(name)
	t.mu.Lock()
	sh, ok := t.shares[key]
	if !ok || sh.Pipe {
		t.mu.Unlock()
		return nil, false
	}
	delete(t.shares, key)
	t.mu.Unlock()
	t.stopCheck(name)
	return sh, true
}

// Release closes the directory of a share no longer served.
func (t *shareTable) Release(sh *server.Share) {
	t.mu.Lock()
	c := t.closers[sh]
	delete(t.closers, sh)
	t.mu.Unlock()
	if c != nil {
		c()
	}
}

// releaseAll ends the storage checks and closes the cluster shares'
// directories at shutdown.
func (t *shareTable) releaseAll() {
	t.stopChecks()
	t.mu.Lock()
	cs := t.closers
	t.closers = map[*server.Share]func() error{}
	t.mu.Unlock()
	for _, c := range cs {
		c()
	}
}
