package nodemain

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// Config is the node's configuration, from flags or a JSON file.
type Config struct {
	Listen          []string      `json:"listen"`
	Shares          []ShareConfig `json:"shares"`
	Users           []UserConfig  `json:"users"`
	SigningRequired bool          `json:"signing_required"`
	Encryption      string        `json:"encryption"` // off | desired | required
	LogLevel        string        `json:"log_level"`
	ServerName      string        `json:"server_name"`
	Workgroup       string        `json:"workgroup"`
	AllowGuest      bool          `json:"allow_guest"`
	// Auth is the mechanisms accepted: both (default), ntlm or kerberos.
	Auth string `json:"auth"`
	// Keytab is the Kerberos keytab file; SPNs the service principals
	// accepted from it (empty: all of its principals); KerberosRealms the
	// realms whose principals map to the user of the same name (empty:
	// the keytab's realms; "*": any).
	Keytab         string   `json:"keytab"`
	SPNs           []string `json:"spns"`
	KerberosRealms []string `json:"kerberos_realms"`
	// KerberosClockSkew bounds the difference between a client's
	// authenticator time and the node's (0 → 5m).
	KerberosClockSkew Duration `json:"kerberos_clock_skew"`
	// NoDirectoryLeases withholds directory leasing from 3.x clients.
	NoDirectoryLeases bool `json:"no_directory_leases"`
	// ZeroCopyThreshold is the smallest plain READ sent with sendfile
	// (bytes; 0 → the default, negative → never).
	ZeroCopyThreshold int `json:"zero_copy_threshold"`
	// SpliceWriteThreshold is the smallest plain WRITE whose payload
	// goes from the socket to the file with splice(2) (bytes; 0 → the
	// default, negative → never).
	SpliceWriteThreshold int `json:"splice_write_threshold"`
	// DebugAddr serves Go's pprof endpoints on this address (loopback
	// only in practice; empty disables).
	DebugAddr string `json:"debug_addr"`
	// MetricsAddr serves /metrics (Prometheus text) and /stats (for
	// smbctl top through the coordinator) on this address; empty (the
	// default) serves neither. Published to the cluster.
	MetricsAddr string `json:"metrics_addr"`
	// ShutdownTimeout bounds the graceful shutdown after SIGTERM or
	// SIGINT: past it, connections still open are closed at once (0 →
	// defaultShutdownTimeout).
	ShutdownTimeout Duration `json:"shutdown_timeout"`

	// Limits (limits.go): 0 → the default, negative → none.
	HandshakeTimeout   Duration `json:"handshake_timeout"`
	IdleTimeout        Duration `json:"idle_timeout"`
	MaxConnections     int      `json:"max_connections"`
	MaxOpens           int      `json:"max_opens"`
	MaxOpensPerSession int      `json:"max_opens_per_session"`

	// Cluster membership (node/cluster): with Etcd set, the node joins
	// the cluster and takes shares and users from it.
	Etcd          string   `json:"etcd"` // comma-separated endpoints
	EtcdCA        string   `json:"etcd_ca"`
	EtcdCert      string   `json:"etcd_cert"`
	EtcdKey       string   `json:"etcd_key"`
	Name          string   `json:"name"`
	JoinToken     string   `json:"join_token"`
	JoinTokenFile string   `json:"join_token_file"`
	SecretFile    string   `json:"secret_file"`
	Advertise     []string `json:"advertise"`
	LeaseTTL      Duration `json:"lease_ttl"`
	PeerListen    string   `json:"peer_listen"`
	// StorageCheckInterval is the time between two rounds of the node's
	// storage check of a cluster share once its pairs are decided
	// (node/storecheck; default 30s).
	StorageCheckInterval Duration `json:"storage_check_interval"`

	// LinkSpeed is the speed multichannel clients are offered the node's
	// addresses with (FSCTL_QUERY_NETWORK_INTERFACE_INFO): bits per
	// second with an optional decimal suffix, "10G", "2.5G", "100M".
	LinkSpeed string `json:"link_speed"`

	// AddressHook is run as `HOOK add|del IP IFACE` when the node starts
	// or stops serving a public address's IP; AddressInterface is IFACE.
	AddressHook      string `json:"address_hook"`
	AddressInterface string `json:"address_interface"`

	// WitnessPort and EPMPort are the TCP ports of the witness service
	// ([MS-SWN] over ncacn_ip_tcp) and of the endpoint mapper that
	// clients ask for it (witness.go): 0 the default (witness: any free
	// port; endpoint mapper: 135 when run as root, else off), -1 off.
	WitnessPort int `json:"witness_port"`
	EPMPort     int `json:"epm_port"`
	// ClusterAdmins are the users (of the cluster's user table) who may
	// change the cluster through clusapi ([MS-CMRP]; clusapi.go): take
	// its network name offline and back online. Any authenticated user
	// may read it. Give every node the same list.
	ClusterAdmins []string `json:"cluster_admins"`
}

// Duration is a time.Duration that reads "5s" in JSON.
type Duration time.Duration

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

// defaultZeroCopyThreshold is the READ size from which sendfile beats a
// buffered copy on loopback (see README, Performance).
const defaultZeroCopyThreshold = 16 << 10

// defaultSpliceWriteThreshold is the WRITE size from which splicing the
// payload into the file beats reading it into memory (see README,
// Performance).
const defaultSpliceWriteThreshold = 256 << 10

// defaultShutdownTimeout is how long a shutdown waits for requests being
// served to finish and be answered.
const defaultShutdownTimeout = 10 * time.Second

// ShareConfig is one disk share.
type ShareConfig struct {
	Name     string `json:"name"`
	Path     string `json:"path"`
	Comment  string `json:"comment"`
	ReadOnly bool   `json:"read_only"`
	Encrypt  bool   `json:"encrypt"`
}

// UserConfig is one local user.
type UserConfig struct {
	Name     string `json:"name"`
	Password string `json:"password"`
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

const usage = `Usage: smbnode [flags]

smbnode serves SMB 2.0.2 - 3.1.1 shares from local directories.

Examples:
  smbnode --listen 127.0.0.1:4450 --share data=/srv/data --user alice:secret
  smbnode --config /etc/smbcluster/node.json
  smbnode --etcd http://10.0.0.5:2379 --name node1 --join-token-file /etc/smbcluster/join-token \
          --secret-file /etc/smbcluster/secret --listen 10.0.0.11:445

With --etcd the node joins a cluster: "smbctl node add NAME" admits it and
prints its join token; shares and users come from the cluster. The
addresses it was admitted with (--address) are public addresses: the node
listens on those of its --listen addresses only while it holds them, and
they move to other nodes while it is down or draining.

Flags:
`

// parseFlags builds the configuration from args.
func parseFlags(args []string, stderr *os.File) (*Config, error) {
	fs := flag.NewFlagSet("smbnode", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var listen, shares, users, advertise, spns, realms, admins listFlag
	var storageCheck time.Duration
	var leaseTTL, shutdownTimeout, handshakeTimeout, idleTimeout, krbSkew time.Duration
	var cfgFile string
	cfg := &Config{}
	fs.Var(&listen, "listen", "`ADDR` to listen on, host:port (repeatable; default :445)")
	fs.Var(&shares, "share", "share `NAME=PATH[,readonly][,encrypt][,comment=TEXT]` (repeatable)")
	fs.Var(&users, "user", "local user `NAME:PASSWORD` (repeatable)")
	fs.Var(&admins, "cluster-admin", "`USER` who may take the cluster's network name offline and online through clusapi ([MS-CMRP]) (repeatable)")
	fs.StringVar(&cfgFile, "config", "", "JSON configuration `FILE` (flags add to it)")
	fs.BoolVar(&cfg.SigningRequired, "signing-required", false, "refuse sessions that do not sign")
	fs.StringVar(&cfg.Encryption, "encryption", "", "encryption `MODE`: off (only shares marked encrypt), desired (every capable client), required (refuse clients that cannot)")
	fs.StringVar(&cfg.LogLevel, "log-level", "", "log `LEVEL`: debug, info, warn, error (default info)")
	fs.StringVar(&cfg.ServerName, "server-name", "", "NetBIOS `NAME` of the server (default SMBCLUSTER)")
	fs.StringVar(&cfg.Workgroup, "workgroup", "", "NetBIOS `DOMAIN` (default WORKGROUP)")
	fs.BoolVar(&cfg.AllowGuest, "allow-guest", false, "map unknown users and bad passwords to a guest session")
	fs.StringVar(&cfg.Auth, "auth", "", "authentication `MECHS`: both (Kerberos and NTLM, the default), kerberos (no NTLM) or ntlm")
	fs.StringVar(&cfg.Keytab, "keytab", "", "Kerberos keytab `FILE` holding the service principal's keys (in a cluster, smbctl cluster set-keytab replaces it)")
	fs.Var(&spns, "spn", "service `PRINCIPAL` accepted from the keytab, e.g. cifs/files.example.com (repeatable; default: every principal of the keytab)")
	fs.DurationVar(&krbSkew, "krb-clock-skew", 0, "largest difference between a Kerberos client's clock and the node's, `DURATION`, also how long an expired ticket is still accepted (default 5m)")
	fs.Var(&realms, "krb-realm", "Kerberos `REALM` whose principals NAME@REALM log on as user NAME (repeatable, * for any; default: the keytab's realms)")
	fs.BoolVar(&cfg.NoDirectoryLeases, "no-directory-leases", false, "offer no leases on directories (SMB2_GLOBAL_CAP_DIRECTORY_LEASING)")
	fs.StringVar(&cfg.DebugAddr, "debug-addr", "", "serve Go profiling endpoints (/debug/pprof/) on `ADDR`, e.g. 127.0.0.1:6060")
	fs.StringVar(&cfg.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics (/metrics) and the stats smbctl top reads (/stats) on `ADDR`, e.g. 127.0.0.1:9450 (default: off; unauthenticated, keep it on a management network)")
	fs.StringVar(&cfg.Etcd, "etcd", "", "join the cluster whose etcd is at `ENDPOINTS` (comma-separated URLs)")
	fs.StringVar(&cfg.EtcdCA, "etcd-ca", "", "CA certificate `FILE` for etcd's TLS")
	fs.StringVar(&cfg.EtcdCert, "etcd-cert", "", "client certificate `FILE` for etcd")
	fs.StringVar(&cfg.EtcdKey, "etcd-key", "", "client key `FILE` for etcd")
	fs.StringVar(&cfg.Name, "name", "", "the node's `NAME` in the cluster, as admitted by smbctl node add")
	fs.StringVar(&cfg.JoinToken, "join-token", "", "the join `TOKEN` smbctl node add printed (prefer --join-token-file)")
	fs.StringVar(&cfg.JoinTokenFile, "join-token-file", "", "`FILE` holding the join token")
	fs.StringVar(&cfg.SecretFile, "secret-file", "", "`FILE` holding the cluster secret (the coordinator's --secret-file)")
	fs.Var(&advertise, "advertise", "SMB endpoint `ADDR` (host:port) published to the cluster besides the public addresses the node holds (repeatable; never moved to another node)")
	fs.StringVar(&cfg.PeerListen, "peer-listen", "", "`ADDR` (host:port) of the node-to-node API in a cluster (default: the first --listen host, any free port; published through etcd)")
	fs.StringVar(&cfg.LinkSpeed, "link-speed", "", "`SPEED` (bits per second: 10G, 2.5G, 100M) multichannel clients are offered the node's addresses with; in a cluster every node offers it for this node (default 10G)")
	fs.DurationVar(&storageCheck, "storage-check-interval", 0, "time `D` between two rounds of the check that every node's mount of a cluster share is coherent with the others' (default 30s; each round is two quick probes)")
	fs.DurationVar(&leaseTTL, "lease-ttl", 0, "`TTL` of the node's etcd lease: how soon a dead node shows down and its public addresses move (default 3s, whole seconds)")
	fs.StringVar(&cfg.AddressHook, "address-hook", "", "`SCRIPT` run as SCRIPT add|del IP IFACE when the node starts or stops serving a public address (smbctl node add --address) it took over or gives up, e.g. to run ip addr add/del and arping; not needed on loopback")
	fs.StringVar(&cfg.AddressInterface, "address-interface", "", "network interface `NAME` passed to --address-hook")
	fs.DurationVar(&shutdownTimeout, "shutdown-timeout", 0, "on SIGTERM, how long requests being served get to finish and be answered before the remaining connections are closed (default 10s)")
	fs.IntVar(&cfg.ZeroCopyThreshold, "zero-copy-threshold", 0, "smallest plain READ in `BYTES` sent with sendfile (0: default 16384, -1: never)")
	fs.IntVar(&cfg.SpliceWriteThreshold, "splice-write-threshold", 0, "smallest plain WRITE in `BYTES` spliced from the socket into the file (0: default 262144, -1: never)")
	fs.DurationVar(&handshakeTimeout, "handshake-timeout", 0, "close a connection that has not authenticated within `DURATION` (0: default 30s, -1s: never)")
	fs.DurationVar(&idleTimeout, "idle-timeout", 0, "close an authenticated connection idle for `DURATION` (0 or -1s: never, the default)")
	fs.IntVar(&cfg.MaxConnections, "max-connections", 0, "refuse connections beyond `N` (0: default 4096, -1: unlimited)")
	fs.IntVar(&cfg.MaxOpens, "max-opens", 0, "open files the node holds at most, `N` (0: default half the descriptor limit, -1: unlimited)")
	fs.IntVar(&cfg.WitnessPort, "witness-port", 0, "TCP `PORT` of the witness service (0: any free port, found through the endpoint mapper; -1: off)")
	fs.IntVar(&cfg.EPMPort, "epm-port", 0, "TCP `PORT` of the DCE/RPC endpoint mapper that names the witness port (0: 135 when run as root, else off; -1: off)")
	fs.IntVar(&cfg.MaxOpensPerSession, "max-opens-per-session", 0, "open files one session holds at most, `N` (0: default 16384, -1: unlimited)")
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if cfgFile != "" {
		fileCfg, err := loadFile(cfgFile)
		if err != nil {
			return nil, err
		}
		cfg = merge(fileCfg, cfg)
	}
	cfg.Listen = append(cfg.Listen, listen...)
	cfg.Advertise = append(cfg.Advertise, advertise...)
	cfg.SPNs = append(cfg.SPNs, spns...)
	cfg.KerberosRealms = append(cfg.KerberosRealms, realms...)
	cfg.ClusterAdmins = append(cfg.ClusterAdmins, admins...)
	if storageCheck != 0 {
		cfg.StorageCheckInterval = Duration(storageCheck)
	}
	if leaseTTL != 0 {
		cfg.LeaseTTL = Duration(leaseTTL)
	}
	if shutdownTimeout != 0 {
		cfg.ShutdownTimeout = Duration(shutdownTimeout)
	}
	if handshakeTimeout != 0 {
		cfg.HandshakeTimeout = Duration(handshakeTimeout)
	}
	if idleTimeout != 0 {
		cfg.IdleTimeout = Duration(idleTimeout)
	}
	if krbSkew != 0 {
		cfg.KerberosClockSkew = Duration(krbSkew)
	}
	for _, s := range shares {
		sc, err := parseShare(s)
		if err != nil {
			return nil, err
		}
		cfg.Shares = append(cfg.Shares, sc)
	}
	for _, u := range users {
		name, pw, ok := strings.Cut(u, ":")
		if !ok || name == "" {
			return nil, fmt.Errorf("--user %q: want NAME:PASSWORD", u)
		}
		cfg.Users = append(cfg.Users, UserConfig{Name: name, Password: pw})
	}
	if len(cfg.Listen) == 0 {
		cfg.Listen = []string{":445"}
	}
	return cfg, cfg.validate()
}

// merge overlays the flags that were set on the file's configuration.
func merge(file, flags *Config) *Config {
	out := *file
	out.SigningRequired = file.SigningRequired || flags.SigningRequired
	out.AllowGuest = file.AllowGuest || flags.AllowGuest
	out.NoDirectoryLeases = file.NoDirectoryLeases || flags.NoDirectoryLeases
	if flags.DebugAddr != "" {
		out.DebugAddr = flags.DebugAddr
	}
	if flags.MetricsAddr != "" {
		out.MetricsAddr = flags.MetricsAddr
	}
	if flags.ZeroCopyThreshold != 0 {
		out.ZeroCopyThreshold = flags.ZeroCopyThreshold
	}
	if flags.SpliceWriteThreshold != 0 {
		out.SpliceWriteThreshold = flags.SpliceWriteThreshold
	}
	for _, p := range []struct{ dst, v *int }{
		{&out.MaxConnections, &flags.MaxConnections}, {&out.MaxOpens, &flags.MaxOpens},
		{&out.MaxOpensPerSession, &flags.MaxOpensPerSession},
		{&out.WitnessPort, &flags.WitnessPort}, {&out.EPMPort, &flags.EPMPort},
	} {
		if *p.v != 0 {
			*p.dst = *p.v
		}
	}
	for _, p := range []struct {
		dst *string
		v   string
	}{
		{&out.Encryption, flags.Encryption}, {&out.LogLevel, flags.LogLevel},
		{&out.ServerName, flags.ServerName}, {&out.Workgroup, flags.Workgroup},
		{&out.Etcd, flags.Etcd}, {&out.EtcdCA, flags.EtcdCA}, {&out.EtcdCert, flags.EtcdCert},
		{&out.EtcdKey, flags.EtcdKey}, {&out.Name, flags.Name}, {&out.JoinToken, flags.JoinToken},
		{&out.JoinTokenFile, flags.JoinTokenFile}, {&out.SecretFile, flags.SecretFile},
		{&out.PeerListen, flags.PeerListen}, {&out.LinkSpeed, flags.LinkSpeed},
		{&out.Auth, flags.Auth}, {&out.Keytab, flags.Keytab},
		{&out.AddressHook, flags.AddressHook}, {&out.AddressInterface, flags.AddressInterface},
	} {
		if p.v != "" {
			*p.dst = p.v
		}
	}
	return &out
}

func loadFile(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	var cfg Config
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return &cfg, nil
}

// parseShare parses NAME=PATH[,readonly][,encrypt][,comment=TEXT].
func parseShare(s string) (ShareConfig, error) {
	name, rest, ok := strings.Cut(s, "=")
	if !ok || name == "" || rest == "" {
		return ShareConfig{}, fmt.Errorf("--share %q: want NAME=PATH[,readonly][,encrypt][,comment=TEXT]", s)
	}
	sc := ShareConfig{Name: name}
	opts := strings.Split(rest, ",")
	sc.Path = opts[0]
	for i := 1; i < len(opts); i++ {
		switch o := opts[i]; {
		case o == "readonly":
			sc.ReadOnly = true
		case o == "encrypt":
			sc.Encrypt = true
		case strings.HasPrefix(o, "comment="):
			// The comment is last and may itself contain commas.
			sc.Comment = strings.TrimPrefix(strings.Join(opts[i:], ","), "comment=")
			i = len(opts)
		default:
			return ShareConfig{}, fmt.Errorf("--share %q: unknown option %q", s, o)
		}
	}
	return sc, nil
}

func (c *Config) validate() error {
	var errs []error
	seen := map[string]bool{}
	for _, s := range c.Shares {
		key := strings.ToLower(s.Name)
		switch {
		case !validShareName(s.Name):
			errs = append(errs, fmt.Errorf("share %q: invalid name (1-80 characters, no \\ / : * ? \" < > | or control characters)", s.Name))
		case key == "ipc$":
			errs = append(errs, fmt.Errorf("share %q: IPC$ is built in", s.Name))
		case seen[key]:
			errs = append(errs, fmt.Errorf("share %q: defined twice", s.Name))
		}
		seen[key] = true
		if st, err := os.Stat(s.Path); err != nil {
			errs = append(errs, fmt.Errorf("share %q: path %s: %w", s.Name, s.Path, err))
		} else if !st.IsDir() {
			errs = append(errs, fmt.Errorf("share %q: path %s is not a directory", s.Name, s.Path))
		}
	}
	switch c.Encryption {
	case "", "off", "desired", "required":
	default:
		errs = append(errs, fmt.Errorf("--encryption %q: want off, desired or required", c.Encryption))
	}
	switch c.Auth {
	case "":
		c.Auth = authBoth
	case authBoth, authNTLM, authKerberos:
	default:
		errs = append(errs, fmt.Errorf("--auth %q: want both, kerberos or ntlm", c.Auth))
	}
	if c.KerberosClockSkew < 0 {
		errs = append(errs, errors.New("--krb-clock-skew must be positive"))
	}
	errs = append(errs, c.validateCluster()...)
	if _, err := parseLinkSpeed(c.LinkSpeed); err != nil {
		errs = append(errs, err)
	}
	if c.ShutdownTimeout < 0 {
		errs = append(errs, errors.New("--shutdown-timeout must be positive"))
	}
	var lv slog.Level
	if c.LogLevel != "" {
		if err := lv.UnmarshalText([]byte(c.LogLevel)); err != nil {
			errs = append(errs, fmt.Errorf("--log-level %q: want debug, info, warn or error", c.LogLevel))
		}
	}
	return errors.Join(errs...)
}

// parseLinkSpeed parses --link-speed: bits per second, with an optional
// k, M, G or T (powers of 1000); "" is 0, the default.
func parseLinkSpeed(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	num, mult := s, 1.0
	if i := strings.IndexAny(s[len(s)-1:], "kKmMgGtT"); i == 0 {
		num = s[:len(s)-1]
		mult = map[byte]float64{'k': 1e3, 'm': 1e6, 'g': 1e9, 't': 1e12}[s[len(s)-1]|0x20]
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v*mult < 1 || v*mult > 1e15 || math.IsNaN(v) {
		return 0, fmt.Errorf("--link-speed %q: want bits per second such as 10G, 2.5G or 100M", s)
	}
	return uint64(v * mult), nil
}

func validShareName(n string) bool {
	if n == "" || len(n) > 80 {
		return false
	}
	for _, r := range n {
		if r < 0x20 || strings.ContainsRune(`\/:*?"<>|[]+=;,`, r) {
			return false
		}
	}
	return true
}

// validateCluster checks the cluster flags: all or nothing.
func (c *Config) validateCluster() []error {
	if c.Etcd == "" {
		if c.Name != "" || c.JoinToken != "" || c.JoinTokenFile != "" {
			return []error{errors.New("--name and --join-token join a cluster: give --etcd ENDPOINTS too")}
		}
		return nil
	}
	var errs []error
	if c.Name == "" {
		errs = append(errs, errors.New("--etcd needs --name NAME (the name smbctl node add admitted)"))
	}
	if (c.JoinToken == "") == (c.JoinTokenFile == "") {
		errs = append(errs, errors.New("--etcd needs one of --join-token TOKEN and --join-token-file FILE"))
	}
	if c.SecretFile == "" {
		errs = append(errs, errors.New("--etcd needs --secret-file FILE (the cluster secret the coordinator uses)"))
	}
	if c.LeaseTTL < 0 {
		errs = append(errs, errors.New("--lease-ttl must be positive"))
	}
	if c.StorageCheckInterval < 0 {
		errs = append(errs, errors.New("--storage-check-interval must be positive"))
	}
	return errs
}
