package server

import "testing"

// OrderHooks stop requests and teardowns where order.go and oplock.go
// decide what a client sees first (order_test.go).
type OrderHooks struct {
	OpenResolved func(mid uint64) // a request resolved its open, before its handler
	Awaiting     func(mid uint64) // a request is about to wait for earlier ones
	Lost         func()           // a lost connection is about to be torn down
	DetachWait   func()           // a durable reconnect waits for a dead connection's teardown
}

// SetOrderHooks installs h on the server until the test ends.
func (s *Server) SetOrderHooks(tb testing.TB, h OrderHooks) {
	s.hooks.Store(&orderHooks{openResolved: h.OpenResolved, awaiting: h.Awaiting, lost: h.Lost, detachWait: h.DetachWait})
	tb.Cleanup(func() { s.hooks.Store(nil) })
}

// Stopping reports whether Shutdown or Close has reached every connection:
// each one is draining or closed.
func (s *Server) Stopping() bool {
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.mu.Lock()
		reached := c.draining.Load() || c.closing
		c.mu.Unlock()
		if !reached {
			return false
		}
	}
	return true
}
