package mesh

import (
	"context"
	"net"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
)

// Memory is a cluster's node-to-node network in one process, for unit
// tests: each node serves on an in-memory listener (Listen) and each
// node's Mesh dials the others through it (New(self, mem.Nodes, mem.Dial,
// log)). Stop takes a node off the network as its death would. It is
// safe for concurrent use.
type Memory struct {
	// DialOptions are added to every Dial's (a test's interceptors that
	// count the calls the nodes make); set before the first Dial.
	DialOptions []grpc.DialOption

	mu        sync.Mutex
	listeners map[string]*bufconn.Listener // by address
	names     map[string]string            // addresses by node name
}

// NewMemory returns an empty network.
func NewMemory() *Memory {
	return &Memory{listeners: map[string]*bufconn.Listener{}, names: map[string]string{}}
}

// Listen returns node name's listener, for its gRPC server; its Addr is
// the node's address on the network.
func (n *Memory) Listen(name string) net.Listener {
	addr := "memory-" + name
	l := bufconn.Listen(1 << 20)
	n.mu.Lock()
	n.listeners[addr], n.names[name] = l, addr
	n.mu.Unlock()
	return listener{l, memAddr(addr)}
}

// listener is a node's listener, which knows its address.
type listener struct {
	*bufconn.Listener
	addr memAddr
}

func (l listener) Addr() net.Addr { return l.addr }

// memAddr is an address on a Memory.
type memAddr string

func (memAddr) Network() string  { return "memory" }
func (a memAddr) String() string { return string(a) }

// Stop takes node name off the network: it is no longer live, and new
// connections to it fail.
func (n *Memory) Stop(name string) {
	n.mu.Lock()
	l := n.listeners[n.names[name]]
	delete(n.listeners, n.names[name])
	delete(n.names, name)
	n.mu.Unlock()
	if l != nil {
		l.Close()
	}
}

// Nodes lists the live nodes' addresses by name.
func (n *Memory) Nodes() map[string]string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make(map[string]string, len(n.names))
	for name, addr := range n.names {
		out[name] = addr
	}
	return out
}

// Dial is a Dial over the network.
func (n *Memory) Dial(addr string) (*grpc.ClientConn, error) {
	opts := append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			n.mu.Lock()
			l := n.listeners[addr]
			n.mu.Unlock()
			if l == nil {
				return nil, &net.OpError{Op: "dial", Net: "memory", Err: ErrGone}
			}
			return l.DialContext(ctx)
		})}, n.DialOptions...)
	return grpc.NewClient("passthrough:///"+addr, opts...)
}
