package coord

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"path"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// coordMetrics is the coordinator's /metrics: its admin RPCs by method
// and code, its etcd calls by method, and the Go runtime.
type coordMetrics struct {
	reg     *prometheus.Registry
	rpcDur  *prometheus.HistogramVec
	etcdDur *prometheus.HistogramVec
	etcdErr *prometheus.CounterVec
}

// rpcBuckets are the admin RPCs' and etcd calls' latency bounds, in
// seconds: 0.5 ms to 10 s.
var rpcBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

func newCoordMetrics() *coordMetrics {
	m := &coordMetrics{reg: prometheus.NewRegistry()}
	m.rpcDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "smbcluster_coordinator_rpc_duration_seconds",
		Help: "Admin API calls served, by method and gRPC code.", Buckets: rpcBuckets}, []string{"method", "code"})
	m.etcdDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "smbcluster_etcd_request_duration_seconds",
		Help: "etcd calls of the coordinator, by method.", Buckets: rpcBuckets}, []string{"method"})
	m.etcdErr = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "smbcluster_etcd_request_errors_total",
		Help: "etcd calls of the coordinator that failed, by method."}, []string{"method"})
	m.reg.MustRegister(m.rpcDur, m.etcdDur, m.etcdErr, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// serverOption times every unary admin call.
func (m *coordMetrics) serverOption() grpc.ServerOption {
	return grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := h(ctx, req)
		m.rpcDur.WithLabelValues(path.Base(info.FullMethod), status.Code(err).String()).Observe(time.Since(start).Seconds())
		return resp, err
	})
}

// etcdOption times every unary etcd call.
func (m *coordMetrics) etcdOption() grpc.DialOption {
	return grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		start := time.Now()
		err := invoker(ctx, method, req, reply, cc, opts...)
		m.etcdDur.WithLabelValues(path.Base(method)).Observe(time.Since(start).Seconds())
		if err != nil {
			m.etcdErr.WithLabelValues(path.Base(method)).Inc()
		}
		return err
	})
}

// serve serves /metrics on addr until the returned func is called.
func (m *coordMetrics) serve(addr string, log *slog.Logger) (net.Addr, func(), error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, ListenError("--metrics-addr", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	log.Info("metrics endpoint", "addr", l.Addr().String())
	return l.Addr(), func() { srv.Close() }, nil
}
