package peer

import (
	"context"
	"sync"
	"time"

	"github.com/smbcluster/smbcluster/node/mesh"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The calls to owners (Admit, Call, Wait) travel as Envelopes on one
// Exchange stream per pair of nodes: a gRPC call of its own costs a new
// HTTP/2 stream, headers and trailers each way, which made up most of a
// remote open's cost (BenchmarkRemoteOpenClose); a message on a stream
// that stays open costs one DATA frame each way.

// mux is the caller's side of the Exchange with one peer.
type mux struct {
	cli     func() (peerv1.PeerServiceClient, error)        // the peer's client, over the mesh's connection of the moment
	observe func(method string, d time.Duration, err error) // may be nil (Router.Observe)

	sendMu sync.Mutex                        // serialises Send, and guards what follows
	sentOn peerv1.PeerService_ExchangeClient // the stream of the last send
	seq    uint64                            // messages sent
	unsure []posted                          // closes posted, not known served
	timer  *time.Timer                       // sends the closes posted when no message took them
	armed  bool                              // timer is set

	mu      sync.Mutex
	stream  peerv1.PeerService_ExchangeClient // nil until the first call, and after a failure
	cancel  context.CancelFunc
	next    uint64
	pending map[uint64]chan *peerv1.Envelope
}

// posted is a close sent without waiting for an answer: seq is the
// message that last carried it, 0 when none on the current stream did.
type posted struct {
	seq uint64
	req *peerv1.CallRequest
}

// postDelay is how long a posted close waits for a message to the same
// peer to ride on (the next open, usually) before it goes on its own.
const postDelay = 2 * time.Millisecond

// maxUnsure bounds the closes a node sends to one peer without knowing
// they were served: beyond it, a close waits for its answer (which
// confirms every one sent before it).
const maxUnsure = 512

func newMux(cli func() (peerv1.PeerServiceClient, error)) *mux {
	return &mux{cli: cli, pending: map[uint64]chan *peerv1.Envelope{}}
}

// muxPool is a node's exchanges with its peers, one per address. Its mu
// guards byAddr alone and is a leaf: nothing is taken or called while it
// is held (a mux opens its stream on its first call, not here).
type muxPool struct {
	mesh    *mesh.Mesh                                      // the connections the streams run on
	observe func(method string, d time.Duration, err error) // given to each new mux (Router.Observe), set before use

	mu     sync.Mutex
	byAddr map[string]*mux
}

func newMuxPool(m *mesh.Mesh) *muxPool {
	return &muxPool{mesh: m, byAddr: map[string]*mux{}}
}

// get returns the exchange with node at addr, making it if there is none.
func (p *muxPool) get(node, addr string) *mux {
	p.mu.Lock()
	defer p.mu.Unlock()
	mx := p.byAddr[addr]
	if mx == nil {
		mx = newMux(func() (peerv1.PeerServiceClient, error) {
			cc, err := p.mesh.Conn(node, addr)
			if err != nil {
				return nil, err
			}
			return peerv1.NewPeerServiceClient(cc), nil
		})
		mx.observe = p.observe
		p.byAddr[addr] = mx
	}
	return mx
}

// existing returns the exchange with the peer at addr; nil when none was
// made.
func (p *muxPool) existing(addr string) *mux {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.byAddr[addr]
}

// reset forgets every exchange (Router.Close): the mesh's close ends
// their streams.
func (p *muxPool) reset() {
	p.mu.Lock()
	p.byAddr = map[string]*mux{}
	p.mu.Unlock()
}

// errMuxBroken ends the requests of a stream that failed; the caller's
// routing treats it as a peer that cannot be reached and tries again.
var errMuxBroken = status.Error(codes.Unavailable, "peer: exchange stream ended")

// start registers a request and returns its id, its answers and the
// stream to send it on, opening the stream if needed.
func (m *mux) start() (uint64, chan *peerv1.Envelope, peerv1.PeerService_ExchangeClient, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.open(); err != nil {
		return 0, nil, nil, err
	}
	m.next++
	ch := make(chan *peerv1.Envelope, 4)
	m.pending[m.next] = ch
	return m.next, ch, m.stream, nil
}

// open opens the stream if there is none. The caller holds m.mu.
func (m *mux) open() error {
	if m.stream != nil {
		return nil
	}
	cli, err := m.cli()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s, err := cli.Exchange(ctx)
	if err != nil {
		cancel()
		return err
	}
	m.stream, m.cancel = s, cancel
	go m.receive(s)
	return nil
}

// receive routes the answers of stream s to their requests until it fails.
func (m *mux) receive(s peerv1.PeerService_ExchangeClient) {
	for {
		env, err := s.Recv()
		if err != nil {
			m.fail(s)
			return
		}
		m.mu.Lock()
		ch := m.pending[env.Id]
		m.mu.Unlock()
		if ch != nil {
			ch <- env // room: a request reads its answers as they come
		}
	}
}

// fail ends every request on stream s: the next call opens a new one.
func (m *mux) fail(s peerv1.PeerService_ExchangeClient) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stream != s {
		return
	}
	m.cancel()
	m.stream, m.cancel = nil, nil
	for id, ch := range m.pending {
		close(ch)
		delete(m.pending, id)
	}
}

func (m *mux) done(id uint64) {
	m.mu.Lock()
	delete(m.pending, id)
	m.mu.Unlock()
}

// send sends env on stream s, with the closes posted and not yet sent
// on s before its request, and returns its sequence number.
func (m *mux) send(s peerv1.PeerService_ExchangeClient, env *peerv1.Envelope) (uint64, error) {
	m.sendMu.Lock()
	defer m.sendMu.Unlock()
	m.carry(s, env)
	if err := s.Send(env); err != nil {
		m.fail(s)
		return 0, errMuxBroken
	}
	return m.seq, nil
}

// carry numbers the next message on s and puts in env the posted closes
// that s has not carried: after a stream broke, all of them (they are
// idempotent). The caller holds m.sendMu.
func (m *mux) carry(s peerv1.PeerService_ExchangeClient, env *peerv1.Envelope) {
	if m.sentOn != s {
		m.sentOn = s
		for i := range m.unsure {
			m.unsure[i].seq = 0
		}
	}
	m.seq++
	for i := range m.unsure {
		if m.unsure[i].seq == 0 {
			m.unsure[i].seq = m.seq
			env.Drops = append(env.Drops, m.unsure[i].req)
		}
	}
	if len(env.Drops) > 0 && m.armed {
		m.timer.Stop()
		m.armed = false
	}
}

// post queues a close that wants no answer: the next message to the peer
// carries it (or a message of its own after postDelay), ordered before
// everything sent after it; it is kept until an answer to a later
// message shows it served. It reports false when too many are unsure
// already.
func (m *mux) post(req *peerv1.CallRequest) bool {
	m.sendMu.Lock()
	defer m.sendMu.Unlock()
	if len(m.unsure) >= maxUnsure {
		return false
	}
	m.unsure = append(m.unsure, posted{req: req})
	if !m.armed {
		m.armed = true
		if m.timer == nil {
			m.timer = time.AfterFunc(postDelay, m.sendPosted)
		} else {
			m.timer.Reset(postDelay)
		}
	}
	return true
}

// sendPosted sends the posted closes no message carried.
func (m *mux) sendPosted() {
	m.mu.Lock()
	err := m.open()
	s := m.stream
	m.mu.Unlock()
	m.sendMu.Lock()
	defer m.sendMu.Unlock()
	m.armed = false
	if err != nil {
		return // kept: the next message, or a flush, carries them
	}
	env := &peerv1.Envelope{}
	m.carry(s, env)
	if len(env.Drops) > 0 && s.Send(env) != nil {
		m.fail(s)
	}
}

// confirm forgets the closes carried by message seq, which was
// answered, and before it: the peer serves them before its request.
func (m *mux) confirm(seq uint64) {
	m.sendMu.Lock()
	defer m.sendMu.Unlock()
	n := 0
	for n < len(m.unsure) && m.unsure[n].seq != 0 && m.unsure[n].seq <= seq {
		n++
	}
	if n > 0 {
		m.unsure = append(m.unsure[:0], m.unsure[n:]...)
	}
}

// hasUnsure reports whether closes are on their way, not known served.
func (m *mux) hasUnsure() bool {
	m.sendMu.Lock()
	defer m.sendMu.Unlock()
	return len(m.unsure) > 0
}

// flush waits until every close sent on the stream before is served
// (sending them again on a new stream if the old one failed); it reports
// whether there were any.
func (m *mux) flush(ctx context.Context) bool {
	if !m.hasUnsure() {
		return false
	}
	// A stream that broke lost what it carried: the next one carries it
	// again, before the flush.
	for m.hasUnsure() && ctx.Err() == nil {
		if _, err := m.call(ctx, &peerv1.CallRequest{Op: &peerv1.CallRequest_Flush{Flush: &peerv1.FlushOp{}}}); err != errMuxBroken {
			break
		}
	}
	return true
}

// roundTrip sends env and passes its answers to answer until answer
// reports the last one, ctx ends (the peer is told to cancel) or the
// stream fails.
func (m *mux) roundTrip(ctx context.Context, env *peerv1.Envelope, answer func(*peerv1.Envelope) (last bool)) (err error) {
	if m.observe != nil {
		start := time.Now()
		defer func() { m.observe(envMethod(env), time.Since(start), err) }()
	}
	id, ch, s, err := m.start()
	if err != nil {
		return err
	}
	defer m.done(id)
	env.Id = id
	seq, err := m.send(s, env)
	if err != nil {
		return err
	}
	for confirmed := false; ; {
		select {
		case a, ok := <-ch:
			if !ok {
				return errMuxBroken
			}
			if !confirmed {
				m.confirm(seq)
				confirmed = true
			}
			if st := a.GetStatus(); st != nil {
				return status.Error(codes.Code(st.Code), st.Message)
			}
			if answer(a) {
				return nil
			}
		case <-ctx.Done():
			m.send(s, &peerv1.Envelope{Id: id, Cancel: true})
			return status.FromContextError(ctx.Err()).Err()
		}
	}
}

// envMethod names env's call for metrics: Admit, Call/OP_… or Wait/OP_….
func envMethod(env *peerv1.Envelope) string {
	switch {
	case env.Call != nil:
		return "Call/" + opOf(env.Call).String()
	case env.Wait != nil:
		return "Wait/" + opOf(env.Wait).String()
	}
	return "Admit"
}

// admit is Admit over the exchange.
func (m *mux) admit(ctx context.Context, req *peerv1.AdmitRequest, onWait func()) (*peerv1.AdmitEvent, error) {
	return m.events(ctx, &peerv1.Envelope{Admit: req}, onWait)
}

// wait is Wait over the exchange.
func (m *mux) wait(ctx context.Context, req *peerv1.CallRequest, onWait func()) (*peerv1.AdmitEvent, error) {
	return m.events(ctx, &peerv1.Envelope{Wait: req}, onWait)
}

func (m *mux) events(ctx context.Context, env *peerv1.Envelope, onWait func()) (*peerv1.AdmitEvent, error) {
	var result *peerv1.AdmitEvent
	err := m.roundTrip(ctx, env, func(a *peerv1.Envelope) bool {
		ev := a.GetEvent()
		if ev == nil {
			return false
		}
		if ev.Waiting {
			if onWait != nil {
				onWait()
				onWait = nil
			}
			return false
		}
		result = ev
		return true
	})
	return result, err
}

// call is Call over the exchange.
func (m *mux) call(ctx context.Context, req *peerv1.CallRequest) (*peerv1.CallResponse, error) {
	var resp *peerv1.CallResponse
	err := m.roundTrip(ctx, &peerv1.Envelope{Call: req}, func(a *peerv1.Envelope) bool {
		resp = a.GetResponse()
		return resp != nil
	})
	return resp, err
}

// Exchange implements peerv1.PeerServiceServer: the callee's side. Each
// request runs on its own goroutine (an Admit or Wait may wait for a
// break or a lock) with a context that its cancel, or the end of the
// stream, cancels.
func (sv *Service) Exchange(stream peerv1.PeerService_ExchangeServer) error {
	x := &exchange{sv: sv, stream: stream, cancels: map[uint64]context.CancelFunc{}}
	defer x.wg.Wait()
	defer x.cancelAll()
	for {
		env, err := stream.Recv()
		if err != nil {
			return nil
		}
		for _, d := range env.Drops {
			// Served before the next message is read, so that an
			// FlushOp after them answers after they were served.
			x.sv.post(stream.Context(), d)
		}
		if env.GetCancel() {
			x.cancelOne(env.Id)
			continue
		}
		if env.Id == 0 {
			continue // closes alone
		}
		ctx, cancel := context.WithCancel(stream.Context())
		x.mu.Lock()
		x.cancels[env.Id] = cancel
		x.mu.Unlock()
		x.wg.Add(1)
		x.sv.workers.run(func() {
			defer x.wg.Done()
			defer x.cancelOne(env.Id)
			x.serve(ctx, env)
		})
	}
}

// workers runs the requests of Exchange streams on goroutines that wait
// a while for the next one after each: a new goroutine per request grew
// its stack serving an Admit every time (runtime.copystack, 9 % of a
// remote open's CPU in BenchmarkRemoteOpenClose).
type workers struct {
	work chan func()
}

// workerIdle is how long an idle worker waits for a request.
const workerIdle = 10 * time.Second

// run runs f on an idle worker, or on a new one.
func (w *workers) run(f func()) {
	select {
	case w.work <- f:
	default:
		go w.loop(f)
	}
}

func (w *workers) loop(f func()) {
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		f()
		t.Reset(workerIdle)
		select {
		case f = <-w.work:
		case <-t.C:
			return
		}
	}
}

// exchange is one Exchange stream on the callee's side.
type exchange struct {
	sv     *Service
	stream peerv1.PeerService_ExchangeServer
	wg     sync.WaitGroup

	sendMu sync.Mutex

	mu      sync.Mutex
	cancels map[uint64]context.CancelFunc
}

func (x *exchange) cancelOne(id uint64) {
	x.mu.Lock()
	cancel := x.cancels[id]
	delete(x.cancels, id)
	x.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func (x *exchange) cancelAll() {
	x.mu.Lock()
	defer x.mu.Unlock()
	for id, cancel := range x.cancels {
		cancel()
		delete(x.cancels, id)
	}
}

func (x *exchange) send(env *peerv1.Envelope) error {
	x.sendMu.Lock()
	defer x.sendMu.Unlock()
	return x.stream.Send(env)
}

// serve runs one request and sends its answers.
func (x *exchange) serve(ctx context.Context, env *peerv1.Envelope) {
	id := env.Id
	var err error
	switch {
	case env.Admit != nil:
		err = x.sv.admit(env.Admit, &envEvents{x, id, ctx})
	case env.Wait != nil:
		err = x.sv.wait(env.Wait, &envEvents{x, id, ctx})
	case env.Call != nil:
		var resp *peerv1.CallResponse
		resp, err = x.sv.Call(ctx, env.Call)
		if err == nil {
			err = x.send(&peerv1.Envelope{Id: id, Response: resp})
		}
	default:
		err = status.Error(codes.InvalidArgument, "peer: an envelope with no request")
	}
	if err != nil {
		st := status.Convert(err)
		x.send(&peerv1.Envelope{Id: id, Status: &peerv1.RPCStatus{Code: int32(st.Code()), Message: st.Message()}})
	}
}

// envEvents sends a request's events as Envelopes.
type envEvents struct {
	x   *exchange
	id  uint64
	ctx context.Context
}

func (e *envEvents) Send(ev *peerv1.AdmitEvent) error {
	return e.x.send(&peerv1.Envelope{Id: e.id, Event: ev})
}

func (e *envEvents) Context() context.Context { return e.ctx }
