package nodemain

import (
	"context"
	"log/slog"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/smbcluster/smbcluster/node/server"
)

// hookTimeout bounds one run of --address-hook.
const hookTimeout = 10 * time.Second

// bindRetry is how soon a public address the node holds but cannot
// listen on yet (the process that held it has not closed its listener:
// a node stopped past its lease, until it resumes and fences itself; or
// the hook has not added it) is tried again; the pause doubles up to
// bindRetryMax.
const (
	bindRetry    = 100 * time.Millisecond
	bindRetryMax = time.Second
)

// publicAddrs serves the public addresses the cluster agent assigns the
// node (cluster.PublicAddresses). For each: the --address-hook adds the
// address's IP to --address-interface (on a real network the hook also
// announces it, e.g. with arping), then the server listens on it, until
// the agent gives the address up: the listener closes, the connections
// made to it end, and the hook removes the IP. On loopback no hook is
// needed: any 127.0.0.0/8 address can be bound.
type publicAddrs struct {
	// Immutable after newPublicAddrs, but static (set before the agent
	// runs).
	srv    *server.Server
	hook   string
	iface  string
	valid  func() bool // the agent's fencing: connections are refused while false
	log    *slog.Logger
	static []net.Addr // the --listen listeners

	mu     sync.Mutex
	held   map[string]*pubAddr // by address
	ips    map[string]int      // addresses held per IP, for the hook
	fenced uint64              // the last epoch Fenced ended
}

// pubAddr is one public address served.
type pubAddr struct {
	addr  string
	epoch uint64
	stop  chan struct{} // closed to stop serving
	done  chan struct{} // closed once nothing listens on it and its connections ended
}

func newPublicAddrs(srv *server.Server, hook, iface string, log *slog.Logger) *publicAddrs {
	return &publicAddrs{srv: srv, hook: hook, iface: iface, log: log.With("component", "addresses"),
		held: map[string]*pubAddr{}, ips: map[string]int{}}
}

// Serve implements cluster.PublicAddresses. An address of an epoch
// already fenced is not served (the agent's loop may ask just after the
// Fencing ended).
func (p *publicAddrs) Serve(addr string, epoch uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.held[addr]; ok || epoch <= p.fenced {
		return
	}
	a := &pubAddr{addr: addr, epoch: epoch, stop: make(chan struct{}), done: make(chan struct{})}
	p.held[addr] = a
	go p.run(a)
}

// Stop implements cluster.PublicAddresses.
func (p *publicAddrs) Stop(addr string) {
	p.mu.Lock()
	a, ok := p.held[addr]
	delete(p.held, addr)
	p.mu.Unlock()
	if ok {
		close(a.stop)
		<-a.done
	}
}

// Fenced implements cluster.PublicAddresses.
func (p *publicAddrs) Fenced(epoch uint64) {
	p.mu.Lock()
	p.fenced = max(p.fenced, epoch)
	var stopped []*pubAddr
	for addr, a := range p.held {
		if a.epoch <= epoch {
			delete(p.held, addr)
			close(a.stop)
			stopped = append(stopped, a)
		}
	}
	p.mu.Unlock()
	for _, a := range stopped {
		<-a.done
	}
}

// run serves a until it is stopped.
func (p *publicAddrs) run(a *pubAddr) {
	defer close(a.done)
	host, _, err := net.SplitHostPort(a.addr)
	if err != nil {
		p.log.Error("public address is not host:port", "address", a.addr, "err", err)
		<-a.stop
		return
	}
	p.hookIP("add", host)
	defer p.hookIP("del", host)
	if p.covered(a.addr) {
		p.log.Info("serving a public address through a --listen wildcard", "address", a.addr)
		<-a.stop
		return
	}
	l := p.bind(a)
	if l == nil {
		return
	}
	p.log.Info("listening on a public address", "address", a.addr, "epoch", a.epoch)
	served := make(chan struct{})
	go func() {
		defer close(served)
		p.srv.Serve(&gateListener{Listener: l, srv: p.srv, valid: p.valid})
	}()
	<-a.stop
	l.Close()
	<-served // Serve registered the last connection it accepted
	n := p.srv.EndConnectionsTo(l.Addr().String())
	p.log.Info("stopped listening on a public address", "address", a.addr, "connections_ended", n)
}

// bind listens on a's address, trying again every bindRetry until it
// can or a is stopped (then it returns nil).
func (p *publicAddrs) bind(a *pubAddr) net.Listener {
	logged := false
	pause := bindRetry
	for {
		l, err := net.Listen("tcp", a.addr)
		if err == nil {
			return l
		}
		if !logged {
			p.log.Warn("cannot listen on a public address yet; retrying", "address", a.addr, "err", err)
			logged = true
		}
		t := time.NewTimer(pause)
		select {
		case <-a.stop:
			t.Stop()
			return nil
		case <-t.C:
		}
		pause = min(2*pause, bindRetryMax)
	}
}

// covered reports whether a --listen wildcard on addr's port accepts its
// connections already (a listener of its own could not bind).
func (p *publicAddrs) covered(addr string) bool {
	_, port, _ := net.SplitHostPort(addr)
	return slices.ContainsFunc(p.static, func(s net.Addr) bool {
		t, ok := s.(*net.TCPAddr)
		return ok && t.IP.IsUnspecified() && port == strconv.Itoa(t.Port)
	})
}

// hookIP runs `--address-hook add|del IP IFACE` when the first address
// of an IP is served or the last one stops.
func (p *publicAddrs) hookIP(op, ip string) {
	p.mu.Lock()
	n := p.ips[ip]
	if op == "add" {
		p.ips[ip] = n + 1
	} else if n <= 1 {
		delete(p.ips, ip)
	} else {
		p.ips[ip] = n - 1
	}
	run := p.hook != "" && (op == "add" && n == 0 || op == "del" && n == 1)
	p.mu.Unlock()
	if !run {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), hookTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, p.hook, op, ip, p.iface).CombinedOutput()
	if err != nil {
		p.log.Warn("--address-hook failed", "op", op, "ip", ip, "interface", p.iface, "err", err,
			"output", strings.TrimSpace(string(out)))
		return
	}
	p.log.Info("--address-hook", "op", op, "ip", ip, "interface", p.iface)
}

// sameEndpoint reports whether host:port endpoints a and b are the same
// (IPs compared as IPs).
func sameEndpoint(a, b string) bool {
	ha, pa, err1 := net.SplitHostPort(a)
	hb, pb, err2 := net.SplitHostPort(b)
	if err1 != nil || err2 != nil || pa != pb {
		return false
	}
	ia, ib := net.ParseIP(ha), net.ParseIP(hb)
	if ia != nil && ib != nil {
		return ia.Equal(ib)
	}
	return strings.EqualFold(ha, hb)
}
