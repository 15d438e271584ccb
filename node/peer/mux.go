package peer

import (
	"context"
	"sync"
	"time"

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
	cli     peerv1.PeerServiceClient
	observe func(method string, d time.Duration, err error) // may be nil (Router.Observe)

	sendMu sync.Mutex // serialises Send

	mu      sync.Mutex
	stream  peerv1.PeerService_ExchangeClient // nil until the first call, and after a failure
	cancel  context.CancelFunc
	next    uint64
	pending map[uint64]chan *peerv1.Envelope
}

func newMux(cli peerv1.PeerServiceClient) *mux {
	return &mux{cli: cli, pending: map[uint64]chan *peerv1.Envelope{}}
}

// errMuxBroken ends the requests of a stream that failed; the caller's
// routing treats it as a peer that cannot be reached and tries again.
var errMuxBroken = status.Error(codes.Unavailable, "peer: exchange stream ended")

// start registers a request and returns its id, its answers and the
// stream to send it on, opening the stream if needed.
func (m *mux) start() (uint64, chan *peerv1.Envelope, peerv1.PeerService_ExchangeClient, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stream == nil {
		ctx, cancel := context.WithCancel(context.Background())
		s, err := m.cli.Exchange(ctx)
		if err != nil {
			cancel()
			return 0, nil, nil, err
		}
		m.stream, m.cancel = s, cancel
		go m.receive(s)
	}
	m.next++
	ch := make(chan *peerv1.Envelope, 4)
	m.pending[m.next] = ch
	return m.next, ch, m.stream, nil
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

func (m *mux) send(s peerv1.PeerService_ExchangeClient, env *peerv1.Envelope) error {
	m.sendMu.Lock()
	defer m.sendMu.Unlock()
	if err := s.Send(env); err != nil {
		m.fail(s)
		return errMuxBroken
	}
	return nil
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
	if err := m.send(s, env); err != nil {
		return err
	}
	for {
		select {
		case a, ok := <-ch:
			if !ok {
				return errMuxBroken
			}
			if st := a.GetStatus(); st != nil {
				return status.Error(codes.Code(st.Code), st.Message)
			}
			if answer(a) {
				return nil
			}
		case <-ctx.Done():
			m.send(s, &peerv1.Envelope{Id: id, Body: &peerv1.Envelope_Cancel{Cancel: true}})
			return status.FromContextError(ctx.Err()).Err()
		}
	}
}

// envMethod names env's call for metrics: Admit, Call/OP_… or Wait/OP_….
func envMethod(env *peerv1.Envelope) string {
	switch b := env.Body.(type) {
	case *peerv1.Envelope_Call:
		return "Call/" + b.Call.GetOp().String()
	case *peerv1.Envelope_Wait:
		return "Wait/" + b.Wait.GetOp().String()
	}
	return "Admit"
}

// admit is Admit over the exchange.
func (m *mux) admit(ctx context.Context, req *peerv1.AdmitRequest, onWait func()) (*peerv1.AdmitEvent, error) {
	return m.events(ctx, &peerv1.Envelope{Body: &peerv1.Envelope_Admit{Admit: req}}, onWait)
}

// wait is Wait over the exchange.
func (m *mux) wait(ctx context.Context, req *peerv1.CallRequest, onWait func()) (*peerv1.AdmitEvent, error) {
	return m.events(ctx, &peerv1.Envelope{Body: &peerv1.Envelope_Wait{Wait: req}}, onWait)
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
	err := m.roundTrip(ctx, &peerv1.Envelope{Body: &peerv1.Envelope_Call{Call: req}}, func(a *peerv1.Envelope) bool {
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
		if env.GetCancel() {
			x.cancelOne(env.Id)
			continue
		}
		ctx, cancel := context.WithCancel(stream.Context())
		x.mu.Lock()
		x.cancels[env.Id] = cancel
		x.mu.Unlock()
		x.wg.Go(func() {
			defer x.cancelOne(env.Id)
			x.serve(ctx, env)
		})
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
	switch b := env.Body.(type) {
	case *peerv1.Envelope_Admit:
		err = x.sv.admit(b.Admit, &envEvents{x, id, ctx})
	case *peerv1.Envelope_Wait:
		err = x.sv.wait(b.Wait, &envEvents{x, id, ctx})
	case *peerv1.Envelope_Call:
		var resp *peerv1.CallResponse
		resp, err = x.sv.Call(ctx, b.Call)
		if err == nil {
			err = x.send(&peerv1.Envelope{Id: id, Body: &peerv1.Envelope_Response{Response: resp}})
		}
	default:
		err = status.Error(codes.InvalidArgument, "peer: an envelope with no request")
	}
	if err != nil {
		st := status.Convert(err)
		x.send(&peerv1.Envelope{Id: id, Body: &peerv1.Envelope_Status{Status: &peerv1.RPCStatus{Code: int32(st.Code()), Message: st.Message()}}})
	}
}

// envEvents sends a request's events as Envelopes.
type envEvents struct {
	x   *exchange
	id  uint64
	ctx context.Context
}

func (e *envEvents) Send(ev *peerv1.AdmitEvent) error {
	return e.x.send(&peerv1.Envelope{Id: e.id, Body: &peerv1.Envelope_Event{Event: ev}})
}

func (e *envEvents) Context() context.Context { return e.ctx }
