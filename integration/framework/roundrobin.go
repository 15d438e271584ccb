package framework

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// RoundRobin is a TCP forwarder that places each connection it accepts on
// the next backend in turn, as round-robin DNS or an L4 load balancer
// would: a client that opens several connections to its one address talks
// to several nodes. Bytes pass unchanged in both directions (io.Copy
// between *net.TCPConn, which the kernel splices); an end of stream is
// passed on as a half-close, an error closes both connections, and the
// pair is closed once both directions have ended.
type RoundRobin struct {
	// Immutable after NewRoundRobin.
	backends []string
	l        *net.TCPListener
	ctx      context.Context // cancelled by Close: ends dials in progress
	cancel   context.CancelFunc

	wg sync.WaitGroup // the accept loop and every forwarding goroutine

	mu     sync.Mutex
	next   int // index into backends of the next connection
	placed []int
	conns  map[*net.TCPConn]struct{} // both sides of every live pair
	closed bool
}

// dialTimeout bounds the connection to a backend.
const dialTimeout = 10 * time.Second

// NewRoundRobin listens on addr (host:port, port 0 for any) and forwards
// each accepted connection to the next of backends (host:port each).
func NewRoundRobin(addr string, backends []string) (*RoundRobin, error) {
	if len(backends) == 0 {
		return nil, errors.New("roundrobin: no backends")
	}
	la, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, err
	}
	l, err := net.ListenTCP("tcp", la)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &RoundRobin{
		backends: append([]string(nil), backends...),
		l:        l,
		ctx:      ctx,
		cancel:   cancel,
		placed:   make([]int, len(backends)),
		conns:    map[*net.TCPConn]struct{}{},
	}
	f.wg.Add(1)
	go f.serve()
	return f, nil
}

// StartRoundRobin starts a RoundRobin on a free 127.0.0.1 port in front of
// backends and closes it when the test ends.
func StartRoundRobin(t testing.TB, backends ...string) *RoundRobin {
	t.Helper()
	f, err := NewRoundRobin("127.0.0.1:0", backends)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// Addr is the address clients connect to.
func (f *RoundRobin) Addr() *net.TCPAddr { return f.l.Addr().(*net.TCPAddr) }

// Placed returns how many connections went to each backend so far.
func (f *RoundRobin) Placed() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.placed...)
}

// Rewind makes the next connection go to the first backend again, so that
// a client's connections land on the same backends whatever came before.
func (f *RoundRobin) Rewind() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next = 0
}

// Close stops accepting, closes every forwarded connection on both sides
// and returns once every goroutine of the forwarder has ended.
func (f *RoundRobin) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	err := f.l.Close()
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.cancel()
	f.wg.Wait()
	return err
}

// serve accepts until the listener is closed.
func (f *RoundRobin) serve() {
	defer f.wg.Done()
	for {
		c, err := f.l.AcceptTCP()
		if err != nil {
			return // closed; Go retries the transient accept errors itself
		}
		f.wg.Add(1)
		go f.forward(c, f.pick())
	}
}

// pick returns the backend of the next connection.
func (f *RoundRobin) pick() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := f.next
	f.next = (f.next + 1) % len(f.backends)
	f.placed[i]++
	return f.backends[i]
}

// forward connects client to backend and copies both ways until both
// directions have ended. A backend that cannot be reached closes the
// client's connection, as a load balancer's reset would.
func (f *RoundRobin) forward(client *net.TCPConn, backend string) {
	defer f.wg.Done()
	defer client.Close()
	d := net.Dialer{Timeout: dialTimeout}
	c, err := d.DialContext(f.ctx, "tcp", backend)
	if err != nil {
		return
	}
	server := c.(*net.TCPConn)
	defer server.Close()
	if !f.track(client, server) {
		return
	}
	defer f.untrack(client, server)
	done := make(chan error, 2)
	go func() { done <- pipe(server, client) }()
	go func() { done <- pipe(client, server) }()
	if err := <-done; err != nil {
		// A reset or a Close: the other direction has nothing to wait for.
		client.Close()
		server.Close()
	}
	<-done
}

// pipe copies src to dst until src ends, then half-closes dst so that its
// reader sees the end too. io.Copy between two *net.TCPConn splices.
func pipe(dst, src *net.TCPConn) error {
	if _, err := io.Copy(dst, src); err != nil {
		return err
	}
	return dst.CloseWrite()
}

// track records a live pair so that Close can end it; false if the
// forwarder is already closed.
func (f *RoundRobin) track(a, b *net.TCPConn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.conns[a], f.conns[b] = struct{}{}, struct{}{}
	return true
}

func (f *RoundRobin) untrack(a, b *net.TCPConn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.conns, a)
	delete(f.conns, b)
}
