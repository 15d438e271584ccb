package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/smbcluster/smbcluster/coordinator/coord"
	"github.com/smbcluster/smbcluster/coordinator/devtoken"
	"github.com/smbcluster/smbcluster/coordinator/service"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "dev"

// minTokenLen is the shortest bearer token accepted.
const minTokenLen = 16

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// config is the parsed command line.
type config struct {
	listen                    string
	etcd                      string
	embeddedEtcd              string
	etcdCA, etcdCert, etcdKey string
	tlsCert, tlsKey, clientCA string
	tokenFile, secretFile     string
	shareRoots                []string
	devInsecure, printVersion bool
	logLevel                  string
	metricsAddr               string
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("smbcoord", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.listen, "listen", "127.0.0.1:7445", "gRPC listen address")
	fs.StringVar(&c.etcd, "etcd", "", "comma-separated etcd endpoints (production)")
	fs.StringVar(&c.embeddedEtcd, "embedded-etcd", "", "run an embedded single-member etcd with its data in `DIR` (development); it serves only the unix socket DIR/client.sock (DIR made mode 0700), for nodes of this user: --etcd unix:///ABS/DIR/client.sock")
	fs.StringVar(&c.etcdCA, "etcd-ca", "", "CA certificate `file` for etcd's TLS")
	fs.StringVar(&c.etcdCert, "etcd-cert", "", "client certificate `file` for etcd")
	fs.StringVar(&c.etcdKey, "etcd-key", "", "client key `file` for etcd")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "server certificate `file`")
	fs.StringVar(&c.tlsKey, "tls-key", "", "server key `file`")
	fs.StringVar(&c.clientCA, "client-ca", "", "CA `file`: require client certificates signed by it (mTLS)")
	fs.StringVar(&c.tokenFile, "token-file", "", "`file` holding the bearer token clients must present (created, mode 0600, in --dev-loopback-insecure mode if missing)")
	fs.StringVar(&c.secretFile, "secret-file", "", "`file` holding the cluster secret that seals password hashes (created in --dev-loopback-insecure mode if missing)")
	fs.Func("share-root", "allow shares at or under `DIR` (absolute; repeat for several); without any, no share can be created", func(dir string) error {
		if err := service.CheckShareRoot(dir); err != nil {
			return err
		}
		c.shareRoots = append(c.shareRoots, dir)
		return nil
	})
	fs.BoolVar(&c.devInsecure, "dev-loopback-insecure", false, "development only: serve without TLS on a loopback address; --token-file is still required, and linked for the starting user's smbctl (~/.config/smbctl/dev/)")
	fs.StringVar(&c.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&c.metricsAddr, "metrics-addr", "", "serve Prometheus metrics (/metrics) on `ADDR`, e.g. 127.0.0.1:9445 (default: off; unauthenticated)")
	fs.BoolVar(&c.printVersion, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return c, nil
}

// check refuses configurations that would run unprotected or half set up.
func (c *config) check() error {
	if (c.etcd == "") == (c.embeddedEtcd == "") {
		return errors.New("give exactly one of --etcd ENDPOINTS (production) and --embedded-etcd DIR (development)")
	}
	if c.secretFile == "" {
		return errors.New("--secret-file is required: the cluster secret seals users' password hashes (e.g. `head -c 32 /dev/urandom | base64 > secret`)")
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return errors.New("give both --tls-cert and --tls-key")
	}
	if c.clientCA != "" && c.tlsCert == "" {
		return errors.New("--client-ca needs --tls-cert and --tls-key")
	}
	if c.devInsecure {
		if c.tokenFile == "" {
			return errors.New("--dev-loopback-insecure needs --token-file F: every local user can reach a loopback port, so only holders of the token (created, mode 0600, if missing) may administer it")
		}
		return checkLoopback(c.listen)
	}
	if c.tlsCert == "" {
		return errors.New("--tls-cert and --tls-key are required (or --dev-loopback-insecure for a loopback development setup)")
	}
	if c.tokenFile == "" && c.clientCA == "" {
		return errors.New("--token-file or --client-ca is required: the admin API needs a bearer token or client certificates")
	}
	return nil
}

// checkLoopback refuses a listen address that is not on loopback.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %q: %v", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return fmt.Errorf("--dev-loopback-insecure serves without TLS, so only on a loopback address (127.0.0.1, ::1): --listen %q is not", addr)
	}
	return nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	if c.printVersion {
		fmt.Fprintln(stdout, "smbcoord", version)
		return 0
	}
	if err := c.check(); err != nil {
		fmt.Fprintln(stderr, "smbcoord:", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: parseLevel(c.logLevel)}))
	if err := serve(ctx, c, log, nil); err != nil {
		fmt.Fprintln(stderr, "smbcoord:", err)
		return 1
	}
	return 0
}

func parseLevel(s string) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return slog.LevelInfo
	}
	return l
}

// serve runs the coordinator until ctx ends; ready, if set, gets the
// listening address.
func serve(ctx context.Context, c *config, log *slog.Logger, ready func(net.Addr)) error {
	token, err := loadToken(c)
	if err != nil {
		return err
	}
	creds, err := serverTLS(c)
	if err != nil {
		return err
	}
	etcdTLS, err := etcdTLS(c)
	if err != nil {
		return err
	}
	cfg := coord.Config{
		Listen: c.listen, EmbeddedEtcd: c.embeddedEtcd, EtcdTLS: etcdTLS,
		SecretFile: c.secretFile, CreateSecret: c.devInsecure,
		DevLoopback: c.devInsecure, TokenFile: c.tokenFile,
		Token: token, ShareRoots: c.shareRoots, Version: version, Log: log,
		MetricsAddr: c.metricsAddr,
	}
	if c.embeddedEtcd == "" {
		cfg.Endpoints = strings.Split(c.etcd, ",")
	}
	if creds != nil {
		cfg.GRPC = append(cfg.GRPC, grpc.Creds(creds))
	}
	co, err := coord.Start(cfg)
	if err != nil {
		return err
	}
	if ready != nil {
		ready(co.Addr)
	}
	go func() {
		<-ctx.Done()
		co.Stop(true)
	}()
	return co.Wait()
}

// loadToken reads the bearer token; in development mode it creates the
// file if missing and refuses one other users can read.
func loadToken(c *config) (string, error) {
	path := c.tokenFile
	if path == "" {
		return "", nil
	}
	if c.devInsecure {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return devtoken.Create(path)
		}
		if err := devtoken.CheckPrivate(path); err != nil {
			return "", err
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < minTokenLen {
		return "", fmt.Errorf("token in %s: %d characters, need at least %d", path, len(tok), minTokenLen)
	}
	return tok, nil
}

// serverTLS returns the gRPC transport credentials, nil for plaintext.
func serverTLS(c *config) (credentials.TransportCredentials, error) {
	if c.tlsCert == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(c.tlsCert, c.tlsKey)
	if err != nil {
		return nil, fmt.Errorf("server certificate: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if c.clientCA != "" {
		pool, err := loadPool(c.clientCA)
		if err != nil {
			return nil, err
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return credentials.NewTLS(cfg), nil
}

func loadPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificates", path)
	}
	return pool, nil
}

// etcdTLS returns the TLS configuration of the etcd client, nil for none.
func etcdTLS(c *config) (*tls.Config, error) {
	if c.etcdCA == "" && c.etcdCert == "" {
		return nil, nil
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.etcdCA != "" {
		pool, err := loadPool(c.etcdCA)
		if err != nil {
			return nil, err
		}
		t.RootCAs = pool
	}
	if c.etcdCert != "" {
		cert, err := tls.LoadX509KeyPair(c.etcdCert, c.etcdKey)
		if err != nil {
			return nil, fmt.Errorf("etcd client certificate: %w", err)
		}
		t.Certificates = []tls.Certificate{cert}
	}
	return t, nil
}
