package server

import (
	"context"

	"github.com/smbcluster/smbcluster/node/smb2"
)

// Arrival order. The requests of a connection run concurrently, so a
// request can overtake one that arrived before it. Two overtakings are
// visible to a client and are prevented here:
//
//   - a CANCEL that arrives before the request it names has started
//     ([MS-SMB2] 3.3.5.16): the reader registers every request it hands to
//     a goroutine, so the CANCEL finds it and marks it cancelled; the
//     request's context is cancelled as soon as it starts.
//   - a CLOSE that overtakes a request on the same handle (a CHANGE_NOTIFY
//     sent just before the CLOSE must complete with STATUS_NOTIFY_CLEANUP,
//     not fail with STATUS_FILE_CLOSED; smbtorture smb2.notify.dir): CLOSE
//     first waits until every request that arrived before it has settled —
//     taken its open's reference (then CLOSE's drain waits for or wakes
//     it), gone async, or finished.
//
// A request served in the read loop itself (READ, small WRITE) completes
// before the next frame is read, so it is settled from the start.

// arrive registers the PDUs of a message that is served in its own
// goroutine, in arrival order; called by the reader.
func (c *conn) arrive(hdrs []smb2.Header) {
	c.mu.Lock()
	for i := range hdrs {
		if hdrs[i].Command == smb2.CmdCancel {
			continue
		}
		c.arrivals++
		c.pending[hdrs[i].MessageID] = &pendingReq{seq: c.arrivals, cmd: hdrs[i].Command}
	}
	c.mu.Unlock()
}

// trackPending makes the request cancellable; a CANCEL that came first
// cancels it now.
func (c *conn) trackPending(mid uint64, cancel context.CancelFunc) {
	c.mu.Lock()
	p := c.pending[mid]
	if p == nil {
		p = &pendingReq{settled: true}
		c.pending[mid] = p
	}
	p.cancel = cancel
	early := p.cancelled
	c.mu.Unlock()
	if early {
		cancel()
	}
}

// untrackPending forgets a finished request, settling it.
func (c *conn) untrackPending(mid uint64) {
	c.mu.Lock()
	if p := c.pending[mid]; p != nil {
		p.settle()
		delete(c.pending, mid)
	}
	c.mu.Unlock()
}

// settle marks the request as no longer overtakable now that it holds its
// open; a CLOSE waiting behind it proceeds. A SET_INFO stays unsettled
// until it goes async or finishes, since the breaks it may send must
// precede the answers to later requests.
func (c *conn) settle(mid uint64) {
	c.mu.Lock()
	if p := c.pending[mid]; p != nil && p.cmd != smb2.CmdSetInfo {
		p.settle()
	}
	c.mu.Unlock()
	if h := c.srv.hooks.Load(); h != nil && h.openResolved != nil {
		h.openResolved(mid)
	}
}

// settle is called with conn.mu held.
func (p *pendingReq) settle() {
	if p.settled {
		return
	}
	p.settled = true
	if p.settledCh != nil {
		close(p.settledCh)
	}
}

// awaitEarlier waits until the requests that arrived before request mid
// have settled, or ctx ends.
func (c *conn) awaitEarlier(ctx context.Context, mid uint64) {
	c.awaitEarlierOf(ctx, mid, func(*pendingReq) bool { return true })
}

// awaitEarlierBreaks waits until the SET_INFOs that arrived before
// CREATE mid have settled, so that the breaks they send reach the client
// before the CREATE's answer, or ctx ends.
func (c *conn) awaitEarlierBreaks(ctx context.Context, mid uint64) {
	c.awaitEarlierOf(ctx, mid, func(p *pendingReq) bool { return p.cmd == smb2.CmdSetInfo })
}

// awaitEarlierOf waits until the requests that arrived before request mid
// and match have settled, or ctx ends.
func (c *conn) awaitEarlierOf(ctx context.Context, mid uint64, match func(*pendingReq) bool) {
	c.mu.Lock()
	self := c.pending[mid]
	if self == nil || self.seq == 0 {
		c.mu.Unlock()
		return
	}
	var wait []chan struct{}
	for _, p := range c.pending {
		if p.seq != 0 && p.seq < self.seq && !p.settled && match(p) {
			if p.settledCh == nil {
				p.settledCh = make(chan struct{})
			}
			wait = append(wait, p.settledCh)
		}
	}
	c.mu.Unlock()
	if h := c.srv.hooks.Load(); h != nil && h.awaiting != nil && len(wait) > 0 {
		h.awaiting(mid)
	}
	for _, ch := range wait {
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// orderHooks let tests stop a request or a teardown at the points where
// the orderings above are decided (Server.hooks, set by export_test.go);
// nil in production.
type orderHooks struct {
	openResolved func(mid uint64) // request mid resolved its open, before its handler
	awaiting     func(mid uint64) // request mid is about to wait for earlier ones
	lost         func()           // a lost connection is about to be torn down
	detachWait   func()           // a durable reconnect waits for a teardown (durable_reconnect.go)
}

// beforeTeardown runs the test hook of a lost connection, if any.
func (s *Server) beforeTeardown() {
	if h := s.hooks.Load(); h != nil && h.lost != nil {
		h.lost()
	}
}

// waitingForDetach runs the test hook of a reconnect about to wait.
func (s *Server) waitingForDetach() {
	if h := s.hooks.Load(); h != nil && h.detachWait != nil {
		h.detachWait()
	}
}

// serveCancel cancels the request a CANCEL names ([MS-SMB2] 3.3.5.16). It
// has no response.
func (c *conn) serveCancel(h *smb2.Header) {
	c.mu.Lock()
	var p *pendingReq
	if h.IsAsync() {
		p = c.async[h.AsyncID]
	} else {
		p = c.pending[h.MessageID]
	}
	var cancel context.CancelFunc
	if p != nil {
		if cancel = p.cancel; cancel == nil {
			p.cancelled = true // not started yet
		}
	}
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}
