package handoff

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smbcluster/smbcluster/node/mesh"
	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2/signing"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
	"google.golang.org/grpc"
)

// Peers finds sessions on the other nodes and hands connections to them.
// It is safe for concurrent use.
type Peers struct {
	mesh *mesh.Mesh // the connections to the other nodes
	log  *slog.Logger
	srv  atomic.Pointer[server.Server]

	mu         sync.Mutex
	adopted    map[uint64]*server.Adopted // handed-over connections served here, by relay id
	moved      map[uint64]string          // sessions handed on with a connection, to which node (noteMoved)
	movedOrder []uint64                   // the same, oldest first
	quiet      map[[16]byte]time.Time     // clients no other node holds an older connection of (breaks.go)
}

// New returns the Peers of the node whose mesh is m.
func New(m *mesh.Mesh, log *slog.Logger) *Peers {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Peers{mesh: m, log: log, adopted: map[uint64]*server.Adopted{}, moved: map[uint64]string{}, quiet: map[[16]byte]time.Time{}}
}

// Attach sets the server whose sessions the Service offers the other
// nodes. Until then the node holds no session for them.
func (p *Peers) Attach(s *server.Server) { p.srv.Store(s) }

// ask asks the session services of the nodes to (every other live node,
// when nil) at once (mesh.Broadcast).
func ask[T any](ctx context.Context, p *Peers, to []string, call func(context.Context, peerv1.SessionServiceClient) (T, error)) iter.Seq[mesh.Answer[T]] {
	return mesh.Broadcast(ctx, p.mesh, to, 0, func(ctx context.Context, cc grpc.ClientConnInterface) (T, error) {
		return call(ctx, peerv1.NewSessionServiceClient(cc))
	})
}

// maxHops bounds how many times a session is followed from the node that
// made it to where it moved (FindSessionResponse.moved_to).
const maxHops = 4

// found is a node's answer to Find.
type found struct {
	client  peerv1.SessionServiceClient
	held    bool
	movedTo string
}

// find returns the node holding session id and a client of its session
// service. The node that made the session is known from the id
// (tagged), and it alone is asked, then the node it handed the session
// on to, if it did; every other live node is asked only when no live
// node carries the id's tag.
func (p *Peers) find(ctx context.Context, id uint64) (string, peerv1.SessionServiceClient, error) {
	to := p.tagged(id)
	for hop := 0; ; hop++ {
		var errs []error
		next := ""
		for a := range ask(ctx, p, to, func(ctx context.Context, c peerv1.SessionServiceClient) (found, error) {
			resp, err := c.Find(ctx, &peerv1.FindSessionRequest{SessionId: id})
			return found{client: c, held: resp.GetHeld(), movedTo: resp.GetMovedTo()}, err
		}) {
			switch {
			case a.Err == nil && a.Resp.held:
				return a.Node, a.Resp.client, nil
			case a.Err == nil:
				if a.Resp.movedTo != "" && a.Resp.movedTo != p.mesh.Self() {
					next = a.Resp.movedTo
				}
			case !errors.Is(a.Err, mesh.ErrGone):
				errs = append(errs, fmt.Errorf("%s: %w", a.Node, a.Err))
			}
		}
		if len(errs) > 0 {
			return "", nil, errors.Join(errs...)
		}
		if to == nil || next == "" || hop == maxHops {
			return "", nil, server.ErrNoSession
		}
		to = []string{next}
	}
}

// tagged lists the nodes to ask for session id: the other live nodes
// whose tag the id carries (tag.go), or, when the id carries this node's
// tag, the node this node handed the session to. It is nil — every node
// is asked — when the id carries no tag or one of no live node (the
// node that made it is gone, and the session is only somewhere else if
// it moved before).
func (p *Peers) tagged(id uint64) []string {
	tag := tagOf(id)
	if tag == 0 {
		return nil
	}
	to := []string{}
	for _, name := range p.mesh.Others() {
		if Tag(name) == tag {
			to = append(to, name)
		}
	}
	if Tag(p.mesh.Self()) == tag {
		if n := p.movedTo(id); n != "" && !slices.Contains(to, n) {
			to = append(to, n)
		}
		return to // made here: not held here, and not handed on if not noted
	}
	if len(to) == 0 {
		return nil
	}
	return to
}

// maxMoved bounds the sessions a node remembers having handed on.
const maxMoved = 4096

// noteMoved records that session id moved to node with a connection
// handed over to it: the node that made the session sends askers on.
func (p *Peers) noteMoved(id uint64, node string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.moved[id]; !ok {
		if len(p.movedOrder) >= maxMoved {
			delete(p.moved, p.movedOrder[0])
			p.movedOrder = p.movedOrder[1:]
		}
		p.movedOrder = append(p.movedOrder, id)
	}
	p.moved[id] = node
}

// movedTo is the node session id was handed on to, if this node handed
// it on.
func (p *Peers) movedTo(id uint64) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.moved[id]
}

// Handoff implements server.SessionPeers: the connection is carried over
// a Relay stream to the session's node (arrival.go).
func (p *Peers) Handoff(ctx context.Context, id uint64, st *server.HandoffState) (server.Carrier, error) {
	rl, err := p.relay(ctx, id, st)
	if err != nil {
		return nil, err
	}
	return carrier{rl}, nil
}

// RelaySession implements server.SessionPeers: the session's frames go to
// its node over a Relay stream, with the credits the server grants.
func (p *Peers) RelaySession(ctx context.Context, id uint64, st *server.HandoffState) (server.SessionRelay, error) {
	rl, err := p.relay(ctx, id, st)
	if err != nil {
		return nil, err
	}
	return &sessionRelay{clientRelay: rl, sid: id, keys: newKeyring()}, nil
}

// relay opens a Relay stream to the node holding session id and hands it
// the connection whose state is st.
func (p *Peers) relay(ctx context.Context, id uint64, st *server.HandoffState) (*clientRelay, error) {
	name, c, err := p.find(ctx, id)
	if err != nil {
		return nil, err
	}
	// The relay outlives the binding request: it lasts as long as the
	// client's connection.
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stream, err := c.Relay(rctx)
	if err != nil {
		cancel()
		return nil, err
	}
	if st.Node == "" {
		st.Node = p.mesh.Self()
	}
	h := handoffPB(st)
	h.RelayId = rand.Uint64()
	if err := stream.Send(&peerv1.RelayMessage{Handoff: h}); err != nil {
		cancel()
		return nil, err
	}
	for _, ms := range st.Sessions {
		p.noteMoved(ms.ID, name)
	}
	p.log.Debug("connection handed over", "session", fmt.Sprintf("%#x", id), "to", name, "remote", st.ClientAddr)
	return &clientRelay{stream: stream, cancel: cancel, cli: c, id: h.RelayId, log: p.log}, nil
}

// EndPrevious implements server.SessionPeers: the node that made the
// session is asked, then the node it handed the session on to, if it did
// (find); every other node only when no live node carries the id's tag.
func (p *Peers) EndPrevious(ctx context.Context, id uint64, user string, newID uint64) {
	req := &peerv1.EndPreviousRequest{SessionId: id, User: user, NewSessionId: newID}
	to := p.tagged(id)
	for hop := 0; ; hop++ {
		next := ""
		for a := range ask(ctx, p, to, func(ctx context.Context, c peerv1.SessionServiceClient) (*peerv1.EndPreviousResponse, error) {
			return c.EndPrevious(ctx, req)
		}) {
			switch {
			case a.Err != nil && !errors.Is(a.Err, mesh.ErrGone):
				p.log.Info("ending a previous session", "node", a.Node, "session", fmt.Sprintf("%#x", id), "err", a.Err)
			case a.Err == nil && a.Resp.GetMovedTo() != "" && a.Resp.GetMovedTo() != p.mesh.Self():
				next = a.Resp.GetMovedTo()
			}
		}
		if to == nil || next == "" || hop == maxHops {
			return
		}
		to = []string{next}
	}
}

// clientRelay is the arrival node's end of a Relay stream.
type clientRelay struct {
	stream peerv1.SessionService_RelayClient
	cancel context.CancelFunc
	cli    peerv1.SessionServiceClient
	id     uint64
	log    *slog.Logger
	sync   func(fid uint64) error // set before Recv

	smu sync.Mutex // Send is not safe for concurrent use: the client's bytes and the answers to syncs
}

// Send sends bytes of the client to the home node.
func (r *clientRelay) Send(b []byte) error {
	r.smu.Lock()
	defer r.smu.Unlock()
	return r.stream.Send(&peerv1.RelayMessage{Data: b})
}

// Recv returns the next bytes for the client; the home node's asks to
// flush this node's descriptor of an open (a FLUSH) are served on the way.
func (r *clientRelay) Recv() ([]byte, bool, error) {
	for {
		m, err := r.stream.Recv()
		if err != nil {
			return nil, false, err
		}
		if id := m.GetSync(); id != 0 {
			go r.serveSync(id, m.GetSyncFileId())
			continue
		}
		return m.GetData(), m.GetMore(), nil
	}
}

// ServeSyncs sets how this node flushes its descriptor of open fid when
// the home node asks (a FLUSH of the open, arrivalfile.go); it is called
// before Recv.
func (r *clientRelay) ServeSyncs(sync func(fid uint64) error) { r.sync = sync }

// serveSync flushes this node's descriptor of open fid and tells the home
// node how it went.
func (r *clientRelay) serveSync(id, fid uint64) {
	err := errors.New("handoff: no descriptors here")
	if r.sync != nil {
		err = r.sync(fid)
	}
	m := &peerv1.RelayMessage{Synced: id}
	if err != nil {
		m.SyncError = err.Error()
	}
	r.smu.Lock()
	defer r.smu.Unlock()
	if err := r.stream.Send(m); err != nil {
		r.log.Debug("answering a flush of the home node", "err", err)
	}
}

// RemoteFile asks the home node to name the file of open fid of session
// sid, tree tid (arrivalfile.go).
func (r *clientRelay) RemoteFile(ctx context.Context, sid uint64, tid uint32, fid uint64) (server.RemoteFileName, error) {
	resp, err := r.cli.RemoteFile(ctx, &peerv1.RemoteFileRequest{RelayId: r.id, SessionId: sid, TreeId: tid, FileId: fid})
	if err != nil {
		return server.RemoteFileName{}, err
	}
	return remoteFileOf(resp), nil
}

// RemoteRead offers the home node to serve a READ from this node's file
// fileID (arrivalread.go); sealed: the client sent it encrypted (pdu is
// opened).
func (r *clientRelay) RemoteRead(ctx context.Context, pdu []byte, fileID uint64, sealed bool) (server.RemoteRead, error) {
	resp, err := r.cli.RemoteRead(ctx, &peerv1.RemoteReadRequest{RelayId: r.id, Pdu: pdu, FileId: fileID, Sealed: sealed})
	if err != nil {
		return server.RemoteRead{}, err
	}
	return remoteReadOf(resp), nil
}

// SessionKeys asks the home node for the keys of a session the
// connection is a channel of.
func (r *clientRelay) SessionKeys(ctx context.Context, sid uint64) (server.SessionKeys, error) {
	resp, err := r.cli.SessionKeys(ctx, &peerv1.SessionKeysRequest{RelayId: r.id, SessionId: sid})
	if err != nil {
		return server.SessionKeys{}, err
	}
	return sessionKeysOf(resp), nil
}

// CloseSend tells the home node that the client closed; flushed:
// everything this node wrote for the connection is on stable storage
// (arrivalfile.go).
func (r *clientRelay) CloseSend(flushed bool) error {
	r.smu.Lock()
	defer r.smu.Unlock()
	if flushed {
		if err := r.stream.Send(&peerv1.RelayMessage{Flushed: true}); err != nil {
			return err
		}
	}
	return r.stream.CloseSend()
}

// Close abandons the relay.
func (r *clientRelay) Close() { r.cancel() }

// RemoteWrite sends the home node a WRITE whose payload (n bytes) stays
// here, to write to this node's file fileID (arrivalwrite.go); verified:
// it is signed, and its signature verified here.
func (r *clientRelay) RemoteWrite(ctx context.Context, head []byte, n int, fileID uint64, sealed, verified bool) (writeExchange, error) {
	ctx, cancel := context.WithCancel(ctx) // ends the stream, however the exchange ends
	stream, err := r.cli.RemoteWrite(ctx)
	if err != nil {
		cancel()
		return writeExchange{}, err
	}
	if err := stream.Send(&peerv1.RemoteWriteMessage{RelayId: r.id, Head: head, DataLength: uint32(n), FileId: fileID, Sealed: sealed, Verified: verified}); err != nil {
		cancel()
		return writeExchange{}, err
	}
	return writeExchange{stream, cancel}, nil
}

// writeExchange is the arrival node's side of a RemoteWrite stream.
type writeExchange struct {
	stream peerv1.SessionService_RemoteWriteClient
	cancel context.CancelFunc
}

// Close ends the exchange.
func (x writeExchange) Close() { x.cancel() }

// Next returns what the home node asks next.
func (x writeExchange) Next() (writeStep, error) {
	m, err := x.stream.Recv()
	if err != nil {
		return writeStep{}, err
	}
	return writeStepOf(m), nil
}

// Written answers a Write step.
func (x writeExchange) Written(n int, err error) error {
	m := &peerv1.RemoteWriteMessage{Written: int64(n)}
	if err != nil {
		m.Error = err.Error()
	}
	return x.stream.Send(m)
}

// SendData sends part of the payload, answering a SendData step.
func (x writeExchange) SendData(p []byte) error {
	return x.stream.Send(&peerv1.RemoteWriteMessage{Data: p})
}

// sessionRelay is a session relay's Relay stream: the connection stays
// with this node's server, which relays one session's frames to its node
// with the credits it grants them (server.SessionRelay).
type sessionRelay struct {
	*clientRelay
	sid  uint64
	keys *keyring
}

// Send implements server.SessionRelay: the grants travel with the bytes,
// in one message, so that the home node has them before it reads the
// requests.
func (r *sessionRelay) Send(msg []byte, grants []server.Grant) error {
	m := &peerv1.RelayMessage{Data: msg, Grants: make([]*peerv1.RelayGrant, len(grants))}
	for i, g := range grants {
		m.Grants[i] = &peerv1.RelayGrant{MessageId: g.MessageID, Credits: uint32(g.Credits)}
	}
	r.smu.Lock()
	defer r.smu.Unlock()
	return r.stream.Send(m)
}

// Open implements server.SessionRelay.
func (r *sessionRelay) Open(ctx context.Context, msg []byte) ([]byte, error) {
	sk := r.keys.keysFor(ctx, r.SessionKeys, r.sid)
	if sk == nil || sk.seal == nil {
		return nil, errors.New("handoff: the relayed session's keys are not known here")
	}
	return signing.Open(nil, sk.seal.dec, msg)
}

// Close implements server.SessionRelay: the session's node ends the
// connection standing for this one.
func (r *sessionRelay) Close() {
	r.CloseSend(true) // this node wrote nothing for it
	r.clientRelay.Close()
}
