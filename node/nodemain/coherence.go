package nodemain

import (
	"context"
	"crypto/sha256"
	"expvar"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/smbcluster/smbcluster/node/cluster"
	"github.com/smbcluster/smbcluster/node/handoff"
	"github.com/smbcluster/smbcluster/node/mesh"
	"github.com/smbcluster/smbcluster/node/metrics"
	"github.com/smbcluster/smbcluster/node/peer"
	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/share"
	"github.com/smbcluster/smbcluster/node/state"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
)

// coherence is where the node's shares find per-file state: its own
// tables on a single node; in a cluster, the router to the owner nodes
// with its peer service and shard map.
type coherence struct {
	files    state.Files
	locks    state.Locks
	notify   share.ClusterNotify // nil on a single node
	router   *peer.Router        // nil on a single node
	sessions *handoff.Peers      // nil on a single node
	shards   *cluster.ShardMap   // nil on a single node
	peerAddr string
	etcd     *clientv3.Client // nil on a single node
	// serverGUID is the cluster's: every node answers NEGOTIATE as one
	// server, so that a client binds channels on several of them.
	serverGUID [16]byte
	stop       func()
}

// startCoherence sets up per-file state for cfg. In a cluster it listens
// for the node-to-node API, follows the shard map in etcd and routes each
// file's state to its owner.
func startCoherence(ctx context.Context, cfg *Config, log *slog.Logger, m *metrics.Node) (*coherence, error) {
	table, locks := state.NewTable(), state.NewLockTable()
	instrumentState(m, table, locks, log) // metrics.go
	if cfg.Etcd == "" {
		return &coherence{files: table, locks: locks, stop: func() {}}, nil
	}
	tlsCfg, err := etcdTLS(cfg)
	if err != nil {
		return nil, err
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(cfg.Etcd, ","), TLS: tlsCfg, DialOptions: etcdDialOptions(m)})
	if err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	secret, err := statev1.LoadSecretFile(cfg.SecretFile)
	if err != nil {
		cli.Close()
		return nil, err
	}
	serverTLS, clientTLS, err := peer.TLSConfigs(secret, cfg.Name)
	if err != nil {
		cli.Close()
		return nil, err
	}
	l, err := net.Listen("tcp", peerListenAddr(cfg))
	if err != nil {
		cli.Close()
		return nil, listenError("--peer-listen", peerListenAddr(cfg), err)
	}
	log = log.With("component", "peer")
	shards := cluster.NewShardMap(cli, cfg.Name, l.Addr().String(), log)
	// Mutual TLS under a CA derived from the cluster secret (peer/tls.go).
	// One connection to each other node, shared by the peer and session
	// services (node/mesh).
	nodes := mesh.New(cfg.Name, shards.Peers, func(addr string) (*grpc.ClientConn, error) {
		return grpc.NewClient(addr, append(append(peerDialOptions(m), peerLiveness...), grpc.WithTransportCredentials(credentials.NewTLS(clientTLS)))...)
	}, log)
	router := peer.New(shards, table, locks, nodes, log)
	if m != nil {
		router.Observe(m.Peer) // Admit, Call and Wait over the exchange
		m.CountPeerCalls(router.Stats().Sent, router.Stats().Local.Load)
		st := router.Stats()
		m.CountDelegations(st.Delegated.Load, st.Granted.Load, st.Recalled.Load, st.Returned.Load)
		m.CountBroadcasts(nodes.Asked)
		shards.Moved = m.ShardMoved
	}
	shards.Busy = router.ShardBusy
	shards.Recover = router.Recover
	shards.NodeUp = router.NodeUp
	router.SetDurableRecords(durableRecords{cli: cli, self: cfg.Name, epoch: shards.Epoch, log: log}) // durable.go
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(serverTLS)), peerPings,
		grpc.ChainUnaryInterceptor(peer.RecoverUnary(log)), grpc.ChainStreamInterceptor(peer.RecoverStream(log)))
	peerv1.RegisterPeerServiceServer(srv, router.Service())
	// A channel bound through this node to another node's session is
	// handed to that node (node/handoff).
	sessions := handoff.New(nodes, log)
	peerv1.RegisterSessionServiceServer(srv, sessions.Service())
	shards.NodeGone = func(node string, keep uint64) {
		router.DropNode(node, keep)
		nodes.NodeGone(node) // an incarnation's end: its calls and relays end too
	}
	go srv.Serve(l)
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); shards.Run(sctx) }()
	peerRouters.add(router)
	log.Info("node-to-node API", "addr", l.Addr().String())
	return &coherence{
		files: router, locks: router, notify: router, router: router, sessions: sessions, shards: shards, peerAddr: l.Addr().String(),
		etcd:       cli,
		serverGUID: clusterServerGUID(secret),
		stop: func() {
			cancel()
			<-done
			srv.Stop()
			peerRouters.remove(router)
			router.Close()
			nodes.Close()
			cli.Close()
		},
	}, nil
}

// Describe implements cluster.OpenFiles: the node owning the shard of an
// open's file as this node's shard map has it, and the byte-range locks
// the open holds.
func (c *coherence) Describe(h server.Handle) (owner string, locks []state.Lock) {
	so := share.StateOpen(h)
	if so == nil || c.router == nil {
		return "", nil
	}
	if rt, ok := c.shards.Owner(peer.ShardOf(so.Key)); ok {
		owner = rt.Node
	}
	return owner, c.router.HeldLocks(so)
}

// peerListenAddr is --peer-listen, or the first --listen host on any
// free port.
func peerListenAddr(cfg *Config) string {
	if cfg.PeerListen != "" {
		return cfg.PeerListen
	}
	host := "127.0.0.1"
	if len(cfg.Listen) > 0 {
		if h, _, err := net.SplitHostPort(cfg.Listen[0]); err == nil && h != "" {
			host = h
		}
	}
	return net.JoinHostPort(host, "0")
}

// notifySinks finds a share's notifier for the changes other nodes send.
func (t *shareTable) notifySinks(name string) (peer.NotifySink, bool) {
	sh, _ := t.lookup(name)
	if sh == nil {
		return nil, false
	}
	d, ok := sh.Backend.(*share.Disk)
	return d, ok
}

// peerRouters are the process's routers (localcluster runs several
// nodes in one process); the expvar smbcluster_peer_rpcs on /debug/vars
// (--debug-addr) is the number of calls and deliveries they sent to
// other nodes, which make bench-cluster reports per open. The same
// counts, per node, are on /metrics (smbcluster_peer_rpcs_sent_total,
// with each call's latency by method in smbcluster_peer_rpc_duration_seconds);
// the expvar stays for bench/cluster.sh, which sums a whole process.
var peerRouters routerSet

type routerSet struct {
	once sync.Once
	mu   sync.Mutex
	set  map[*peer.Router]bool
	gone uint64 // the counts of routers removed
}

func (s *routerSet) add(r *peer.Router) {
	s.once.Do(func() {
		expvar.Publish("smbcluster_peer_rpcs", expvar.Func(func() any { return s.total() }))
		expvar.Publish("smbcluster_peer_calls_by_op", expvar.Func(func() any { return s.byOp() }))
		expvar.Publish("smbcluster_peer_delegated_opens", expvar.Func(func() any { return s.delegated() }))
		expvar.Publish("smbcluster_peer_returns", expvar.Func(func() any { return s.returns() }))
	})
	s.mu.Lock()
	if s.set == nil {
		s.set = map[*peer.Router]bool{}
	}
	s.set[r] = true
	s.mu.Unlock()
}

func (s *routerSet) remove(r *peer.Router) {
	s.mu.Lock()
	if s.set[r] {
		delete(s.set, r)
		s.gone += r.Stats().Sent()
	}
	s.mu.Unlock()
}

func (s *routerSet) total() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.gone
	for r := range s.set {
		n += r.Stats().Sent()
	}
	return n
}

// delegated sums the opens the live routers admitted under an admission
// delegation (node/peer deleg.go), all of files another node owns:
// bench/cluster.sh tells a file's owner by them.
func (s *routerSet) delegated() uint64 {
	return s.sum(func(st *peer.Stats) uint64 { return st.Delegated.Load() })
}

// returns sums the live routers' calls returning a delegation
// (OP_RETURN, among smbcluster_peer_rpcs): an idle delegation goes back
// seconds after the opens that earned it, so bench/cluster.sh takes them
// out of a run's calls when it tells a file's owner.
func (s *routerSet) returns() uint64 {
	return s.sum(func(st *peer.Stats) uint64 { return st.ByOp[peer.OpReturn].Load() })
}

// sum adds f of the live routers' counters.
func (s *routerSet) sum(f func(*peer.Stats) uint64) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n uint64
	for r := range s.set {
		n += f(r.Stats())
	}
	return n
}

// byOp sums the live routers' calls to owners by operation.
func (s *routerSet) byOp() map[string]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]uint64{}
	for r := range s.set {
		for op := range r.Stats().ByOp {
			if n := r.Stats().ByOp[op].Load(); n > 0 {
				out[peer.Op(op).String()] += n
			}
		}
	}
	return out
}

// sessionPeers is the server's way to other nodes' sessions: none on a
// single node.
func (c *coherence) sessionPeers() server.SessionPeers {
	if c.sessions == nil {
		return nil
	}
	return c.sessions
}

// sessionTag is the top bits of this node's session ids: its tag in a
// cluster, so that the other nodes know which node made a session from
// its id (node/handoff Tag); none on a single node.
func (c *coherence) sessionTag(name string) uint16 {
	if c.sessions == nil {
		return 0
	}
	return handoff.Tag(name)
}

// clusterServerGUID derives the ServerGuid every node of a cluster
// answers with from the cluster secret.
func clusterServerGUID(secret []byte) [16]byte {
	h := sha256.Sum256(append([]byte("smbcluster server guid\x00"), secret...))
	var g [16]byte
	copy(g[:], h[:])
	return g
}

// peerLiveness is how a node's connections to its peers find out that a
// peer cannot be reached (a network partition: packets dropped, no reset)
// and come back after: a keep-alive ping after 10 s without traffic (the
// least grpc-go allows), answered within 3 s or the connection is closed
// and the calls on it fail (peer.Router routes them again); a connection
// attempt gives up after 3 s, and is tried again at most 2 s apart, so
// that a healed network is used within seconds. A request that needs an
// unreachable peer is answered within the router's own bound (node/peer
// callTimeout), whichever of these comes first.
var peerLiveness = []grpc.DialOption{
	grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 10 * time.Second, Timeout: 3 * time.Second, PermitWithoutStream: true}),
	grpc.WithConnectParams(grpc.ConnectParams{MinConnectTimeout: 3 * time.Second,
		Backoff: backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second}}),
}

// peerPings lets the peers' keep-alive pings (peerLiveness) through: by
// default a server ends a connection pinged more often than every 5 min.
var peerPings = grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true})
