package coord

import (
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

// TestStartServesAndStops runs a development coordinator over an embedded
// etcd: it makes the missing cluster secret (mode 0600), answers with the
// token and refuses without it, and after Stop, Wait returns nil.
func TestStartServesAndStops(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("coord-test-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	co, err := Start(Config{
		Listen: "127.0.0.1:0", EmbeddedEtcd: filepath.Join(dir, "etcd"),
		SecretFile: filepath.Join(dir, "secret"), CreateSecret: true,
		DevLoopback: true, TokenFile: tokenFile, Token: "coord-test-token-0123456789",
		ShareRoots: []string{dir}, Version: "test",
	})
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "secret")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("secret file: %v, %v", fi, err)
	}
	if len(co.Endpoints) == 0 || co.Link == "" {
		t.Errorf("endpoints %v, link %q", co.Endpoints, co.Link)
	}
	conn, err := grpc.NewClient(co.Addr.String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cl := adminv1.NewClusterServiceClient(conn)
	if _, err := cl.GetStatus(t.Context(), &adminv1.GetStatusRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("without the token: %v", err)
	}
	authed := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer coord-test-token-0123456789")
	if _, err := cl.GetStatus(authed, &adminv1.GetStatusRequest{}); err != nil {
		t.Errorf("with the token: %v", err)
	}
	co.Stop(true)
	if err := co.Wait(); err != nil {
		t.Errorf("Wait after Stop: %v", err)
	}
	if _, err := os.Lstat(co.Link); !os.IsNotExist(err) {
		t.Errorf("token link %s left after Stop: %v", co.Link, err)
	}
}

// TestLoadSealer: without create a missing secret is an error, not made.
func TestLoadSealer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret")
	if _, err := LoadSealer(path, false); err == nil {
		t.Fatal("a missing secret loaded")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("secret made without create: %v", err)
	}
	if _, err := LoadSealer(path, true); err != nil {
		t.Fatal(err)
	}
}

// TestStartAddressInUse: a second coordinator on a busy admin or metrics
// address is refused with an error naming the address as in use (it
// panicked in Start's undo before), and leaves nothing started: its
// embedded etcd directory holds no socket, its token is not linked, and
// the first coordinator still answers.
func TestStartAddressInUse(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	cfg := func(name, listen, metrics string) Config {
		return Config{
			Listen: listen, EmbeddedEtcd: filepath.Join(dir, name, "etcd"), MetricsAddr: metrics,
			SecretFile: filepath.Join(dir, "secret"), CreateSecret: true,
			DevLoopback: true, TokenFile: filepath.Join(dir, name+"-token"), Token: "coord-test-token-0123456789",
			ShareRoots: []string{dir}, Version: "test",
		}
	}
	first, err := Start(cfg("first", "127.0.0.1:0", "127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	defer first.Stop(false)
	for _, tc := range []struct{ name, listen, metrics, busy string }{
		{"admin", first.Addr.String(), "", first.Addr.String()},
		{"metrics", "127.0.0.1:0", first.MetricsAddr.String(), first.MetricsAddr.String()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			co, err := Start(cfg(tc.name, tc.listen, tc.metrics))
			if err == nil {
				co.Stop(false)
				t.Fatal("a second coordinator started on a busy address")
			}
			if !strings.Contains(err.Error(), "address in use: "+tc.busy) {
				t.Errorf("error %q does not say %s is in use", err, tc.busy)
			}
			if _, err := os.Stat(filepath.Join(dir, tc.name, "etcd")); !os.IsNotExist(err) {
				t.Errorf("the refused coordinator started its etcd: %v", err)
			}
		})
	}
	conn, err := grpc.NewClient(first.Addr.String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	authed := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer coord-test-token-0123456789")
	if _, err := adminv1.NewClusterServiceClient(conn).GetStatus(authed, &adminv1.GetStatusRequest{}); err != nil {
		t.Errorf("the first coordinator after the refusals: %v", err)
	}
	if _, err := os.Lstat(first.Link); err != nil {
		t.Errorf("the first coordinator's token link: %v", err)
	}
}
