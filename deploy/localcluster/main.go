// Command localcluster is what `make run` starts: a whole smbcluster on
// loopback in one process — an embedded etcd (data under DIR/etcd), the
// coordinator in its loopback development mode, and three nodes on
// 127.0.0.1, 127.0.0.2 and 127.0.0.3 — with a demo share
// (DIR/shares/demo) and a demo user (demo, password demo). Ctrl-C stops it
// all.
//
//	localcluster [--dir ./run] [--port 445|4450] [--coordinator 127.0.0.1:7445] [--nodes 3] [--share-root DIR ...]
//
// The SMB port is 445 when run as root, 4450 otherwise (an unprivileged
// process cannot bind ports below 1024).
//
// Only the user who started it may administer it: the coordinator
// requires a token that each start writes to DIR/admin-token (mode 0600)
// and links from that user's ~/.config/smbctl/dev/HOST:PORT.token, where
// their smbctl finds it (coordinator/devtoken). Shares may be created only
// under DIR/shares and the --share-root directories. The etcd has no TCP
// port: it serves only the unix socket DIR/etcd/client.sock in its mode-0700
// directory (coordinator/store), so no other local user can write records
// past the coordinator; the nodes connect with --etcd unix:// followed by
// that socket's absolute path.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof" // --debug-addr
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/smbcluster/smbcluster/coordinator/coord"
	"github.com/smbcluster/smbcluster/coordinator/devtoken"
	"github.com/smbcluster/smbcluster/coordinator/service"
	"github.com/smbcluster/smbcluster/node/nodemain"
	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// ReadyLine is printed on stdout once the cluster serves (tests wait for it).
const ReadyLine = "local cluster ready"

type options struct {
	dir, coord, logLevel string
	debugAddr            string // serve /debug/vars and /debug/pprof (loopback)
	port, nodes          int
	metricsPort          int      // each node's /metrics and /stats port on its address; 0: off
	coordMetrics         string   // the coordinator's /metrics address
	shareRoots           []string // besides DIR/shares
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o := options{}
	flag.StringVar(&o.dir, "dir", "run", "`DIR` for etcd's data, the cluster secret, tokens and the demo share")
	flag.IntVar(&o.port, "port", defaultPort(), "SMB `PORT` of every node (445 as root, else 4450)")
	flag.StringVar(&o.coord, "coordinator", "127.0.0.1:7445", "coordinator `ADDR` (loopback)")
	flag.IntVar(&o.nodes, "nodes", 3, "number of nodes, on 127.0.0.1, 127.0.0.2, ...")
	flag.StringVar(&o.logLevel, "log-level", "warn", "nodes' log `LEVEL`")
	flag.IntVar(&o.metricsPort, "metrics-port", 9450, "serve each node's /metrics and /stats on its address at `PORT` (smbctl top); 0: off")
	flag.StringVar(&o.coordMetrics, "coordinator-metrics", "127.0.0.1:9449", "serve the coordinator's /metrics on `ADDR` (loopback); empty: off")
	flag.StringVar(&o.debugAddr, "debug-addr", "", "serve /debug/vars (smbcluster_peer_rpcs: the RPCs the nodes sent each other) and /debug/pprof on `ADDR`, e.g. 127.0.0.1:6060")
	flag.Func("share-root", "also allow shares at or under `DIR` (absolute; repeatable); DIR/shares always", func(dir string) error {
		if err := service.CheckShareRoot(dir); err != nil {
			return err
		}
		o.shareRoots = append(o.shareRoots, dir)
		return nil
	})
	flag.Parse()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "localcluster:", err)
		os.Exit(1)
	}
}

// coordMetricsAddr is where the coordinator serves /metrics; "" when
// off.
func coordMetricsAddr(o options) string { return o.coordMetrics }

func defaultPort() int {
	if os.Geteuid() == 0 {
		return 445
	}
	return 4450
}

func run(ctx context.Context, o options, stdout io.Writer) error {
	if o.nodes < 1 || o.nodes > 254 {
		return fmt.Errorf("--nodes %d: want 1 to 254", o.nodes)
	}
	if o.debugAddr != "" {
		l, err := net.Listen("tcp", o.debugAddr)
		if err != nil {
			return coord.ListenError("--debug-addr", o.debugAddr, err)
		}
		go http.Serve(l, nil) // expvar and net/http/pprof register on the default mux
	}
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return err
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return err
	}
	defer unlock()
	if err := checkFree(o); err != nil {
		return err
	}
	shares := filepath.Join(dir, "shares")
	demo := filepath.Join(shares, "demo")
	if err := os.MkdirAll(demo, 0o755); err != nil {
		return err
	}
	tokenFile := filepath.Join(dir, "admin-token")
	token, err := devtoken.Create(tokenFile)
	if err != nil {
		return err
	}
	secretFile := filepath.Join(dir, "secret")
	c := coordinator{tokenFile: tokenFile, shareRoots: append([]string{shares}, o.shareRoots...)}
	co, err := coord.Start(coord.Config{
		Listen: o.coord, EmbeddedEtcd: filepath.Join(dir, "etcd"),
		SecretFile: secretFile, CreateSecret: true,
		DevLoopback: true, TokenFile: tokenFile, Token: token,
		ShareRoots: c.shareRoots, Version: nodemain.Version, MetricsAddr: coordMetricsAddr(o),
		Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), // its warnings, as before
	})
	if err != nil {
		return err
	}
	defer co.Stop(false)
	c.link = co.Link
	endpoints := co.Endpoints
	admin, err := grpc.NewClient(o.coord, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer admin.Close()
	actx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	nodes, err := setUp(actx, admin, o, demo)
	if err != nil {
		return err
	}
	return serveNodes(ctx, o, &c, nodes, endpoints, secretFile, stdout, func() bool { return serveOwn(actx, admin, nodes) })
}

// lockDir takes DIR for this process (an exclusive lock on DIR/lock,
// released when the process ends): a second localcluster on the same
// DIR would overwrite the running one's token and etcd sockets.
func lockDir(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s is in use by another localcluster (`make run`): stop it first, or give another --dir", dir)
		}
		return nil, fmt.Errorf("locking %s: %w", dir, err)
	}
	return func() { f.Close() }, nil
}

// checkFree makes sure, before anything starts, that the nodes' SMB and
// metrics addresses are free: a node waits for a public address it
// cannot bind (another node may still hold it), so one held by some
// other process would never be served.
func checkFree(o options) error {
	for i := 1; i <= o.nodes; i++ {
		host := "127.0.0." + strconv.Itoa(i)
		addrs := []string{net.JoinHostPort(host, strconv.Itoa(o.port))}
		if o.metricsPort != 0 {
			addrs = append(addrs, net.JoinHostPort(host, strconv.Itoa(o.metricsPort)))
		}
		for _, a := range addrs {
			l, err := net.Listen("tcp", a)
			if err != nil {
				return coord.ListenError("node"+strconv.Itoa(i), a, err)
			}
			l.Close()
		}
	}
	return nil
}

// coordinator is what the help text says of the admin API.
type coordinator struct {
	tokenFile  string   // DIR/admin-token
	shareRoots []string // DIR/shares and --share-root
	link       string   // where the starting user's smbctl finds the token; "" if not linked
}

// node is one node to start.
type node struct {
	name, addr, token string
}

// setUp admits the nodes (again, for fresh join tokens), and creates the
// demo share and user if they do not exist.
func setUp(ctx context.Context, conn *grpc.ClientConn, o options, demo string) ([]node, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	nc := adminv1.NewNodeServiceClient(conn)
	var nodes []node
	for i := 1; i <= o.nodes; i++ {
		n := node{name: "node" + strconv.Itoa(i), addr: net.JoinHostPort("127.0.0."+strconv.Itoa(i), strconv.Itoa(o.port))}
		_, err := nc.RemoveNode(ctx, &adminv1.RemoveNodeRequest{Name: n.name, Force: true})
		if err != nil && status.Code(err) != codes.NotFound {
			return nil, fmt.Errorf("node %s: %w", n.name, err)
		}
		resp, err := nc.AddNode(ctx, &adminv1.AddNodeRequest{Name: n.name, Addresses: []string{n.addr}})
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", n.name, err)
		}
		n.token = resp.JoinToken
		nodes = append(nodes, n)
	}
	_, err := adminv1.NewShareServiceClient(conn).CreateShare(ctx, &adminv1.CreateShareRequest{
		Share: &adminv1.Share{Name: "demo", Path: demo, Comment: "smbcluster demo share"}})
	if err != nil && status.Code(err) != codes.AlreadyExists {
		return nil, fmt.Errorf("demo share: %w", err)
	}
	uc := adminv1.NewUserServiceClient(conn)
	_, err = uc.CreateUser(ctx, &adminv1.CreateUserRequest{Name: "demo", Password: "demo"})
	if status.Code(err) == codes.AlreadyExists {
		_, err = uc.SetPassword(ctx, &adminv1.SetPasswordRequest{Name: "demo", Password: "demo"})
	}
	if err != nil {
		return nil, fmt.Errorf("demo user: %w", err)
	}
	return nodes, nil
}

// serveOwn reports whether every node serves its own public address (the
// nodes join one by one, and until a node has joined another serves its
// address).
func serveOwn(ctx context.Context, conn *grpc.ClientConn, nodes []node) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := adminv1.NewNodeServiceClient(conn).ListNodes(ctx, &adminv1.ListNodesRequest{})
	if err != nil {
		return false
	}
	serving := map[string][]string{}
	for _, n := range resp.GetNodes() {
		serving[n.GetName()] = n.GetServing()
	}
	for _, n := range nodes {
		if !slices.Contains(serving[n.name], n.addr) {
			return false
		}
	}
	return true
}

// serveNodes runs the nodes in this process until ctx ends; they are
// ready when ready says so and each accepts connections.
func serveNodes(ctx context.Context, o options, c *coordinator, nodes []node, endpoints []string, secretFile string, stdout io.Writer, ready func() bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	exits := make(chan int, len(nodes))
	for _, n := range nodes {
		args := []string{
			"--listen", n.addr, "--etcd", endpoints[0], "--name", n.name, "--join-token", n.token,
			"--secret-file", secretFile, "--log-level", o.logLevel, "--lease-ttl", "3s",
		}
		if o.metricsPort != 0 {
			host, _, _ := net.SplitHostPort(n.addr)
			args = append(args, "--metrics-addr", net.JoinHostPort(host, strconv.Itoa(o.metricsPort)))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			exits <- nodemain.Run(ctx, args)
		}()
	}
	readyc := make(chan error, 1)
	go func() { readyc <- waitListening(ctx, nodes, ready) }()
	var runErr error
	for ready := false; runErr == nil && ctx.Err() == nil; {
		select {
		case <-ctx.Done():
		case err := <-readyc:
			if err != nil {
				if ctx.Err() == nil {
					runErr = err
				}
				break
			}
			ready = true
			printHelp(stdout, o, c, nodes, endpoints)
		case code := <-exits:
			runErr = fmt.Errorf("a node stopped (exit %d); its error is above", code)
			if !ready {
				runErr = fmt.Errorf("a node failed to start (exit %d); its error is above", code)
			}
		}
	}
	cancel()
	wg.Wait()
	return runErr
}

// waitListening waits until ready and every node accepts connections.
func waitListening(ctx context.Context, nodes []node, ready func() bool) error {
	deadline := time.Now().Add(60 * time.Second)
	for !ready() {
		if ctx.Err() != nil || time.Now().After(deadline) {
			return errors.New("the nodes did not take their public addresses within 60s")
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
	for _, n := range nodes {
		for {
			c, err := net.DialTimeout("tcp", n.addr, time.Second)
			if err == nil {
				c.Close()
				break
			}
			if ctx.Err() != nil || time.Now().After(deadline) {
				return fmt.Errorf("node %s on %s: %v", n.name, n.addr, err)
			}
			t := time.NewTimer(50 * time.Millisecond)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
		}
	}
	return nil
}

func printHelp(w io.Writer, o options, c *coordinator, nodes []node, endpoints []string) {
	port := ""
	if o.port != 445 {
		port = " -p " + strconv.Itoa(o.port)
	}
	fmt.Fprintf(w, "%s: etcd %s, coordinator %s\n", ReadyLine, endpoints[0], o.coord)
	for _, n := range nodes {
		fmt.Fprintf(w, "  %s  smb://%s\n", n.name, n.addr)
	}
	host, _, _ := net.SplitHostPort(nodes[0].addr)
	fmt.Fprintf(w, "\nConnect (any node serves the demo share):\n")
	fmt.Fprintf(w, "  smbclient //%s/demo%s -U demo%%demo -c 'ls'\n", host, port)
	ctl := "bin/smbctl --insecure --endpoint " + o.coord
	if c.link != "" {
		fmt.Fprintf(w, "Manage, as the user who started the cluster (smbctl finds the token in %s through %s):\n", c.tokenFile, c.link)
	} else {
		fmt.Fprintf(w, "Manage, as the user who started the cluster:\n")
		ctl += " --token-file " + c.tokenFile
	}
	fmt.Fprintf(w, "  %s node ls\n", ctl)
	if o.metricsPort != 0 {
		fmt.Fprintf(w, "  %s top\n", ctl)
	}
	team := filepath.Join(c.shareRoots[0], "team")
	fmt.Fprintf(w, "  mkdir %s && %s share add team %s\n", team, ctl, team)
	fmt.Fprintf(w, "Shares may be created under %s (more with --share-root DIR).\n", strings.Join(c.shareRoots, ", "))
	if o.metricsPort != 0 {
		fmt.Fprintf(w, "Prometheus metrics: http://%s/metrics (node1; the others on their addresses)\n", net.JoinHostPort(host, strconv.Itoa(o.metricsPort)))
	}
	if o.coordMetrics != "" {
		fmt.Fprintf(w, "and http://%s/metrics (the coordinator); deploy/prometheus and deploy/grafana scrape and chart them.\n", o.coordMetrics)
	}
	fmt.Fprintf(w, "Ctrl-C stops the cluster; its state stays under %s.\n", o.dir)
}
