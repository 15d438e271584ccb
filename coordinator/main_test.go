package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func TestConfigCheck(t *testing.T) {
	cases := []struct {
		args []string
		ok   bool
	}{
		{[]string{"--dev-loopback-insecure", "--embedded-etcd", "d", "--secret-file", "s", "--token-file", "t"}, true},
		{[]string{"--dev-loopback-insecure", "--listen", "[::1]:7445", "--etcd", "e", "--secret-file", "s", "--token-file", "t"}, true},
		{[]string{"--dev-loopback-insecure", "--listen", "localhost:7445", "--etcd", "e", "--secret-file", "s", "--token-file", "t"}, true},
		{[]string{"--dev-loopback-insecure", "--embedded-etcd", "d", "--secret-file", "s"}, false}, // no token
		{[]string{"--dev-loopback-insecure", "--listen", "0.0.0.0:7445", "--etcd", "e", "--secret-file", "s", "--token-file", "t"}, false},
		{[]string{"--dev-loopback-insecure", "--listen", ":7445", "--etcd", "e", "--secret-file", "s", "--token-file", "t"}, false},
		{[]string{"--dev-loopback-insecure", "--listen", "192.0.2.1:7445", "--etcd", "e", "--secret-file", "s", "--token-file", "t"}, false},
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

func TestShareRootFlag(t *testing.T) {
	cfg, err := parseFlags([]string{"--share-root", "/srv/a", "--share-root", "/srv/b"}, io.Discard)
	if err != nil || !slices.Equal(cfg.shareRoots, []string{"/srv/a", "/srv/b"}) {
		t.Errorf("two roots: %v, %v", cfg, err)
	}
	for _, bad := range []string{"/", "srv", "/srv/../etc", ""} {
		if _, err := parseFlags([]string{"--share-root", bad}, io.Discard); err == nil {
			t.Errorf("--share-root %q accepted", bad)
		}
	}
}

// TestServeDevMode runs smbcoord as `make run` would: embedded etcd,
// loopback without TLS; the token and the cluster secret are created on
// first start, the token only its owner may read, linked where the
// owner's smbctl looks; shares only under the --share-root.
func TestServeDevMode(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "config")
	t.Setenv("XDG_CONFIG_HOME", config)
	tokenFile := filepath.Join(dir, "token")
	roots := filepath.Join(dir, "shares")
	conn := startServe(t, []string{
		"--dev-loopback-insecure", "--listen", "127.0.0.1:0",
		"--embedded-etcd", filepath.Join(dir, "etcd"),
		"--secret-file", filepath.Join(dir, "secret"), "--token-file", tokenFile,
		"--share-root", roots,
	}, insecure.NewCredentials())
	fi, err := os.Stat(tokenFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, %v", fi, err)
	}
	b, _ := os.ReadFile(tokenFile)
	token := strings.TrimSpace(string(b))
	link := filepath.Join(config, "smbctl", "dev", conn.Target()+".token")
	if got, err := os.ReadFile(link); err != nil || string(got) != string(b) {
		t.Errorf("token not linked at %s: %q, %v", link, got, err)
	}

	shares := adminv1.NewShareServiceClient(conn)
	_, err = shares.ListShares(t.Context(), &adminv1.ListSharesRequest{})
	if st := status.Convert(err); st.Code() != codes.Unauthenticated || !strings.Contains(st.Message(), "only by the user who started it") {
		t.Errorf("without the token: %v", err)
	}
	authed := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+token)
	checkShareRoots(t, shares, authed, roots)
	users := adminv1.NewUserServiceClient(conn)
	if _, err := users.CreateUser(authed, &adminv1.CreateUserRequest{Name: "demo", Password: "demo"}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "secret")); err != nil || len(strings.TrimSpace(string(b))) < 32 {
		t.Errorf("cluster secret not created: %q, %v", b, err)
	}
}

// TestServeDevModeRefusesOpenToken: a development token file others can
// read would let them administer the cluster.
func TestServeDevModeRefusesOpenToken(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	tokenFile := filepath.Join(dir, "token")
	os.WriteFile(tokenFile, []byte("dev-token-0123456789\n"), 0o644)
	os.Chmod(tokenFile, 0o644)
	cfg, err := parseFlags([]string{
		"--dev-loopback-insecure", "--listen", "127.0.0.1:0", "--embedded-etcd", filepath.Join(dir, "etcd"),
		"--secret-file", filepath.Join(dir, "secret"), "--token-file", tokenFile,
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	err = serve(t.Context(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), func(net.Addr) { t.Error("served") })
	if err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("serve with a token file of mode 0644: %v", err)
	}
}

// TestServeSecuredShareRoots: with TLS and a token, share paths are held
// to the --share-root as in development mode.
func TestServeSecuredShareRoots(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	tokenFile := filepath.Join(dir, "token")
	os.WriteFile(tokenFile, []byte("secured-token-0123456789\n"), 0o600)
	secret := filepath.Join(dir, "secret")
	os.WriteFile(secret, statev1.GenerateSecret(), 0o600)
	roots := filepath.Join(dir, "shares")
	conn := startServe(t, []string{
		"--listen", "127.0.0.1:0", "--embedded-etcd", filepath.Join(dir, "etcd"),
		"--tls-cert", certFile, "--tls-key", keyFile, "--token-file", tokenFile,
		"--secret-file", secret, "--share-root", roots,
	}, credentials.NewTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
	authed := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer secured-token-0123456789")
	checkShareRoots(t, adminv1.NewShareServiceClient(conn), authed, roots)
}

// checkShareRoots: /etc and a symlink to it under the root are refused
// with a message naming the root; a directory under the root is accepted.
func checkShareRoots(t *testing.T, shares adminv1.ShareServiceClient, ctx context.Context, root string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(root, "team"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Symlink("/etc", filepath.Join(root, "etc"))
	for _, p := range []string{"/etc", filepath.Join(root, "etc")} {
		_, err := shares.CreateShare(ctx, &adminv1.CreateShareRequest{Share: &adminv1.Share{Name: "etcshare", Path: p}})
		if st := status.Convert(err); st.Code() != codes.PermissionDenied || !strings.Contains(st.Message(), root) {
			t.Errorf("share add etcshare %s: %v, want PermissionDenied naming %s", p, err, root)
		}
	}
	if _, err := shares.CreateShare(ctx, &adminv1.CreateShareRequest{Share: &adminv1.Share{Name: "team", Path: filepath.Join(root, "team")}}); err != nil {
		t.Errorf("share add team under the root: %v", err)
	}
}

// startServe runs serve with args until the test ends and returns a
// client connection to it.
func startServe(t *testing.T, args []string, creds credentials.TransportCredentials) *grpc.ClientConn {
	t.Helper()
	cfg, err := parseFlags(args, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.check(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan net.Addr, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- serve(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), func(a net.Addr) { addrc <- a })
	}()
	var addr net.Addr
	select {
	case addr = <-addrc:
	case err := <-errc:
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	conn, err := grpc.NewClient(addr.String(), grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// selfSigned writes a certificate and key for 127.0.0.1 into dir and
// returns their files and a pool that trusts the certificate.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "smbcoord test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}
