package server

import "github.com/smbcluster/smbcluster/node/smb2"

// Replay of a CREATE with a DH2Q ([MS-SMB2] 3.3.5.9.10): a client that
// lost the answer to such a CREATE sends it again with
// SMB2_FLAGS_REPLAY_OPERATION and the same CreateGuid, possibly on another
// channel. While the first CREATE is still in progress (it waits for an
// oplock or lease break) the replay is answered STATUS_FILE_NOT_AVAILABLE
// at once, so that the client retries later instead of opening the file
// twice; once it has completed, the replay is given the same open and
// response (replayDurable). Durable or not, every DH2Q open is remembered
// by its client's ClientGuid and CreateGuid until it closes or a request
// names its FileId: the client then has seen the answer, and a later
// replay is a new CREATE (Open.IsReplayEligible; smbtorture
// smb2.replay.replay6).

// createKey names a DH2Q CREATE: the client's ClientGuid and the CreateGuid.
type createKey struct{ client, create [16]byte }

// replayed is what an open made by a DH2Q CREATE keeps for a replay.
type replayed struct {
	key  createKey
	resp *smb2.CreateResponse // the original response
}

// replays is the server's table of DH2Q CREATEs, guarded by Server.mu.
type replays struct {
	pending map[createKey]int   // CREATEs in progress, by count
	opens   map[createKey]*Open // completed ones, until their open closes
}

// startCreate records that a DH2Q CREATE is in progress and returns the
// function to call when it ends. It returns STATUS_FILE_NOT_AVAILABLE for
// a replay of a CREATE still in progress, and STATUS_DUPLICATE_OBJECTID
// for a CREATE that is not a replay but has the CreateGuid of one in
// progress or of an open still eligible for replay.
func (c *conn) startCreate(r *Request, d *durableCtx) (done func(), err error) {
	if !d.v2 {
		return func() {}, nil
	}
	s := c.srv
	k := createKey{c.clientGUID, d.req2.CreateGUID}
	s.mu.Lock()
	defer s.mu.Unlock()
	replay := r.Header.Flags&smb2.FlagReplayOperation != 0
	switch {
	case s.replay.pending[k] > 0 && replay:
		return nil, smb2.StatusFileNotAvailable
	case (s.replay.pending[k] > 0 || s.replay.opens[k] != nil) && !replay:
		// The CreateGuid names another CREATE: as Samba answers
		// (smbtorture smb2.replay.replay6).
		return nil, smb2.StatusDuplicateObjectid
	}
	if s.replay.pending == nil {
		s.replay.pending = make(map[createKey]int)
	}
	s.replay.pending[k]++
	return func() {
		s.mu.Lock()
		if s.replay.pending[k]--; s.replay.pending[k] <= 0 {
			delete(s.replay.pending, k)
		}
		s.mu.Unlock()
	}, nil
}

// rememberCreate keeps the response of a completed DH2Q CREATE with its
// open, for a replay to be answered with.
func (c *conn) rememberCreate(o *Open, d *durableCtx, resp *smb2.CreateResponse) {
	if !d.v2 {
		return
	}
	s := c.srv
	k := createKey{c.clientGUID, d.req2.CreateGUID}
	saved := *resp
	saved.Contexts = append([]smb2.CreateContext(nil), resp.Contexts...)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, live := s.opens[o.ID]; !live {
		return
	}
	if s.replay.opens == nil {
		s.replay.opens = make(map[createKey]*Open)
	}
	o.replayed = &replayed{key: k, resp: &saved}
	s.replay.opens[k] = o
}

// replayedOpen returns the open a completed DH2Q CREATE made, or nil.
// The caller holds s.mu.
func (s *Server) replayedOpen(client, create [16]byte) *Open {
	return s.replay.opens[createKey{client, create}]
}

// forgetCreate drops o from the replay table, as it closes or a request
// uses it. The caller holds s.mu.
func (s *Server) forgetCreate(o *Open) {
	if o.replayed != nil && s.replay.opens[o.replayed.key] == o {
		delete(s.replay.opens, o.replayed.key)
	}
}

// LeaseHolder is implemented by handles that can hold a lease.
type LeaseHolder interface {
	// LeaseNow returns the open's lease key, state and epoch as they are
	// now; ok is false when it holds no lease.
	LeaseNow() (key [16]byte, state uint32, epoch uint16, ok bool)
}

// replayLease fits the response to a replayed CREATE to the lease the
// open holds now: a replay asking for a lease is refused with
// STATUS_ACCESS_DENIED unless the open was made with a lease of the same
// key, and the lease response context carries the present state and
// epoch (Samba does the same; smbtorture smb2.replay.replay-dhv2-lease1-3).
func replayLease(o *Open, req *smb2.CreateRequest, resp *smb2.CreateResponse) error {
	origLease := resp.OplockLevel == smb2.OplockLevelLease
	if req.RequestedOplockLevel == smb2.OplockLevelLease {
		k := req.Known()
		if !origLease || !k.Valid(smb2.CtxRequestLease) {
			return smb2.StatusAccessDenied
		}
		if lh, ok := o.Handle.(LeaseHolder); ok {
			if key, _, _, held := lh.LeaseNow(); held && key != k.Lease.Key {
				return smb2.StatusAccessDenied
			}
		}
	}
	if !origLease {
		return nil
	}
	lh, ok := o.Handle.(LeaseHolder)
	if !ok {
		return nil
	}
	_, st, epoch, held := lh.LeaseNow()
	if !held {
		return nil
	}
	cs := make([]smb2.CreateContext, len(resp.Contexts))
	copy(cs, resp.Contexts)
	for i, cc := range cs {
		var l smb2.LeaseResponse
		if cc.Name != smb2.CreateCtxRequestLease || l.Decode(cc.Data) != nil {
			continue
		}
		l.State = st
		if l.Version == 2 {
			l.Epoch = epoch
		}
		cs[i].Data = l.Append(nil)
	}
	resp.Contexts = cs
	return nil
}
