package server

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/smbcluster/smbcluster/node/smb2"
)

// reconnectDurable serves a CREATE with a DHnC or DH2C context: the
// detached open it names is given to the request's session and tree, with
// the same FileId ([MS-SMB2] 3.3.5.9.7, 3.3.5.9.12). The CREATE's other
// fields are ignored; no durable response context is sent.
func (c *conn) reconnectDurable(r *Request, req *smb2.CreateRequest, d *durableCtx) (Response, error) {
	s := c.srv
	o, err := s.claimDetached(r, d)
	if err == errNotHere {
		return c.adoptDurable(r, req, d) // durable_cluster.go
	}
	if err != nil {
		return nil, err
	}
	r.Open = o
	resp, err := o.Handle.(DurableHandle).Reattach(r, req)
	if err != nil {
		r.Open = nil
		s.unclaim(o)
		return nil, err
	}
	s.reattach(o, r)
	resp.FileID = smb2.FileID{Persistent: o.ID, Volatile: o.ID}
	s.log.Debug("durable open reconnected", "file", o.Name, "id", o.ID, "session", r.Session.ID)
	return resp, nil
}

// claimDetached finds the detached open a reconnect names and marks it
// busy so that neither another reconnect nor the scavenger takes it.
func (s *Server) claimDetached(r *Request, d *durableCtx) (*Open, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.opens[d.fid.Persistent]
	deadline := time.Now().Add(detachWaitLimit)
	for range maxDetachWaits {
		if o == nil || o.dur == nil || o.dur.detached || o.dur.gone || !s.waitDetach(r.Ctx, r.conn, o, deadline) {
			break
		}
		o = s.opens[d.fid.Persistent]
	}
	if o == nil || o.dur == nil {
		return nil, errNotHere
	}
	if !o.dur.detached || o.dur.busy || o.dur.gone {
		return nil, smb2.StatusObjectNameNotFound // still connected, or going
	}
	dur := o.dur
	if d.rc2 && dur.rec.CreateGUID != d.createGUID || o.Tree.Share != r.Tree.Share {
		return nil, smb2.StatusObjectNameNotFound
	}
	if !strings.EqualFold(dur.rec.User, r.Session.User) || !strings.EqualFold(dur.rec.Domain, r.Session.Domain) {
		return nil, smb2.StatusAccessDenied // not the DurableOwner
	}
	dur.busy = true
	return o, nil
}

// errNotHere: this node holds no durable open of the FileId a reconnect
// names; another node may.
var errNotHere = errors.New("server: no durable open of that FileId here")

// maxDetachWaits bounds how often a reconnect waits for a detach: each
// wait ends at a detach anywhere on the server, not necessarily its own.
const maxDetachWaits = 64

// detachWaitLimit bounds the whole wait of a reconnect for a dead
// connection's teardown.
const detachWaitLimit = 10 * time.Second

// waitDetach waits, with s.mu held on entry and on return, while attached
// durable open o belongs to a connection that is gone but not yet torn
// down: its client reconnects on a new connection as soon as it closed the
// old one, and that reconnect may be served before the old connection's
// reader has seen the close or its teardown has detached the open. It
// reports false, without waiting, when o's connection is alive, and
// after deadline.
func (s *Server) waitDetach(ctx context.Context, self *conn, o *Open, deadline time.Time) bool {
	old := o.conn
	// A session with another channel keeps its opens when one goes.
	if old == nil || old == self || o.Session == nil || o.Session.hasChannelBesides(old) {
		return false
	}
	s.mu.Unlock()
	dead := old.ctx.Err() != nil || old.peerClosed()
	if dead {
		old.close() // the reader may not have read the close yet
	}
	s.mu.Lock()
	if !dead || o.dur == nil || o.dur.detached || o.dur.gone {
		return dead
	}
	if s.dur.detached == nil {
		s.dur.detached = make(chan struct{})
	}
	ch := s.dur.detached
	s.mu.Unlock()
	s.waitingForDetach() // order.go: a test hook
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	ok := true
	select {
	case <-ch:
	case <-ctx.Done():
		ok = false
	case <-t.C:
		ok = false
	}
	s.mu.Lock()
	return ok
}

// unclaim returns a claimed open to the detached opens after a failed
// reconnect; one whose timeout passed meanwhile is scavenged.
func (s *Server) unclaim(o *Open) {
	s.mu.Lock()
	o.dur.busy = false
	expired := !time.Now().Before(o.dur.rec.Expires())
	s.mu.Unlock()
	if expired {
		s.scavenge(o)
	}
}

// reattach moves a claimed open to r's session, tree and connection.
func (s *Server) reattach(o *Open, r *Request) {
	t := r.Tree
	s.mu.Lock()
	d := o.dur
	d.detached, d.busy = false, false
	if d.stop != nil {
		d.stop()
		d.stop = nil
	}
	o.Tree, o.Session, o.conn = t, r.Session, r.conn
	d.rec.DisconnectedAt = time.Time{}
	d.rec.ClientGUID = r.conn.clientGUID
	s.DurableStore().Put(d.rec)
	s.mu.Unlock()
	t.mu.Lock()
	t.opens[o.ID] = o
	t.mu.Unlock()
}

// replayDurable answers a replayed CREATE (SMB2_FLAGS_REPLAY_OPERATION)
// with a DH2Q whose CreateGuid names an open of the same client and
// session: the open is returned again, not created twice ([MS-SMB2]
// 3.3.5.9.10). With an oplock, the response carries the level the replay
// asks for, and the DH2Q answer only if that level could be durable; the
// open itself keeps what it holds (smbtorture smb2.replay.replay-dhv2-oplock2).
// A lease is answered in its present state; a replay asking for a lease
// the open does not hold is refused (replayLease).
// It returns nil when the CREATE is to be served normally.
func (c *conn) replayDurable(r *Request, req *smb2.CreateRequest, d *durableCtx) (Response, error) {
	if !d.v2 || r.Header.Flags&smb2.FlagReplayOperation == 0 {
		return nil, nil
	}
	s := c.srv
	s.mu.Lock()
	o := s.replayedOpen(c.clientGUID, d.req2.CreateGUID) // replay.go
	if o == nil || o.replayed == nil || o.Session != r.Session || o.dur != nil && (o.dur.detached || o.dur.gone) {
		s.mu.Unlock()
		return nil, nil
	}
	resp := *o.replayed.resp
	s.mu.Unlock()
	if err := replayLease(o, req, &resp); err != nil {
		return nil, err
	}
	if resp.OplockLevel != smb2.OplockLevelLease && req.RequestedOplockLevel != smb2.OplockLevelLease {
		resp.OplockLevel = min(req.RequestedOplockLevel, resp.OplockLevel)
		if resp.OplockLevel != smb2.OplockLevelBatch {
			resp.Contexts = withoutContext(resp.Contexts, smb2.CreateCtxDurableHandleRequestV2)
		}
	}
	r.Open = o
	return &resp, nil
}

// withoutContext returns cs without the contexts named name.
func withoutContext(cs []smb2.CreateContext, name string) []smb2.CreateContext {
	var out []smb2.CreateContext
	for _, c := range cs {
		if c.Name != name {
			out = append(out, c)
		}
	}
	return out
}

// closeAppInstance closes the opens a CREATE with a DH2Q and an
// AppInstanceId replaces: those of the same application instance, user
// and share, connected or not ([MS-SMB2] 3.3.5.9.13). Their client is not
// told; their handles answer STATUS_FILE_CLOSED.
func (s *Server) closeAppInstance(r *Request, req *smb2.CreateRequest, d *durableCtx) {
	if !d.v2 || !d.hasAppInstance {
		return
	}
	s.CloseAppInstance(d.appInstance, r.Tree.Share.Name, r.Session.User)
	if c, ok := r.Tree.Share.Backend.(AppInstanceCloser); ok { // durable_cluster.go
		c.CloseAppInstance(r, d.appInstance)
	}
}

// CloseAppInstance closes this node's opens of application instance id
// made by user on share, connected or not ([MS-SMB2] 3.3.5.9.13); it
// returns how many it closed.
func (s *Server) CloseAppInstance(id [16]byte, share, user string) int {
	n := 0
	for _, rec := range s.DurableStore().ByAppInstance(id) {
		if rec.Share != share || !strings.EqualFold(rec.User, user) {
			continue
		}
		s.mu.Lock()
		o := s.opens[rec.FileID]
		s.mu.Unlock()
		if o != nil {
			s.log.Debug("open closed by its application instance's new open", "file", o.Name, "id", o.ID)
			s.closeOpen(o)
			n++
		}
	}
	return n
}
