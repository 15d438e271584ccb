package command

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// Connection defaults.
const (
	defaultEndpoint       = "127.0.0.1:7445"
	defaultRequestTimeout = 30 * time.Second
	coordinatorPort       = "7445"
)

// connHelp is the connection section of every usage text.
const connHelp = `Connection flags (before or after the command):
  --endpoint HOST:PORT     coordinator address ($SMBCTL_ENDPOINT, default 127.0.0.1:7445)
  --token TOKEN            bearer token ($SMBCTL_TOKEN); visible in ps, prefer:
  --token-file FILE        file holding the bearer token ($SMBCTL_TOKEN_FILE)
  --ca FILE                CA certificate(s) to verify the coordinator's TLS ($SMBCTL_CA)
  --cert FILE, --key FILE  client certificate and key, for a coordinator requiring mTLS
  --insecure               no TLS; only for a loopback coordinator run with
                           --dev-loopback-insecure ($SMBCTL_INSECURE=1)
  --request-timeout D      how long to wait for each answer (default 30s)
Settings not given by flag or environment come from the JSON config file
$SMBCTL_CONFIG or ~/.config/smbctl/config.json, e.g.
  {"endpoint": "coord1:7445", "token_file": "/etc/smbctl/token", "ca": "/etc/smbctl/ca.pem"}
(keys: endpoint, token, token_file, ca, cert, key, insecure, request_timeout).
With no token from these, a loopback endpoint uses the token a development
coordinator (make run) linked for the user who started it:
~/.config/smbctl/dev/HOST:PORT.token.
`

// connFlagNames are left out of each verb's own flag list in --help.
var connFlagNames = map[string]bool{"endpoint": true, "token": true, "token-file": true, "ca": true,
	"cert": true, "key": true, "insecure": true, "request-timeout": true}

// connFlags are how to reach and authenticate to the coordinator, as
// given on the command line.
type connFlags struct {
	endpoint, token, tokenFile string
	ca, cert, key              string
	insecure                   bool
	requestTimeout             time.Duration
}

// register adds the connection flags to fs with defaults def (the flags
// given before the command).
func (f *connFlags) register(fs *flag.FlagSet, def connFlags) {
	fs.StringVar(&f.endpoint, "endpoint", def.endpoint, "coordinator `HOST:PORT`")
	fs.StringVar(&f.token, "token", def.token, "bearer `TOKEN`")
	fs.StringVar(&f.tokenFile, "token-file", def.tokenFile, "`FILE` holding the bearer token")
	fs.StringVar(&f.ca, "ca", def.ca, "CA certificate `FILE`")
	fs.StringVar(&f.cert, "cert", def.cert, "client certificate `FILE`")
	fs.StringVar(&f.key, "key", def.key, "client key `FILE`")
	fs.BoolVar(&f.insecure, "insecure", def.insecure, "no TLS (loopback development coordinator only)")
	fs.DurationVar(&f.requestTimeout, "request-timeout", def.requestTimeout, "per-request `TIMEOUT`")
}

// config is the config file's content.
type config struct {
	Endpoint       string `json:"endpoint"`
	Token          string `json:"token"`
	TokenFile      string `json:"token_file"`
	CA             string `json:"ca"`
	Cert           string `json:"cert"`
	Key            string `json:"key"`
	Insecure       bool   `json:"insecure"`
	RequestTimeout string `json:"request_timeout"`
}

// configDir is $XDG_CONFIG_HOME, else ~/.config; "" without either.
func configDir(getenv func(string) string) string {
	if dir := getenv("XDG_CONFIG_HOME"); dir != "" {
		return dir
	}
	if home := getenv("HOME"); home != "" {
		return filepath.Join(home, ".config")
	}
	return ""
}

// loadConfig reads $SMBCTL_CONFIG (which must exist if set) or
// ~/.config/smbctl/config.json (which may be missing).
func loadConfig(getenv func(string) string) (*config, error) {
	path, must := getenv("SMBCTL_CONFIG"), true
	if path == "" {
		must = false
		dir := configDir(getenv)
		if dir == "" {
			return &config{}, nil
		}
		path = filepath.Join(dir, "smbctl", "config.json")
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && !must {
		return &config{}, nil
	}
	if err != nil {
		return nil, setupf("config file: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	c := &config{}
	if err := dec.Decode(c); err != nil {
		return nil, setupf("config file %s: %v", path, err)
	}
	return c, nil
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// settings are the resolved connection settings: flag, then environment,
// then config file, then default.
type settings struct {
	endpoint string
	token    string
	creds    credentials.TransportCredentials
	timeout  time.Duration
}

func (f *connFlags) resolve(getenv func(string) string) (*settings, error) {
	cfg, err := loadConfig(getenv)
	if err != nil {
		return nil, err
	}
	s := &settings{endpoint: first(f.endpoint, getenv("SMBCTL_ENDPOINT"), cfg.Endpoint, defaultEndpoint)}
	if _, _, err := net.SplitHostPort(s.endpoint); err != nil {
		s.endpoint = net.JoinHostPort(strings.Trim(s.endpoint, "[]"), coordinatorPort)
	}
	if s.token, err = resolveToken(f, getenv, cfg, s.endpoint); err != nil {
		return nil, err
	}
	s.timeout = f.requestTimeout
	if s.timeout == 0 && cfg.RequestTimeout != "" {
		if s.timeout, err = time.ParseDuration(cfg.RequestTimeout); err != nil {
			return nil, setupf("config file: request_timeout: %v", err)
		}
	}
	if s.timeout <= 0 {
		s.timeout = defaultRequestTimeout
	}
	insecureOn := f.insecure || cfg.Insecure || isTrue(getenv("SMBCTL_INSECURE"))
	if s.creds, err = transportCreds(s.endpoint, insecureOn, first(f.ca, getenv("SMBCTL_CA"), cfg.CA),
		first(f.cert, cfg.Cert), first(f.key, cfg.Key)); err != nil {
		return nil, err
	}
	return s, nil
}

func isTrue(s string) bool {
	switch strings.ToLower(s) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// resolveToken: flag, environment, config file, then the token a
// development coordinator at endpoint linked for this user.
func resolveToken(f *connFlags, getenv func(string) string, cfg *config, endpoint string) (string, error) {
	switch {
	case f.token != "":
		return f.token, nil
	case f.tokenFile != "":
		return readTokenFile("--token-file", f.tokenFile)
	case getenv("SMBCTL_TOKEN") != "":
		return getenv("SMBCTL_TOKEN"), nil
	case getenv("SMBCTL_TOKEN_FILE") != "":
		return readTokenFile("SMBCTL_TOKEN_FILE", getenv("SMBCTL_TOKEN_FILE"))
	case cfg.Token != "":
		return cfg.Token, nil
	case cfg.TokenFile != "":
		return readTokenFile("config token_file", cfg.TokenFile)
	}
	return devToken(getenv, endpoint)
}

// devToken reads the token a development coordinator (smbcoord
// --dev-loopback-insecure, make run) on the loopback endpoint linked for
// the user who started it: $XDG_CONFIG_HOME/smbctl/dev/HOST:PORT.token,
// default ~/.config (coordinator/devtoken writes it). None there is no
// token; one this user may not read is another user's cluster.
func devToken(getenv func(string) string, endpoint string) (string, error) {
	dir := configDir(getenv)
	if dir == "" || !isLoopback(endpoint) {
		return "", nil
	}
	if host, port, _ := net.SplitHostPort(endpoint); strings.EqualFold(host, "localhost") {
		endpoint = net.JoinHostPort("127.0.0.1", port)
	}
	path := filepath.Join(dir, "smbctl", "dev", endpoint+".token")
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", nil
	case errors.Is(err, fs.ErrPermission):
		return "", exitError{fmt.Sprintf("cannot read the development token %s (permission denied): a development coordinator is administered only by the user who started it", path), ExitAuth}
	case err != nil:
		return "", setupf("development token: %v", err)
	}
	return strings.TrimSpace(string(b)), nil
}

func readTokenFile(what, path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", setupf("%s: %v", what, err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", setupf("%s: %s is empty", what, path)
	}
	return tok, nil
}

// transportCreds is plaintext for --insecure (loopback only), else TLS.
func transportCreds(endpoint string, insecureOn bool, ca, cert, key string) (credentials.TransportCredentials, error) {
	if insecureOn {
		if !isLoopback(endpoint) {
			return nil, usagef("--insecure is only for a coordinator on a loopback address (development mode); %s is not: give --ca FILE to verify its TLS certificate", endpoint)
		}
		return insecure.NewCredentials(), nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, setupf("--ca: %v", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, setupf("--ca: no PEM certificate in %s", ca)
		}
	}
	if (cert == "") != (key == "") {
		return nil, usagef("--cert and --key go together")
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, setupf("--cert/--key: %v", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return credentials.NewTLS(cfg), nil
}

// isLoopback reports whether endpoint's host is a loopback address.
func isLoopback(endpoint string) bool {
	host, _, err := net.SplitHostPort(endpoint)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// conn is a client connection to the coordinator. grpc.NewClient does
// not connect: the first call does.
type conn struct {
	*settings
	cc *grpc.ClientConn

	mu      sync.Mutex
	dialErr error // the last dial's error: tells "unreachable" from other Unavailable errors
}

// open resolves the connection settings and prepares the connection.
func (f *connFlags) open(e *env, _ *flag.FlagSet) (*conn, error) {
	s, err := f.resolve(e.getenv)
	if err != nil {
		return nil, err
	}
	c := &conn{settings: s}
	dial := e.dial
	if dial == nil {
		var d net.Dialer
		dial = func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
	}
	c.cc, err = grpc.NewClient("passthrough:///"+s.endpoint,
		grpc.WithTransportCredentials(s.creds),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			nc, err := dial(ctx, addr)
			c.mu.Lock()
			c.dialErr = err
			c.mu.Unlock()
			return nc, err
		}))
	if err != nil {
		return nil, usagef("--endpoint %q: %v", s.endpoint, err)
	}
	return c, nil
}

func (c *conn) close() { c.cc.Close() }

func (c *conn) lastDialErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dialErr
}

// rpcContext bounds one call by the request timeout plus wait (a drain
// or close that waits on the server) and carries the bearer token.
func (c *conn) rpcContext(ctx context.Context, wait time.Duration) (context.Context, context.CancelFunc) {
	if c.token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+c.token)
	}
	return context.WithTimeout(ctx, c.timeout+wait)
}
