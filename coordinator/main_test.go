package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func TestConfigCheck(t *testing.T) {
	cases := []struct {
		args []string
		ok   bool
	}{
		{[]string{"--dev-loopback-insecure", "--embedded-etcd", "d", "--secret-file", "s"}, true},
		{[]string{"--dev-loopback-insecure", "--listen", "[::1]:7445", "--etcd", "e", "--secret-file", "s"}, true},
		{[]string{"--dev-loopback-insecure", "--listen", "localhost:7445", "--etcd", "e", "--secret-file", "s"}, true},
		{[]string{"--dev-loopback-insecure", "--listen", "0.0.0.0:7445", "--etcd", "e", "--secret-file", "s"}, false},
		{[]string{"--dev-loopback-insecure", "--listen", ":7445", "--etcd", "e", "--secret-file", "s"}, false},
		{[]string{"--dev-loopback-insecure", "--listen", "192.0.2.1:7445", "--etcd", "e", "--secret-file", "s"}, false},
		{[]string{"--listen", "0.0.0.0:7445", "--etcd", "e", "--secret-file", "s"}, false},                              // no TLS
		{[]string{"--etcd", "e", "--secret-file", "s", "--tls-cert", "c", "--tls-key", "k"}, false},                     // no token
		{[]string{"--etcd", "e", "--secret-file", "s", "--tls-cert", "c", "--tls-key", "k", "--token-file", "t"}, true}, //
		{[]string{"--etcd", "e", "--secret-file", "s", "--tls-cert", "c", "--tls-key", "k", "--client-ca", "ca"}, true}, // mTLS
		{[]string{"--etcd", "e", "--secret-file", "s", "--tls-cert", "c", "--token-file", "t"}, false},                  // no key
		{[]string{"--etcd", "e", "--embedded-etcd", "d", "--secret-file", "s", "--dev-loopback-insecure"}, false},       // both
		{[]string{"--dev-loopback-insecure", "--secret-file", "s"}, false},                                              // no etcd
		{[]string{"--dev-loopback-insecure", "--etcd", "e"}, false},                                                     // no secret
		{[]string{"--dev-loopback-insecure", "--etcd", "e", "--secret-file", "s", "--client-ca", "ca"}, false},          // mTLS without TLS
	}
	for _, c := range cases {
		cfg, err := parseFlags(c.args, io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if err := cfg.check(); (err == nil) != c.ok {
			t.Errorf("%v: check() = %v, want ok=%v", c.args, err, c.ok)
		}
	}
}

// TestServeDevMode runs smbcoord as `make run` would: embedded etcd,
// loopback without TLS, a token, a cluster secret created on first start.
func TestServeDevMode(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	os.WriteFile(tokenFile, []byte("dev-token-0123456789\n"), 0o600)
	cfg, err := parseFlags([]string{
		"--dev-loopback-insecure", "--listen", "127.0.0.1:0",
		"--embedded-etcd", filepath.Join(dir, "etcd"),
		"--secret-file", filepath.Join(dir, "secret"), "--token-file", tokenFile,
	}, io.Discard)
	if err != nil || cfg.check() != nil {
		t.Fatal(err, cfg.check())
	}
	ctx, cancel := context.WithCancel(t.Context())
	addrc := make(chan net.Addr, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- serve(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), func(a net.Addr) { addrc <- a })
	}()
	var addr net.Addr
	select {
	case addr = <-addrc:
	case err := <-errc:
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(addr.String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	shares := adminv1.NewShareServiceClient(conn)
	_, err = shares.ListShares(t.Context(), &adminv1.ListSharesRequest{})
	if status.Code(err) != codes.Unauthenticated {
		t.Errorf("without the token: %v", err)
	}
	authed := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer dev-token-0123456789")
	if _, err := shares.CreateShare(authed, &adminv1.CreateShareRequest{Share: &adminv1.Share{Name: "demo", Path: "/srv/demo"}}); err != nil {
		t.Fatal(err)
	}
	users := adminv1.NewUserServiceClient(conn)
	if _, err := users.CreateUser(authed, &adminv1.CreateUserRequest{Name: "demo", Password: "demo"}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "secret")); err != nil || len(strings.TrimSpace(string(b))) < 32 {
		t.Errorf("cluster secret not created: %q, %v", b, err)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Errorf("serve: %v", err)
	}
}
