package nodemain

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/smbcluster/smbcluster/node/metrics"
	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/state"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// maxTop bounds the files and clients a /stats request may ask for.
const maxTop = 100

// nodeMetrics is the node's instruments and the HTTP server of
// --metrics-addr: /metrics (Prometheus text) and /stats (NodeStats, for
// the coordinator). With no --metrics-addr, m is nil and records nothing.
type nodeMetrics struct {
	m     *metrics.Node
	addr  string // published: the listener's address, its host made concrete
	start time.Time
	srv   *http.Server
}

// startMetrics listens on --metrics-addr; it returns an empty
// nodeMetrics (nil instruments) without it.
func startMetrics(cfg *Config, log *slog.Logger) (*nodeMetrics, error) {
	if cfg.MetricsAddr == "" {
		return &nodeMetrics{}, nil
	}
	l, err := net.Listen("tcp", cfg.MetricsAddr)
	if err != nil {
		return nil, listenError("--metrics-addr", cfg.MetricsAddr, err)
	}
	nm := &nodeMetrics{m: metrics.NewNode(), addr: publishedAddr(l.Addr().String(), cfg), start: time.Now()}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(nm.m.Registry(), promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}))
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) { nm.serveStats(w, r, cfg.Name) })
	nm.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go nm.srv.Serve(l)
	log.Info("metrics endpoint", "addr", l.Addr().String(), "published", nm.addr)
	return nm, nil
}

func (nm *nodeMetrics) stop() {
	if nm.srv != nil {
		nm.srv.Close()
	}
}

// publishedAddr is addr with an unspecified host (":9100", "0.0.0.0")
// replaced by the host the node's peers reach it on.
func publishedAddr(addr string, cfg *Config) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host, _, _ = net.SplitHostPort(peerListenAddr(cfg))
	}
	return net.JoinHostPort(host, port)
}

// serveStats answers GET /stats[?top=N]: the node's counters as a
// binary statev1.NodeStats.
func (nm *nodeMetrics) serveStats(w http.ResponseWriter, r *http.Request, name string) {
	top := 10
	if s := r.URL.Query().Get("top"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			http.Error(w, "top: want a count", http.StatusBadRequest)
			return
		}
		top = min(n, maxTop)
	}
	snap, err := nm.m.Snapshot(top)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	st := &statev1.NodeStats{Node: name, Time: timestamppb.Now(), StartTime: timestamppb.New(nm.start), Total: trafficPB(&snap.Total)}
	for share, t := range snap.Shares {
		st.Shares = append(st.Shares, &statev1.ShareStats{Name: share, Traffic: trafficPB(t)})
	}
	st.TopFiles, st.TopClients = entriesPB(snap.Files), entriesPB(snap.Clients)
	b, err := proto.Marshal(st)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(b)
}

func trafficPB(t *metrics.Traffic) *statev1.TrafficStats {
	return &statev1.TrafficStats{Requests: t.Requests, BytesRead: t.BytesRead, BytesWritten: t.BytesWritten, BucketBounds: t.Bounds, BucketCounts: t.Counts}
}

func entriesPB(es []metrics.Entry) []*statev1.TopEntry {
	out := make([]*statev1.TopEntry, 0, len(es))
	for _, e := range es {
		out = append(out, &statev1.TopEntry{Key: e.Key, Requests: e.Requests, BytesRead: e.BytesRead, BytesWritten: e.BytesWritten})
	}
	return out
}

// instrumentState reports the table's breaks and the lock table's waits
// to m, and logs each break that timed out once, with its holders'
// client addresses and users.
func instrumentState(m *metrics.Node, table *state.Table, locks *state.LockTable, log *slog.Logger) {
	table.BreakTimedOut = func(lease bool, d time.Duration, holders []state.Breaker) {
		m.BreakEnded(lease, d, true)
		kind := "oplock"
		if lease {
			kind = "lease"
		}
		for _, h := range holders {
			if o, ok := h.(*server.Open); ok {
				addr, user := o.Client()
				log.Warn("break not acknowledged in time: caching revoked", "kind", kind, "after", d.Round(time.Millisecond), "remote", addr, "user", user, "file", o.Name)
			} else {
				log.Warn("break not acknowledged in time: caching revoked", "kind", kind, "after", d.Round(time.Millisecond), "holder", "another node")
			}
		}
	}
	if m == nil {
		return
	}
	table.BreakAcked = func(lease bool, d time.Duration) { m.BreakEnded(lease, d, false) }
	locks.Waited = m.LockWaited
	m.SetLocks(locks.Held, locks.Waiting)
}

// etcdDialOptions time every unary etcd call by method (streams — watches,
// keep-alives — run for as long as they are open, and are not timed).
func etcdDialOptions(m *metrics.Node) []grpc.DialOption {
	if m == nil {
		return nil
	}
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(timeUnary(func(method string, d time.Duration, err error) {
		m.Etcd(path.Base(method), d, err)
	}))}
}

// peerDialOptions time the node-to-node unary calls of the peer service
// (Deliver, Held, Watch, Notify); Admit, Call and Wait travel on the
// Exchange stream and are timed by the router (peer.Router.Observe). The
// session service's calls share the connection (node/mesh), untimed.
func peerDialOptions(m *metrics.Node) []grpc.DialOption {
	if m == nil {
		return nil
	}
	record := func(method string, d time.Duration, err error) {
		if strings.HasPrefix(method, "/"+peerv1.PeerService_ServiceDesc.ServiceName+"/") {
			m.Peer(path.Base(method), d, err)
		}
	}
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(timeUnary(record))}
}

// timeUnary is a unary client interceptor that tells record of each call
// (its full method name).
func timeUnary(record func(method string, d time.Duration, err error)) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		start := time.Now()
		err := invoker(ctx, method, req, reply, cc, opts...)
		record(method, time.Since(start), err)
		return err
	}
}
