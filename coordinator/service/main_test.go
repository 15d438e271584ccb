package service

import (
	"context"
	"fmt"
	"net"
	"os"
	"testing"

	"github.com/smbcluster/smbcluster/coordinator/store"
	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
)

const testToken = "test-token-0123456789abcdef"

// etcd is the embedded etcd every test of the package shares (TestMain).
var etcd *clientv3.Client

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "coordinator-service-etcd")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	endpoints, stop, err := store.StartEmbedded(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	etcd, err = clientv3.New(clientv3.Config{Endpoints: endpoints})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer etcd.Close()
	return m.Run()
}

// env is one test's coordinator on an in-memory connection.
type env struct {
	t      *testing.T
	ctx    context.Context
	st     *store.Store
	sealer *statev1.Sealer
	conn   *grpc.ClientConn

	nodes    adminv1.NodeServiceClient
	shares   adminv1.ShareServiceClient
	users    adminv1.UserServiceClient
	sessions adminv1.SessionServiceClient
	cluster  adminv1.ClusterServiceClient
}

// newEnv empties the cluster state in etcd and starts a coordinator that
// requires testToken and allows shares under /srv; the clients send the
// token.
func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvRoots(t, "/srv")
}

// newEnvRoots is newEnv with the given share roots.
func newEnvRoots(t *testing.T, roots ...string) *env {
	t.Helper()
	ctx := t.Context()
	if _, err := etcd.Delete(ctx, statev1.Root, clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	sealer, err := statev1.NewSealer([]byte("test cluster secret, 32 bytes or more"))
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, st: store.New(etcd), sealer: sealer}
	e.ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+testToken)
	l := bufconn.Listen(1 << 20)
	g := NewGRPCServer(Options{Store: e.st, Sealer: sealer, Token: testToken, Version: "test", ShareRoots: roots})
	go g.Serve(l)
	t.Cleanup(g.Stop)
	e.conn, err = grpc.NewClient("passthrough:///coordinator",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return l.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.conn.Close() })
	e.nodes = adminv1.NewNodeServiceClient(e.conn)
	e.shares = adminv1.NewShareServiceClient(e.conn)
	e.users = adminv1.NewUserServiceClient(e.conn)
	e.sessions = adminv1.NewSessionServiceClient(e.conn)
	e.cluster = adminv1.NewClusterServiceClient(e.conn)
	return e
}

// wantCode fails the test unless err carries code c.
func wantCode(t *testing.T, err error, c codes.Code, what string) {
	t.Helper()
	if got := status.Code(err); got != c {
		t.Errorf("%s: got %v (%v), want %v", what, got, err, c)
	} else if c != codes.OK && status.Convert(err).Message() == "" {
		t.Errorf("%s: %v with an empty message", what, c)
	}
}

// count counts the keys under prefix.
func (e *env) count(prefix string) int64 {
	e.t.Helper()
	n, err := e.st.Count(e.t.Context(), prefix)
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}
