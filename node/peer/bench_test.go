package peer

import (
	"context"
	"net"
	"testing"

	"github.com/smbcluster/smbcluster/node/state"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// twoTLSNodes is twoNodes over the cluster's mutual TLS.
func twoTLSNodes(tb testing.TB) (a, b *Router) {
	tb.Helper()
	secret := []byte("0123456789abcdef0123456789abcdef")
	peers := map[string]string{}
	var routers []*Router
	for _, name := range []string{"a", "b"} {
		st, ct, err := TLSConfigs(secret, name)
		if err != nil {
			tb.Fatal(err)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		peers[name] = l.Addr().String()
		rt := &staticRoutes{self: name, owner: "a", peers: peers}
		r := newRouter(tb, rt, func(addr string) (*grpc.ClientConn, error) {
			return grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(ct)))
		})
		srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(st)))
		peerv1.RegisterPeerServiceServer(srv, r.Service())
		go srv.Serve(l)
		tb.Cleanup(func() { srv.Stop(); r.Close() })
		routers = append(routers, r)
	}
	return routers[0], routers[1]
}

// BenchmarkRemoteOpenClose is an uncontended open and close of a file
// owned by the other node: what a CREATE and CLOSE add over the wire
// (with no admission delegation; BenchmarkDelegatedOpenClose).
func BenchmarkRemoteOpenClose(b *testing.B) {
	for _, tc := range []struct {
		name  string
		nodes func(testing.TB) (*Router, *Router)
	}{{"plaintext", func(tb testing.TB) (*Router, *Router) { return twoNodes(tb.(*testing.B)) }}, {"tls", twoTLSNodes}} {
		b.Run(tc.name, func(b *testing.B) {
			_, holder := tc.nodes(b)
			holder.maxDelegs = 0
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				var i uint64
				for pb.Next() {
					i++
					o := open(state.FileKey{Volume: 9, FileID: i}, rw, shareAll, newBreaks())
					if _, err := holder.Admit(ctx, o, state.Request{}, nil); err != nil {
						b.Error(err)
						return
					}
					holder.Release(o)
					holder.Drop(o)
				}
			})
		})
	}
}

// BenchmarkDelegatedOpenClose is an open and close of a hot file owned
// by the other node, under the holder's admission delegation (deleg.go).
func BenchmarkDelegatedOpenClose(b *testing.B) {
	a, holder := twoNodes(b)
	ctx := context.Background()
	key := state.FileKey{Volume: 9, FileID: 1}
	o := open(key, readData, shareAll, newBreaks())
	if _, err := holder.Admit(ctx, o, state.Request{}, nil); err != nil {
		b.Fatal(err)
	}
	holder.Drop(o)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			o := open(key, readData, shareAll, newBreaks())
			if _, err := holder.Admit(ctx, o, state.Request{}, nil); err != nil {
				b.Error(err)
				return
			}
			holder.Release(o)
			holder.Drop(o)
		}
	})
	b.StopTimer()
	if a.Stats().Granted.Load() != 1 {
		b.Errorf("delegations granted: %d, want 1", a.Stats().Granted.Load())
	}
}
