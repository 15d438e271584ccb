package witness

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"time"
)

// Registration is one client's registration ([MS-SWN] 3.1.1
// WitnessRegistration).
type Registration struct {
	ID        string // the context handle's GUID, 32 lower-case hex digits
	Version   uint32
	NetName   string
	ShareName string // RegisterEx only; "" for none
	IP        net.IP // the address the client is registered for
	Client    string // client computer name
	Flags     uint32
	Timeout   uint32 // AsyncNotify keep-alive timeout in seconds; 0: none
	Node      string // the node that took it
	Since     time.Time
	// ClientAddr is where the registration came from (host:port).
	ClientAddr string
}

// Resource is one address of the cluster and the node it belongs to.
type Resource struct {
	Node      string
	IP        net.IP
	Available bool
}

// ErrUnknown reports a registration that is not (or no longer) known.
var ErrUnknown = errors.New("witness: no such registration")

// pending is a queued notification; key names a move so that it can be
// withdrawn once delivered elsewhere ("" for resource and address changes).
type pending struct {
	key string
	n   *Notification
}

type regState struct {
	reg     *Registration
	queue   []pending
	wake    chan struct{} // closed and replaced when the queue grows or the registration goes
	gone    bool
	waiters int
}

// Hub holds registrations and their notifications; safe for concurrent use.
type Hub struct {
	mu        sync.Mutex
	regs      map[string]*regState
	resources map[string]Resource // by IP string
	served    map[string]bool     // public addresses served now, by IP; nil: not known
	// netName is the state of the cluster's network name: 0 not yet
	// known, netNameOnline, netNameOffline.
	netName int
	// Delivered is called (outside the lock) after a notification was
	// handed to a client; metrics and the cluster store hook it.
	Delivered func(reg *Registration, n *Notification, key string)
}

// NewHub returns an empty hub.
func NewHub() *Hub {
	return &Hub{regs: map[string]*regState{}, resources: map[string]Resource{}}
}

// Put adds or replaces a registration.
func (h *Hub) Put(reg *Registration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.regs[reg.ID]; ok {
		s.reg = reg
		return
	}
	h.regs[reg.ID] = &regState{reg: reg, wake: make(chan struct{})}
}

// Delete removes a registration; waiting AsyncNotify calls end.
func (h *Hub) Delete(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.regs[id]
	if !ok {
		return false
	}
	delete(h.regs, id)
	s.gone = true
	close(s.wake)
	return true
}

// Get returns a registration.
func (h *Hub) Get(id string) (*Registration, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.regs[id]
	if !ok {
		return nil, false
	}
	return s.reg, true
}

// List returns every registration, oldest first.
func (h *Hub) List() []*Registration {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*Registration, 0, len(h.regs))
	for _, s := range h.regs {
		out = append(out, s.reg)
	}
	slices.SortFunc(out, func(a, b *Registration) int {
		if c := a.Since.Compare(b.Since); c != 0 {
			return c
		}
		return compareStrings(a.ID, b.ID)
	})
	return out
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Waiting returns how many AsyncNotify calls wait on this node.
func (h *Hub) Waiting() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, s := range h.regs {
		n += s.waiters
	}
	return n
}

// maxQueue bounds a registration's pending notifications: a client that
// does not ask for them loses the oldest (a flapping node's history).
const maxQueue = 64

// queueLocked appends a notification for a registration and wakes its
// waiters.
func (s *regState) queueLocked(p pending) {
	if len(s.queue) >= maxQueue {
		s.queue = append(s.queue[:0], s.queue[1:]...)
	}
	s.queue = append(s.queue, p)
	close(s.wake)
	s.wake = make(chan struct{})
}

// Queue adds a notification for registration id under key (which
// Withdraw names); false if the registration is unknown.
func (h *Hub) Queue(id, key string, n *Notification) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.regs[id]
	if !ok {
		return false
	}
	for _, p := range s.queue {
		if key != "" && p.key == key {
			return true
		}
	}
	s.queueLocked(pending{key: key, n: n})
	return true
}

// Withdraw drops a queued notification by key, once delivered elsewhere.
func (h *Hub) Withdraw(id, key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.regs[id]; ok {
		s.queue = slices.DeleteFunc(s.queue, func(p pending) bool { return p.key == key })
	}
}

// Wait returns the registration's next notification, waiting for one
// until ctx ends; ErrUnknown when the registration is, or becomes,
// unknown.
func (h *Hub) Wait(ctx context.Context, id string) (*Notification, error) {
	h.mu.Lock()
	s, ok := h.regs[id]
	if !ok {
		h.mu.Unlock()
		return nil, ErrUnknown
	}
	s.waiters++
	defer func() {
		h.mu.Lock()
		s.waiters--
		h.mu.Unlock()
	}()
	for {
		if s.gone {
			h.mu.Unlock()
			return nil, ErrUnknown
		}
		if len(s.queue) > 0 {
			p := s.queue[0]
			s.queue = s.queue[1:]
			reg := s.reg
			h.mu.Unlock()
			if h.Delivered != nil {
				h.Delivered(reg, p.n, p.key)
			}
			return p.n, nil
		}
		wake := s.wake
		h.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		h.mu.Lock()
	}
}

// Resources returns the cluster's addresses as last set.
func (h *Hub) Resources() []Resource {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Resource, 0, len(h.resources))
	for _, r := range h.resources {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Resource) int { return compareStrings(a.IP.String(), b.IP.String()) })
	return out
}

// SetResources replaces the cluster's addresses and queues a
// RESOURCE_CHANGE for the registrations of an address that became
// unavailable (its node gone or drained) or available again ([MS-SWN]
// 3.1.1, 3.1.4.4).
func (h *Hub) SetResources(rs []Resource) {
	h.mu.Lock()
	defer h.mu.Unlock()
	next := make(map[string]Resource, len(rs))
	for _, r := range rs {
		next[r.IP.String()] = r
	}
	first := len(h.resources) == 0
	for _, s := range h.regs {
		k := s.reg.IP.String()
		old, had := h.resources[k]
		cur, has := next[k]
		was, is := had && old.Available, has && cur.Available
		if first || was == is {
			continue
		}
		state := uint32(ResourceUnavailable)
		if is {
			state = ResourceAvailable
		}
		s.queueLocked(pending{n: &Notification{Type: NotifyResourceChange, Resources: []ResourceChange{{Name: k, State: state}}}})
	}
	h.resources = next
}

// SetServed replaces the set of public addresses some node serves now,
// by IP, and sends the registrations that asked for IP notifications
// (WITNESS_REGISTER_IP_NOTIFICATION) an IP_CHANGE for each address that
// went offline (its holder gone, before another takes it) or came online
// (taken) — so a public address moving between nodes shows as offline,
// then online.
func (h *Hub) SetServed(ips []net.IP) {
	next := make(map[string]bool, len(ips))
	for _, ip := range ips {
		next[ip.String()] = true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.served == nil {
		h.served = next
		return
	}
	n := &Notification{Type: NotifyIPChange}
	for ip := range next {
		if !h.served[ip] {
			n.Addrs = append(n.Addrs, IPAddr{IP: net.ParseIP(ip), Flags: AddrOnline})
		}
	}
	for ip := range h.served {
		if !next[ip] {
			n.Addrs = append(n.Addrs, IPAddr{IP: net.ParseIP(ip), Flags: AddrOffline})
		}
	}
	h.served = next
	if len(n.Addrs) == 0 {
		return
	}
	slices.SortFunc(n.Addrs, func(a, b IPAddr) int { return compareStrings(a.IP.String(), b.IP.String()) })
	for _, s := range h.regs {
		if s.reg.Flags&FlagIPNotification != 0 {
			s.queueLocked(pending{n: n})
		}
	}
}

// States of the cluster's network name, as the Hub knows it.
const (
	netNameOnline  = 1
	netNameOffline = 2
)

// SetNetNameOnline records whether the cluster's network name, its client
// access point, is online, and queues a RESOURCE_CHANGE naming each
// registration's net name — unavailable as it goes offline, available as
// it comes back — for every registration ([MS-SWN] 3.1.1: they all
// registered for the cluster's names). The first state set only records.
func (h *Hub) SetNetNameOnline(online bool) {
	next := netNameOffline
	if online {
		next = netNameOnline
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	was := h.netName
	h.netName = next
	if was == 0 || was == next {
		return
	}
	state := uint32(ResourceUnavailable)
	if online {
		state = ResourceAvailable
	}
	for _, s := range h.regs {
		s.queueLocked(pending{n: &Notification{Type: NotifyResourceChange, Resources: []ResourceChange{{Name: s.reg.NetName, State: state}}}})
	}
}

// NetNameOnline reports whether the cluster's network name is online (true
// until the Hub is told otherwise).
func (h *Hub) NetNameOnline() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.netName != netNameOffline
}
