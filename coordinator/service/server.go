package service

import (
	"io"
	"log/slog"
	"time"

	"github.com/smbcluster/smbcluster/coordinator/store"
	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"google.golang.org/grpc"
)

// Options configure the admin services.
type Options struct {
	// Store is the etcd the cluster state lives in. Required.
	Store *store.Store
	// Sealer seals user NT hashes with the cluster secret. Required.
	Sealer *statev1.Sealer
	// Token is the bearer token every call but Health must carry; empty
	// turns bearer authentication off (only for a coordinator that
	// requires client certificates instead).
	Token string
	// TokenHint ends the message of a call refused for its token: where
	// whoever may administer this coordinator finds the token. Empty
	// points at the coordinator's --token-file.
	TokenHint string
	// ShareRoots are the absolute directories shares may be created at or
	// under (symlinks resolved); none refuses every share path.
	ShareRoots []string
	// Version is reported by GetStatus.
	Version string
	// Logger receives one line per change made; nil discards.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// backend is what every service adapter shares. Immutable after New.
type backend struct {
	st      *store.Store
	sealer  *statev1.Sealer
	version string
	roots   []string // share roots, as configured
	log     *slog.Logger
	now     func() time.Time
}

// NewGRPCServer returns a gRPC server with the five admin services
// registered and, if o.Token is set, bearer-token authentication on every
// call but ClusterService.Health. extra adds server options (TLS
// credentials).
func NewGRPCServer(o Options, extra ...grpc.ServerOption) *grpc.Server {
	opts := extra
	if o.Token != "" {
		a := newAuthenticator(o.Token, o.TokenHint)
		opts = append(opts, grpc.ChainUnaryInterceptor(a.unary), grpc.ChainStreamInterceptor(a.stream))
	}
	g := grpc.NewServer(opts...)
	Register(g, o)
	return g
}

// Register registers the five admin services on g, without authentication
// (for embedding in a server that authenticates by other means).
func Register(g grpc.ServiceRegistrar, o Options) {
	b := &backend{st: o.Store, sealer: o.Sealer, version: o.Version, roots: o.ShareRoots, log: o.Logger, now: o.Now}
	if b.log == nil {
		b.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if b.now == nil {
		b.now = time.Now
	}
	adminv1.RegisterNodeServiceServer(g, &nodeService{b: b})
	adminv1.RegisterShareServiceServer(g, &shareService{b: b})
	adminv1.RegisterUserServiceServer(g, &userService{b: b})
	adminv1.RegisterSessionServiceServer(g, &sessionService{b: b})
	adminv1.RegisterClusterServiceServer(g, &clusterService{b: b})
	adminv1.RegisterWitnessServiceServer(g, &witnessService{b: b})
}
