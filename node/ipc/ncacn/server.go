package ncacn

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/smbcluster/smbcluster/node/ipc/dcerpc"
)

// Interfaces returns the interfaces served on a connection accepted at
// local (the address the client reached).
type Interfaces func(local net.Addr) []*dcerpc.Interface

// Server serves DCE/RPC associations over TCP.
type Server struct {
	// Security authenticates clients; nil: authentication level none only.
	// Immutable once Serve is called.
	Security func() *dcerpc.Security
	Logger   *slog.Logger
	// MaxConnections closes connections beyond it (0: DefaultMaxConnections).
	MaxConnections int
	// BindTimeout closes a connection whose first PDU has not arrived
	// within it (0: DefaultBindTimeout).
	BindTimeout time.Duration
	// Admit, when set, is asked for every connection accepted; false
	// closes it (a fenced node serves nothing).
	Admit func() bool

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[net.Conn]context.CancelFunc
	wg        sync.WaitGroup
	closed    bool
}

// Defaults of Server's limits.
const (
	DefaultMaxConnections = 1024
	DefaultBindTimeout    = 30 * time.Second
)

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("ncacn: server closed")

func (s *Server) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

// Serve accepts connections on l and serves ifaces on each until l fails
// or Shutdown is called.
func (s *Server) Serve(l net.Listener, ifaces Interfaces) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrServerClosed
	}
	if s.listeners == nil {
		s.listeners = map[net.Listener]struct{}{}
		s.conns = map[net.Conn]context.CancelFunc{}
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
	}()
	for {
		nc, err := l.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		if s.Admit != nil && !s.Admit() {
			nc.Close()
			continue
		}
		ctx, cancel := context.WithCancel(dcerpc.WithPeer(context.Background(), nc.RemoteAddr().String()))
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			cancel()
			nc.Close()
			return ErrServerClosed
		}
		limit := s.MaxConnections
		if limit == 0 {
			limit = DefaultMaxConnections
		}
		if limit > 0 && len(s.conns) >= limit {
			s.mu.Unlock()
			cancel()
			nc.Close()
			s.logger().Warn("DCE/RPC connection refused: too many", "remote", nc.RemoteAddr().String())
			continue
		}
		s.conns[nc] = cancel
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.conns, nc)
				s.mu.Unlock()
				cancel()
				nc.Close()
			}()
			var sec *dcerpc.Security
			if s.Security != nil {
				sec = s.Security()
			}
			c := &conn{nc: nc, log: s.logger(), rpc: dcerpc.NewConn(localPort(nc.LocalAddr()), ifaces(nc.LocalAddr())...)}
			if sec != nil {
				c.rpc.SetSecurity(sec)
			}
			c.rpc.SetConcurrent() // write sends whole PDUs, from any goroutine
			bt := s.BindTimeout
			if bt == 0 {
				bt = DefaultBindTimeout
			}
			c.serve(ctx, cancel, bt)
		}()
	}
}

// CloseConnections ends every connection, leaving the listeners.
func (s *Server) CloseConnections() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for nc, cancel := range s.conns {
		cancel()
		nc.Close()
	}
}

// Shutdown closes the listeners and every connection, and waits for their
// goroutines or ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	for l := range s.listeners {
		l.Close()
	}
	for nc, cancel := range s.conns {
		cancel()
		nc.Close()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// localPort is the secondary address of a bind_ack over TCP: the port
// number in decimal ([C706] 12.6.4.4, as Windows sends it).
func localPort(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return itoa(ta.Port)
	}
	return ""
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// conn is one TCP connection: one association.
type conn struct {
	// Immutable.
	nc  net.Conn
	log *slog.Logger

	// Owned by the call goroutine.
	rpc *dcerpc.Conn
}

// serve runs the reader in this goroutine and the calls in another.
func (c *conn) serve(ctx context.Context, cancel context.CancelFunc, bindTimeout time.Duration) {
	pdus := make(chan []byte)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer c.nc.Close() // the reader's read ends
		defer cancel()
		defer func() {
			if r := recover(); r != nil {
				c.log.Error("panic serving DCE/RPC", "remote", c.nc.RemoteAddr().String(), "panic", r)
			}
		}()
		for pdu := range pdus {
			if err := c.rpc.HandleContext(ctx, pdu, c.write); err != nil {
				c.log.Debug("DCE/RPC protocol error", "remote", c.nc.RemoteAddr().String(), "err", err)
				return
			}
		}
	}()
	defer func() { close(pdus); cancel(); c.nc.Close(); <-done }()
	c.nc.SetReadDeadline(time.Now().Add(bindTimeout))
	for first := true; ; first = false {
		pdu, err := readPDU(c.nc)
		if err != nil {
			return
		}
		if first {
			c.nc.SetReadDeadline(time.Time{}) // a client may then wait long (AsyncNotify)
		}
		select {
		case pdus <- pdu:
		case <-ctx.Done():
			return
		}
	}
}

// readPDU reads one PDU: its header, then the rest of frag_length.
func readPDU(r io.Reader) ([]byte, error) {
	var h [dcerpc.HeaderSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := dcerpc.FragLength(h[:])
	if n < dcerpc.HeaderSize || h[0] != 5 {
		return nil, dcerpc.ErrFormat
	}
	pdu := make([]byte, n)
	copy(pdu, h[:])
	if _, err := io.ReadFull(r, pdu[dcerpc.HeaderSize:]); err != nil {
		return nil, err
	}
	return pdu, nil
}

func (c *conn) write(pdu []byte) {
	if _, err := c.nc.Write(pdu); err != nil {
		c.nc.Close()
	}
}
