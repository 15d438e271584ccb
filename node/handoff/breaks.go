package handoff

import (
	"context"
	"errors"
	"time"

	"github.com/smbcluster/smbcluster/node/mesh"
	"github.com/smbcluster/smbcluster/node/smb2"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
)

// SendLeaseBreak implements server.SessionPeers: every other node says
// when its oldest connection of the client was made, and the oldest of
// them, if older than before, sends the break. A node that does not
// answer in time is passed over.
//
// That no node holds a connection of the client older than before is
// remembered (quiet): a connection made later is younger than before,
// so the answer stays the same for as long as before does — the
// breaking node's oldest connection of the client lives — and the
// client's next breaks ask no node.
func (p *Peers) SendLeaseBreak(ctx context.Context, guid [16]byte, before time.Time, n *smb2.LeaseBreakNotification) bool {
	if p.isQuiet(guid, before) {
		return false
	}
	type answer struct {
		client peerv1.SessionServiceClient
		made   int64
	}
	var best *answer
	all := true // every node answered
	for a := range ask(ctx, p, nil, func(ctx context.Context, c peerv1.SessionServiceClient) (answer, error) {
		resp, err := c.OldestConnection(ctx, &peerv1.OldestConnectionRequest{ClientGuid: guid[:]})
		if err == nil && !resp.GetHeld() {
			err = errNotHeld
		}
		return answer{c, resp.GetMadeUnixNano()}, err
	}) {
		if a.Err != nil && !errors.Is(a.Err, errNotHeld) && !errors.Is(a.Err, mesh.ErrGone) {
			all = false
		}
		if a.Err == nil && a.Resp.made < before.UnixNano() && (best == nil || a.Resp.made < best.made) {
			best = &a.Resp
		}
	}
	if best == nil {
		if all {
			p.setQuiet(guid, before)
		}
		return false
	}
	resp, err := best.client.SendLeaseBreak(ctx, &peerv1.SendLeaseBreakRequest{
		ClientGuid: guid[:], LeaseKey: n.LeaseKey[:], Flags: n.Flags, CurrentState: n.CurrentLeaseState,
		NewState: n.NewLeaseState, NewEpoch: uint32(n.NewEpoch),
	})
	return err == nil && resp.GetSent()
}

// maxQuiet bounds the clients SendLeaseBreak remembers; past it, it
// forgets them all and asks again.
const maxQuiet = 4096

// isQuiet reports whether no other node held a connection of client guid
// made before before, when last asked.
func (p *Peers) isQuiet(guid [16]byte, before time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.quiet[guid]
	return ok && t.Equal(before)
}

// setQuiet remembers that no other node holds a connection of client
// guid made before before.
func (p *Peers) setQuiet(guid [16]byte, before time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.quiet) >= maxQuiet {
		clear(p.quiet)
	}
	p.quiet[guid] = before
}

// errNotHeld is a node's answer that it has no connection of the client.
var errNotHeld = errors.New("handoff: no connection of the client")

// OldestConnection implements peerv1.SessionServiceServer.
func (sv *Service) OldestConnection(ctx context.Context, req *peerv1.OldestConnectionRequest) (*peerv1.OldestConnectionResponse, error) {
	s := sv.p.srv.Load()
	var guid [16]byte
	if s == nil || copy(guid[:], req.GetClientGuid()) != 16 {
		return &peerv1.OldestConnectionResponse{}, nil
	}
	made, held := s.OldestClientConn(guid)
	return &peerv1.OldestConnectionResponse{Held: held, MadeUnixNano: made.UnixNano()}, nil
}

// SendLeaseBreak implements peerv1.SessionServiceServer.
func (sv *Service) SendLeaseBreak(ctx context.Context, req *peerv1.SendLeaseBreakRequest) (*peerv1.SendLeaseBreakResponse, error) {
	s := sv.p.srv.Load()
	var guid [16]byte
	n := &smb2.LeaseBreakNotification{Flags: req.GetFlags(), CurrentLeaseState: req.GetCurrentState(),
		NewLeaseState: req.GetNewState(), NewEpoch: uint16(req.GetNewEpoch())}
	if s == nil || copy(guid[:], req.GetClientGuid()) != 16 || copy(n.LeaseKey[:], req.GetLeaseKey()) != 16 {
		return &peerv1.SendLeaseBreakResponse{}, nil
	}
	return &peerv1.SendLeaseBreakResponse{Sent: s.SendLeaseBreak(guid, n)}, nil
}
