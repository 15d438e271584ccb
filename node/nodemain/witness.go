package nodemain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/smbcluster/smbcluster/node/auth"
	"github.com/smbcluster/smbcluster/node/clusapi"
	"github.com/smbcluster/smbcluster/node/ipc/dcerpc"
	"github.com/smbcluster/smbcluster/node/ipc/ncacn"
	"github.com/smbcluster/smbcluster/node/metrics"
	"github.com/smbcluster/smbcluster/node/witness"
	"github.com/smbcluster/smbcluster/node/witness/etcdstore"
	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sys/unix"
)

// defaultEPMPort is the endpoint mapper's well-known port ([C706]
// appendix H), taken by default only by a node run as root.
const defaultEPMPort = 135

// witnessService is the node's Service Witness Protocol ([MS-SWN]): the
// witness interface on a port of its own and an endpoint mapper naming it,
// on every host the node has an address on; in a cluster its registrations
// live in etcd (node/witness/etcdstore).
type witnessService struct {
	hub   *witness.Hub
	srv   *ncacn.Server
	store *etcdstore.Store
	mu    sync.Mutex
	ports map[string]int // witness port by IP
	wg    sync.WaitGroup
	stopc context.CancelFunc
	// clusapi: the witness port serves clusapi too (in a cluster).
	clusapi bool
}

// witnessDeps is what the witness service needs of the node.
type witnessDeps struct {
	users      auth.UserDB
	serverName string
	workgroup  string
	shares     *shareTable
	etcd       *clientv3.Client
	agent      *member
	metrics    *metrics.Node  // nil: none
	krb        *auth.Kerberos // nil: no Kerberos (--auth ntlm)
}

// startWitness starts the witness service unless --witness-port is -1.
func startWitness(ctx context.Context, cfg *Config, log *slog.Logger, d witnessDeps) (*witnessService, error) {
	acfg := &auth.Config{Users: d.users, NetBIOSComputer: d.serverName, NetBIOSDomain: d.workgroup,
		Kerberos: d.krb}
	d.shares.pipeSecurity = ncacn.Security(acfg, log) // IPC$ pipes too ([sign] bindings over ncacn_np)
	if cfg.WitnessPort < 0 {
		return nil, nil
	}
	log = log.With("component", "witness")
	hosts := witnessHosts(cfg, d.agent)
	w := &witnessService{hub: witness.NewHub(), ports: map[string]int{}}
	node := strings.ToLower(cfg.Name)
	env := &witness.Env{
		Hub:  w.hub,
		Node: node,
		NetNames: func() []string {
			names := []string{d.serverName}
			if cfg.Name != "" {
				names = append(names, cfg.Name)
			}
			return names
		},
		ShareExists: func(name string) bool { _, ok := d.shares.Lookup(name); return ok },
	}
	if wm := d.metrics.Witness(func() int { return len(w.hub.List()) }, w.hub.Waiting); wm != nil {
		env.Notified = func(n *witness.Notification) { wm.Notified(n.Type) }
	}
	cctx, cancel := context.WithCancel(ctx)
	w.stopc = cancel
	if d.etcd != nil && d.agent != nil {
		w.store = etcdstore.New(etcdstore.Config{Client: d.etcd, Node: node, Hub: w.hub, Lease: d.agent.Lease, Logger: log})
		env.Store = w.store
		w.wg.Add(1)
		go func() { defer w.wg.Done(); w.store.Run(cctx) }()
	} else {
		env.Store = witness.LocalStore{Hub: w.hub}
		var rs []witness.Resource
		for _, h := range hosts {
			if ip := net.ParseIP(h); ip != nil && !ip.IsUnspecified() {
				rs = append(rs, witness.Resource{Node: node, IP: ip, Available: true})
			}
		}
		w.hub.SetResources(rs)
	}
	// NTLMSSP and, with a keytab, Kerberos (auth_type 16).
	w.srv = &ncacn.Server{Security: func() *dcerpc.Security { return ncacn.Security(acfg, log) }, Logger: log}
	if d.agent != nil {
		// A fenced node serves no witness client: they wait on another
		// node, which hears the cluster.
		w.srv.Admit = func() bool { return d.agent.Fence().Valid() }
		w.wg.Add(1)
		go func() { defer w.wg.Done(); w.endWhenFenced(cctx, d.agent) }()
	}
	iface := env.Interface()
	ifaces := func(net.Addr) []*dcerpc.Interface { return []*dcerpc.Interface{iface} }
	if d.etcd != nil {
		ifaces = w.withClusapi(cfg, d, iface)
	}
	for _, h := range hosts {
		l, err := listenFreebind(net.JoinHostPort(h, strconv.Itoa(cfg.WitnessPort)))
		if err != nil {
			w.stop()
			return nil, fmt.Errorf("witness: %w", err)
		}
		w.ports[h] = l.Addr().(*net.TCPAddr).Port
		log.Info("witness service listening", "addr", l.Addr().String())
		w.serve(l, ifaces)
	}
	w.listenEPM(cfg, hosts, log)
	return w, nil
}

// withClusapi returns the interfaces of a witness port in a cluster: the
// witness and clusapi ([MS-CMRP]; clusapi.go), with a handle table for
// each connection. smbtorture's rpc.witness reaches clusapi through the
// witness's own binding, and Windows serves both from one process too.
func (w *witnessService) withClusapi(cfg *Config, d witnessDeps, iface *dcerpc.Interface) ncacn.Interfaces {
	w.clusapi = true
	admins := map[string]bool{}
	for _, u := range cfg.ClusterAdmins {
		admins[strings.ToLower(u)] = true
	}
	node := strings.ToLower(cfg.Name)
	cenv := &clusapi.Env{
		Cluster: &clusterModel{cli: d.etcd, name: d.serverName, node: node},
		Node:    node,
		IsAdmin: func(user string) bool { return admins[strings.ToLower(user)] },
	}
	return func(net.Addr) []*dcerpc.Interface { return []*dcerpc.Interface{iface, cenv.Interface()} }
}

// listenEPM starts the endpoint mapper: on the port asked for (failing
// is an error then), or best effort on 135 when run as root.
func (w *witnessService) listenEPM(cfg *Config, hosts []string, log *slog.Logger) {
	port, must := cfg.EPMPort, cfg.EPMPort > 0
	if port == 0 && os.Geteuid() == 0 {
		port = defaultEPMPort
	}
	if port <= 0 {
		return
	}
	eps := []ncacn.Endpoint{{Syntax: witness.Syntax, Port: w.portAt}}
	if w.clusapi {
		eps = append(eps, ncacn.Endpoint{Syntax: clusapi.Syntax, Port: w.portAt})
	}
	for _, h := range hosts {
		l, err := listenFreebind(net.JoinHostPort(h, strconv.Itoa(port)))
		if err != nil {
			if must {
				log.Error("endpoint mapper", "err", err)
			} else {
				log.Warn("endpoint mapper not served", "err", err)
			}
			continue
		}
		log.Info("endpoint mapper listening", "addr", l.Addr().String())
		w.serve(l, func(local net.Addr) []*dcerpc.Interface {
			return []*dcerpc.Interface{ncacn.EndpointMapper(local, eps)}
		})
	}
}

// portAt is the witness port at ip (the wildcard's, when listening there).
func (w *witnessService) portAt(ip net.IP) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p, ok := w.ports[ip.String()]; ok {
		return p
	}
	for h, p := range w.ports {
		if a := net.ParseIP(h); h == "" || (a != nil && a.IsUnspecified()) {
			return p
		}
	}
	return 0
}

func (w *witnessService) serve(l net.Listener, ifaces ncacn.Interfaces) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		if err := w.srv.Serve(l, ifaces); err != nil && !errors.Is(err, ncacn.ErrServerClosed) {
			l.Close()
		}
	}()
}

// endWhenFenced closes the witness connections whenever an incarnation
// of the node ends.
func (w *witnessService) endWhenFenced(ctx context.Context, agent *member) {
	for {
		f := agent.Fence()
		select {
		case <-ctx.Done():
			return
		case <-f.Done():
		}
		w.srv.CloseConnections()
		tick := time.NewTicker(100 * time.Millisecond)
		for agent.Fence() == f {
			select {
			case <-ctx.Done():
				tick.Stop()
				return
			case <-tick.C:
			}
		}
		tick.Stop()
	}
}

// stop ends the service: listeners, connections, the etcd feed.
func (w *witnessService) stop() {
	if w == nil {
		return
	}
	w.stopc()
	if w.srv != nil {
		w.srv.Shutdown(context.Background())
	}
	w.wg.Wait()
}

// witnessHosts are the hosts the witness listens on: those of --listen
// and of the node's admitted addresses, or only the wildcard when
// --listen has one.
func witnessHosts(cfg *Config, agent *member) []string {
	addrs := append([]string(nil), cfg.Listen...)
	if agent != nil {
		addrs = append(addrs, agent.Admitted()...)
	}
	var hosts []string
	seen := map[string]bool{}
	for _, a := range addrs {
		h, _, err := net.SplitHostPort(a)
		if err != nil {
			continue
		}
		if ip := net.ParseIP(h); h == "" || (ip != nil && ip.IsUnspecified()) {
			return []string{h}
		}
		if !seen[h] {
			seen[h] = true
			hosts = append(hosts, h)
		}
	}
	return hosts
}

// listenFreebind listens on addr even while its IP is not on any of the
// host's interfaces (IP_FREEBIND): a public address the node was admitted
// with is on its interface only while the node holds it (--address-hook
// adds it when the node takes it), and the witness is reached through it
// then.
func listenFreebind(addr string) (net.Listener, error) {
	lc := net.ListenConfig{Control: func(network, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			if network == "tcp6" {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_IPV6, unix.IPV6_FREEBIND, 1)
			} else {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_IP, unix.IP_FREEBIND, 1)
			}
		})
		if err != nil {
			return err
		}
		return serr
	}}
	return lc.Listen(context.Background(), "tcp", addr)
}
