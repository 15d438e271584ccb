package handoff

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smbcluster/smbcluster/node/server"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Service answers the other nodes: it is the home side of a handoff.
type Service struct {
	// Unsafe: a new RPC fails the build until it is served here.
	peerv1.UnsafeSessionServiceServer
	p *Peers
}

// Service returns the node's SessionService, for the node-to-node gRPC server.
func (p *Peers) Service() *Service { return &Service{p: p} }

// Find implements peerv1.SessionServiceServer.
func (sv *Service) Find(ctx context.Context, req *peerv1.FindSessionRequest) (*peerv1.FindSessionResponse, error) {
	s := sv.p.srv.Load()
	if s != nil && s.HoldsSession(req.GetSessionId()) {
		return &peerv1.FindSessionResponse{Held: true}, nil
	}
	return &peerv1.FindSessionResponse{MovedTo: sv.p.movedTo(req.GetSessionId())}, nil
}

// EndPrevious implements peerv1.SessionServiceServer.
func (sv *Service) EndPrevious(ctx context.Context, req *peerv1.EndPreviousRequest) (*peerv1.EndPreviousResponse, error) {
	s := sv.p.srv.Load()
	id := req.GetSessionId()
	if s != nil && s.HoldsSession(id) {
		return &peerv1.EndPreviousResponse{Ended: s.EndPreviousSession(id, req.GetUser(), req.GetNewSessionId())}, nil
	}
	return &peerv1.EndPreviousResponse{MovedTo: sv.p.movedTo(id)}, nil
}

// RemoteRead implements peerv1.SessionServiceServer: a READ of a
// connection handed over to this node, served from the caller's own
// descriptor (server.Adopted.ServeRemoteRead).
func (sv *Service) RemoteRead(ctx context.Context, req *peerv1.RemoteReadRequest) (*peerv1.RemoteReadResponse, error) {
	sv.p.mu.Lock()
	a := sv.p.adopted[req.GetRelayId()]
	sv.p.mu.Unlock()
	if a == nil {
		return &peerv1.RemoteReadResponse{Forward: true}, nil
	}
	rr := a.ServeRemoteRead(req.GetPdu(), req.GetFileId(), req.GetSealed())
	return remoteReadPB(rr), nil
}

// RemoteFile implements peerv1.SessionServiceServer (server.Adopted.RemoteFile).
func (sv *Service) RemoteFile(ctx context.Context, req *peerv1.RemoteFileRequest) (*peerv1.RemoteFileResponse, error) {
	sv.p.mu.Lock()
	a := sv.p.adopted[req.GetRelayId()]
	sv.p.mu.Unlock()
	if a == nil {
		return &peerv1.RemoteFileResponse{}, nil
	}
	n := a.RemoteFile(req.GetSessionId(), req.GetTreeId(), req.GetFileId())
	return remoteFilePB(n), nil
}

// SessionKeys implements peerv1.SessionServiceServer (server.Adopted.SessionKeys).
func (sv *Service) SessionKeys(ctx context.Context, req *peerv1.SessionKeysRequest) (*peerv1.SessionKeysResponse, error) {
	sv.p.mu.Lock()
	a := sv.p.adopted[req.GetRelayId()]
	sv.p.mu.Unlock()
	if a == nil {
		return &peerv1.SessionKeysResponse{}, nil
	}
	k := a.SessionKeys(req.GetSessionId())
	return sessionKeysPB(k), nil
}

// Relay implements peerv1.SessionServiceServer: the handed-over
// connection is served by the node's server until either side ends it.
func (sv *Service) Relay(stream peerv1.SessionService_RelayServer) error {
	s := sv.p.srv.Load()
	if s == nil {
		return status.Error(codes.Unavailable, "handoff: the node serves no sessions yet")
	}
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	st, err := handoffOf(first.GetHandoff())
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	c := newStreamConn(stream, st.LocalAddr, fmt.Sprintf("%s via %s", st.ClientAddr, st.Node))
	a, err := s.Adopt(st, c)
	if err != nil {
		return status.Error(codes.Unavailable, err.Error())
	}
	if id := first.GetHandoff().GetRelayId(); id != 0 {
		sv.p.mu.Lock()
		sv.p.adopted[id] = a
		sv.p.mu.Unlock()
		defer func() {
			sv.p.mu.Lock()
			delete(sv.p.adopted, id)
			sv.p.mu.Unlock()
		}()
	}
	sv.p.log.Debug("serving a connection handed over", "from", st.Node, "remote", st.ClientAddr)
	c.grant = func(grants []server.Grant) error {
		err := a.Grant(grants)
		if err != nil {
			sv.p.log.Info("dropping a handed-over connection", "from", st.Node, "remote", st.ClientAddr, "err", err)
		}
		return err
	}
	go c.receive()
	select {
	case <-c.closed:
	case <-stream.Context().Done():
		c.Close()
	}
	return nil
}

// streamConn is a handed-over connection as the home node's server sees
// it: a net.Conn whose bytes travel in a Relay stream. Reads honour
// deadlines (the server's handshake and idle timeouts, and Shutdown's
// wake-up use them).
type streamConn struct {
	stream        peerv1.SessionService_RelayServer
	local, remote addr

	in     chan []byte // filled by receive; closed at the client's end
	rest   []byte      // what the last Read left of a message
	closed chan struct{}
	once   sync.Once

	// grant takes the credits a session relay's arrival node grants
	// (server.Adopted.Grant); set before receive starts.
	grant func([]server.Grant) error

	wmu sync.Mutex // Send is not safe for concurrent use

	// The arrival node's flushes asked (SyncRemote), by number.
	smu      sync.Mutex
	syncs    map[uint64]chan error
	lastSync uint64
	ended    chan struct{} // closed when receive ends
	flushed  atomic.Bool   // the arrival node flushed all it wrote, ending

	dmu      sync.Mutex
	deadline time.Time
	moved    chan struct{} // closed when the deadline changes
}

func newStreamConn(stream peerv1.SessionService_RelayServer, local, remote string) *streamConn {
	return &streamConn{
		stream: stream, local: addr(local), remote: addr(remote),
		in: make(chan []byte, 4), closed: make(chan struct{}), moved: make(chan struct{}),
		syncs: map[uint64]chan error{}, ended: make(chan struct{}),
	}
}

// receive moves the client's bytes into in until the stream ends, and
// hands the arrival node's answers to SyncRemote over.
func (c *streamConn) receive() {
	defer close(c.in)
	defer close(c.ended)
	for {
		m, err := c.stream.Recv()
		if err != nil {
			return
		}
		if id := m.GetSynced(); id != 0 {
			c.synced(id, m.GetSyncError())
			continue
		}
		if m.GetFlushed() {
			c.flushed.Store(true)
			continue
		}
		if len(m.GetGrants()) > 0 && !c.granted(m.GetGrants()) {
			c.Close()
			return
		}
		if len(m.GetData()) == 0 {
			continue
		}
		select {
		case c.in <- m.GetData():
		case <-c.closed:
			return
		}
	}
}

// granted records the credits the arrival node granted the requests of
// the bytes that come with them, before the server can read those; false
// when it refused them (the connection ends).
func (c *streamConn) granted(gs []*peerv1.RelayGrant) bool {
	grants := make([]server.Grant, len(gs))
	for i, g := range gs {
		if g.GetCredits() > 0xFFFF {
			return false
		}
		grants[i] = server.Grant{MessageID: g.GetMessageId(), Credits: uint16(g.GetCredits())}
	}
	return c.grant != nil && c.grant(grants) == nil
}

func (c *streamConn) Read(p []byte) (int, error) {
	for len(c.rest) == 0 {
		c.dmu.Lock()
		deadline, moved := c.deadline, c.moved
		c.dmu.Unlock()
		var timeout <-chan time.Time
		var t *time.Timer
		if !deadline.IsZero() {
			d := time.Until(deadline)
			if d <= 0 {
				return 0, os.ErrDeadlineExceeded
			}
			t = time.NewTimer(d)
			timeout = t.C
		}
		var err error
		select {
		case b, ok := <-c.in:
			if !ok {
				err = io.EOF
			}
			c.rest = b
		case <-c.closed:
			err = net.ErrClosed
		case <-timeout:
			err = os.ErrDeadlineExceeded
		case <-moved:
		}
		if t != nil {
			t.Stop()
		}
		if err != nil {
			return 0, err
		}
	}
	n := copy(p, c.rest)
	c.rest = c.rest[n:]
	return n, nil
}

// maxChunk bounds one message of the stream (gRPC refuses messages over
// 4 MiB by default; a READ response may be 8 MiB).
const maxChunk = 1 << 20

func (c *streamConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	select {
	case <-c.closed:
		return 0, net.ErrClosed
	default:
	}
	n := 0
	for len(p) > 0 {
		k := min(len(p), maxChunk)
		if err := c.stream.Send(&peerv1.RelayMessage{Data: p[:k], More: k < len(p)}); err != nil {
			return n, err
		}
		n += k
		p = p[k:]
	}
	return n, nil
}

// WriteBuffers writes bufs as one write (sockio.BuffersWriter): the
// arrival node sends nothing of its own inside it.
func (c *streamConn) WriteBuffers(bufs [][]byte) error {
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	one := make([]byte, 0, n)
	for _, b := range bufs {
		one = append(one, b...)
	}
	_, err := c.Write(one)
	return err
}

// SyncRemote implements server.RemoteSyncer: the arrival node flushes its
// descriptor of open fid.
func (c *streamConn) SyncRemote(ctx context.Context, fid uint64) error {
	done := make(chan error, 1)
	c.smu.Lock()
	c.lastSync++
	id := c.lastSync
	c.syncs[id] = done
	c.smu.Unlock()
	defer func() {
		c.smu.Lock()
		delete(c.syncs, id)
		c.smu.Unlock()
	}()
	c.wmu.Lock() // never inside a write cut in chunks
	err := c.stream.Send(&peerv1.RelayMessage{Sync: id, SyncFileId: fid})
	c.wmu.Unlock()
	if err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-c.ended:
		return errors.New("handoff: the arrival node's relay ended")
	case <-c.closed:
		return net.ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Flushed implements server.RemoteSyncer.
func (c *streamConn) Flushed() bool { return c.flushed.Load() }

// synced hands the arrival node's answer to sync ask id to its waiter.
func (c *streamConn) synced(id uint64, msg string) {
	c.smu.Lock()
	done := c.syncs[id]
	c.smu.Unlock()
	if done == nil {
		return
	}
	var err error
	if msg != "" {
		err = errors.New("handoff: the arrival node's flush: " + msg)
	}
	done <- err
}

func (c *streamConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func (c *streamConn) LocalAddr() net.Addr  { return c.local }
func (c *streamConn) RemoteAddr() net.Addr { return c.remote }

func (c *streamConn) SetDeadline(t time.Time) error { return c.SetReadDeadline(t) }

func (c *streamConn) SetReadDeadline(t time.Time) error {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	c.deadline = t
	close(c.moved)
	c.moved = make(chan struct{})
	return nil
}

// SetWriteDeadline does nothing: a write waits for the stream's flow
// control, which ends with the stream.
func (c *streamConn) SetWriteDeadline(time.Time) error { return nil }

// addr is a connection's address as the server logs and lists it.
type addr string

func (a addr) Network() string { return "tcp" }
func (a addr) String() string  { return string(a) }

var _ net.Conn = (*streamConn)(nil)

// RemoteWrite implements peerv1.SessionServiceServer: a WRITE of a
// connection handed over to this node whose payload stays with the caller
// (server.Adopted.ServeRemoteWrite).
func (sv *Service) RemoteWrite(stream peerv1.SessionService_RemoteWriteServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	sv.p.mu.Lock()
	a := sv.p.adopted[first.GetRelayId()]
	sv.p.mu.Unlock()
	if a == nil {
		return stream.Send(&peerv1.RemoteWriteMessage{Forward: true})
	}
	payload := server.RemotePayload{
		WriteAt: func(id uint64, off int64, n int, sync bool) (int, error) {
			if err := stream.Send(&peerv1.RemoteWriteMessage{Write: true, Inode: id, Offset: off, Length: uint32(n), Sync: sync}); err != nil {
				return 0, err
			}
			m, err := stream.Recv()
			if err != nil {
				return 0, err
			}
			if m.GetError() != "" {
				return int(m.GetWritten()), errors.New("handoff: the arrival node's write: " + m.GetError())
			}
			return int(m.GetWritten()), nil
		},
		ReadAll: func(p []byte) error {
			if err := stream.Send(&peerv1.RemoteWriteMessage{SendData: true}); err != nil {
				return err
			}
			for len(p) > 0 {
				m, err := stream.Recv()
				if err != nil {
					return err
				}
				if len(m.GetData()) == 0 || len(m.GetData()) > len(p) {
					return errors.New("handoff: payload of the wrong length")
				}
				p = p[copy(p, m.GetData()):]
			}
			return nil
		},
	}
	answered := a.ServeRemoteWrite(first.GetHead(), int(first.GetDataLength()), first.GetFileId(), first.GetSealed(), first.GetVerified(), payload)
	return stream.Send(&peerv1.RemoteWriteMessage{Answered: answered, Forward: !answered})
}
