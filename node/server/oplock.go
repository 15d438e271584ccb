package server

import (
	"context"
	"errors"
	"time"

	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/state"
)

var errNoChannel = errors.New("server: no connection left to deliver a break on")

// leaseBreakPeerWait bounds how long a lease break waits for the other
// nodes to say whether they hold an older connection of its client (an
// answer takes well under a millisecond): a node stopped but not yet
// declared dead must not hold every break, and the CREATE that caused it,
// for long. Past it the break goes out on this node's oldest connection.
const leaseBreakPeerWait = 250 * time.Millisecond

// OplockAcker is implemented by handles that hold oplocks: it takes the
// client's acknowledgment of a break and returns the level now held.
type OplockAcker interface {
	AckOplock(level uint8) (uint8, error)
}

// BreakOplock sends an oplock break notification for o to its client
// ([MS-SMB2] 3.3.4.6): on the connection that opened it, or on another
// channel of its session if that one is gone. It does not wait.
func (o *Open) BreakOplock(to uint8) error {
	c := o.channel()
	if c == nil {
		return o.undelivered()
	}
	res := result{
		hdr: smb2.Header{
			Command:   smb2.CmdOplockBreak,
			Flags:     smb2.FlagServerToRedir,
			MessageID: ^uint64(0),
			SessionID: o.Session.ID,
		},
		body: &smb2.OplockBreakNotification{OplockLevel: to, FileID: smb2.FileID{Persistent: o.ID, Volatile: o.ID}},
	}
	if o.Session.EncryptData || o.Tree.EncryptData {
		res.encrypt = o.Session
	}
	c.sendBreak(res, func() { o.BreakOplock(to) }) // ioctl_torture.go
	return nil
}

// channel returns a live connection of o's client.
func (o *Open) channel() *conn {
	if o.conn != nil && o.conn.ctx.Err() == nil {
		return o.conn
	}
	// The others in the order they were bound, as smbtorture's
	// multichannel.oplocks.test3_specification expects of a break
	// retried channel after channel.
	s := o.Session
	s.mu.Lock()
	defer s.mu.Unlock()
	var best *conn
	var bestSeq uint64
	for c, ch := range s.channels {
		if c.ctx.Err() == nil && ch.auth == nil && (best == nil || ch.seq < bestSeq) {
			best, bestSeq = c, ch.seq
		}
	}
	return best
}

// undelivered is the outcome of a break of o that found no live connection
// of its client. While o is still open, its connection was lost and has
// not been torn down yet: the teardown closes o, or finds the break
// pending and closes o rather than detach it (a durable open), and
// closing o ends the break. So the break stays pending (nil) instead of
// counting as acknowledged to none, which would keep o's share modes
// without its caching and fail (SHARING_VIOLATION) or weaken the grant
// of the open that caused the break (smbtorture smb2.durable-open.lease,
// open2-lease: a new open arriving just after the old client
// disconnected). Otherwise o is closing, and errNoChannel ends the break
// now.
func (o *Open) undelivered() error {
	s := o.server()
	if s == nil {
		return errNoChannel
	}
	s.mu.Lock()
	live := s.opens[o.ID] == o
	s.mu.Unlock()
	if live {
		return nil
	}
	return errNoChannel
}

// LeaseAcker is implemented by backends that grant leases: it takes the
// client's acknowledgment of a lease break and returns the state now held.
type LeaseAcker interface {
	AckLease(clientGUID, key [16]byte, state uint32) (uint32, error)
}

// BreakLease sends a lease break notification for o's lease ([MS-SMB2]
// 3.3.4.7) on a live connection of its client: the oldest connection with
// its ClientGuid, or, when the session must be encrypted, a channel of
// o's session (whose key seals it). It does not wait.
func (o *Open) BreakLease(b state.LeaseBreak) error {
	n := &smb2.LeaseBreakNotification{LeaseKey: b.ID.Key, CurrentLeaseState: b.From, NewLeaseState: b.To}
	if b.AckRequired {
		n.Flags = smb2.LeaseBreakFlagAckRequired
	}
	if b.Version >= 2 {
		n.NewEpoch = b.Epoch
	}
	encrypt := o.Session.EncryptData || o.Tree.EncryptData
	res := leaseBreakResult(n)
	if !encrypt && o.conn != nil {
		s := o.conn.srv
		local, ok := s.OldestClientConn(b.ID.Client)
		if !ok {
			local = time.Now()
		}
		if peers := s.cfg.SessionPeers; peers != nil {
			// In a cluster the client's oldest connection may be on
			// another node ([MS-SMB2] 3.3.4.7: one of the client's
			// connections; Windows picks the oldest).
			ctx, cancel := context.WithTimeout(context.Background(), leaseBreakPeerWait)
			sent := peers.SendLeaseBreak(ctx, b.ID.Client, local, n)
			cancel()
			if sent {
				return nil
			}
		}
		for _, c := range s.connsOfClient(b.ID.Client) {
			if c.dialect >= smb2.Dialect210 {
				c.sendBreak(res, func() { o.BreakLease(b) })
				return nil
			}
		}
	}
	c := o.channel()
	if c == nil {
		return o.undelivered()
	}
	res.hdr.SessionID = o.Session.ID
	if encrypt {
		res.encrypt = o.Session
	}
	c.sendBreak(res, func() { o.BreakLease(b) })
	return nil
}

// serveOplockBreak handles an oplock break acknowledgment ([MS-SMB2]
// 3.3.5.22.1) or a lease break acknowledgment (3.3.5.22.2).
func (c *conn) serveOplockBreak(r *Request) (Response, error) {
	isLease, err := smb2.DecodeOplockBreak(r.Msg)
	if err != nil {
		return nil, smb2.StatusInvalidParameter
	}
	if isLease {
		return c.serveLeaseBreakAck(r)
	}
	var req smb2.OplockBreakAck
	if err := req.Decode(r.Msg); err != nil {
		return nil, smb2.StatusInvalidParameter
	}
	a, ok := r.Open.Handle.(OplockAcker)
	if !ok {
		return nil, smb2.StatusInvalidOplockProtocol
	}
	level, err := a.AckOplock(req.OplockLevel)
	if err != nil {
		return nil, err
	}
	c.srv.cfg.Metrics.BreakAcked(false)
	return &smb2.OplockBreakAck{OplockLevel: level, FileID: req.FileID}, nil
}

// serveLeaseBreakAck handles a lease break acknowledgment ([MS-SMB2]
// 3.3.5.22.2); the lease is found by the connection's ClientGuid and the
// LeaseKey.
func (c *conn) serveLeaseBreakAck(r *Request) (Response, error) {
	var req smb2.LeaseBreakAck
	if err := req.Decode(r.Msg); err != nil {
		return nil, smb2.StatusInvalidParameter
	}
	a, ok := r.Tree.Share.Backend.(LeaseAcker)
	if !ok || c.dialect < smb2.Dialect210 {
		return nil, smb2.StatusObjectNameNotFound
	}
	st, err := a.AckLease(c.clientGUID, req.LeaseKey, req.LeaseState)
	if err != nil {
		return nil, err
	}
	c.srv.cfg.Metrics.BreakAcked(true)
	return &smb2.LeaseBreakAck{LeaseKey: req.LeaseKey, LeaseState: st}, nil
}
