package mesh

import (
	"context"
	"errors"
	"iter"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
)

// ErrGone is returned for a node that is not live (no address).
var ErrGone = errors.New("mesh: the node is not live")

// Dial connects to a node's address with the cluster's transport
// credentials and dial options. It must not block (grpc.NewClient).
type Dial func(addr string) (*grpc.ClientConn, error)

// Mesh holds a node's connections to the other nodes. It is safe for
// concurrent use.
type Mesh struct {
	// Immutable after New.
	self  string
	nodes func() map[string]string
	dial  Dial
	log   *slog.Logger

	asked atomic.Uint64 // calls Broadcast made, one per node asked

	mu     sync.Mutex
	conns  map[string]*grpc.ClientConn // by address
	addrs  map[string]string           // the address each node was last reached at, by name
	closed bool
}

// New returns the mesh of node self. nodes lists the live nodes'
// node-to-node addresses by name (self included or not).
func New(self string, nodes func() map[string]string, dial Dial, log *slog.Logger) *Mesh {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Mesh{self: self, nodes: nodes, dial: dial, log: log, conns: map[string]*grpc.ClientConn{}, addrs: map[string]string{}}
}

// Asked is how many calls Broadcast made through the mesh, one per node
// asked: what the fan-outs of this node cost (issue 24 part 6; metrics).
func (m *Mesh) Asked() uint64 { return m.asked.Load() }

// Self is this node's name.
func (m *Mesh) Self() string { return m.self }

// Nodes lists the live nodes' addresses by name, this node included if
// the list includes it.
func (m *Mesh) Nodes() map[string]string { return m.nodes() }

// Conn returns the connection to node name at addr, dialing it the first
// time.
func (m *Mesh) Conn(name, addr string) (grpc.ClientConnInterface, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, grpc.ErrClientConnClosing
	}
	if name != "" {
		m.addrs[name] = addr
	}
	if c, ok := m.conns[addr]; ok {
		return c, nil
	}
	c, err := m.dial(addr) // lazy: grpc.NewClient does not connect
	if err != nil {
		return nil, err
	}
	m.conns[addr] = c
	return c, nil
}

// Node returns the connection to live node name; ErrGone when it is not
// live.
func (m *Mesh) Node(name string) (grpc.ClientConnInterface, error) {
	addr := m.nodes()[name]
	if addr == "" {
		return nil, ErrGone
	}
	return m.Conn(name, addr)
}

// Others lists the other live nodes' names.
func (m *Mesh) Others() []string {
	var out []string
	for name := range m.nodes() {
		if name != m.self {
			out = append(out, name)
		}
	}
	return out
}

// NodeGone closes the connection to node name, whose incarnation ended:
// the calls and streams on it end with it (a handed-over channel's client
// connection closes, an exchange is opened again) instead of waiting on a
// node that was stopped rather than killed. The next use dials anew.
func (m *Mesh) NodeGone(name string) {
	m.mu.Lock()
	addr, ok := m.addrs[name]
	c := m.conns[addr]
	delete(m.addrs, name)
	if ok {
		delete(m.conns, addr)
	}
	m.mu.Unlock()
	if c != nil {
		m.log.Info("closing the connection to a node gone", "node", name)
		c.Close()
	}
}

// Close closes every connection; the mesh dials no more.
func (m *Mesh) Close() {
	m.mu.Lock()
	conns := m.conns
	m.conns, m.closed = map[string]*grpc.ClientConn{}, true
	m.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// Answer is one node's answer to a Broadcast.
type Answer[T any] struct {
	Node string
	Resp T
	Err  error
}

// Broadcast calls call on every node of to (every other live node, when
// to is nil) at once, each call under ctx and bounded by timeout (not at
// all when 0), and yields the answers as they come. A caller that stops
// early cancels the calls not answered; none is left running past the
// loop but for its cancellation.
func Broadcast[T any](ctx context.Context, m *Mesh, to []string, timeout time.Duration,
	call func(ctx context.Context, cc grpc.ClientConnInterface) (T, error)) iter.Seq[Answer[T]] {
	return func(yield func(Answer[T]) bool) {
		if to == nil {
			to = m.Others()
		}
		if len(to) == 0 {
			return
		}
		m.asked.Add(uint64(len(to)))
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		answers := make(chan Answer[T], len(to)) // room for all: no sender waits
		for _, name := range to {
			go func() {
				a := Answer[T]{Node: name}
				var cc grpc.ClientConnInterface
				if cc, a.Err = m.Node(name); a.Err == nil {
					cctx, ccancel := ctx, context.CancelFunc(func() {})
					if timeout > 0 {
						cctx, ccancel = context.WithTimeout(ctx, timeout)
					}
					a.Resp, a.Err = call(cctx, cc)
					ccancel()
				}
				answers <- a
			}()
		}
		for range to {
			if !yield(<-answers) {
				return
			}
		}
	}
}
