package server

import "context"

// A DH2Q CREATE outlives its connection. A client whose channel fails
// while such a CREATE waits (for an oplock or lease break) replays it on
// another channel of the session ([MS-SMB2] 3.2.7.1). For the replay to
// be answered STATUS_FILE_NOT_AVAILABLE while the CREATE still waits, and
// to be given its open once it has completed (replay.go), the CREATE must
// go on after its connection is lost: it is not cancelled with its
// connection while the session has another channel, and the open it makes
// belongs to the session like any other (its response is lost with the
// connection). Samba does the same, against the letter of [MS-SMB2]
// 3.3.7.1, which cancels the requests of a lost channel (smbtorture
// smb2.replay.dhv2-pending2*-sane; Samba bug 14449).
//
// Such a CREATE is still cancelled by SMB2 CANCEL, by the loss of the
// session's last channel, and by a connection loss during shutdown. If
// the other channels go away while it waits, it finishes its wait
// (bounded by the break timeout) before its connection is torn down and
// the session ends. A shutdown that comes later closes every connection,
// and with them the opens whose break it waits for, so it ends then.

// outliveConnection gives the DH2Q CREATE r a context that the loss of
// its connection cancels only when the session has no other channel. It
// returns the function to call when the CREATE is done.
func (c *conn) outliveConnection(r *Request) (stop func()) {
	parent := r.Ctx
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	stopAfter := context.AfterFunc(parent, func() {
		// parent ends by CANCEL (the connection lives on) or with the
		// connection. A CANCEL racing the connection's loss counts as
		// the loss.
		if c.ctx.Err() == nil || c.srv.isClosed() || !r.Session.hasChannelBesides(c) {
			cancel()
			return
		}
		c.srv.log.Debug("CREATE goes on without its connection", "remote", c.remote, "mid", r.Header.MessageID)
	})
	r.Ctx = ctx
	return func() {
		stopAfter()
		cancel()
	}
}

// hasChannelBesides reports whether the session has a live,
// authenticated channel other than c.
func (s *Session) hasChannelBesides(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for other, ch := range s.channels {
		if other != c && other.ctx.Err() == nil && ch.auth == nil {
			return true
		}
	}
	return false
}

// endedMeanwhile handles an open whose CREATE completed after its tree
// went away (a LOGOFF, TREE_DISCONNECT or the end of the session while
// the CREATE waited): it is dealt with as the tree's end would have —
// detached if durable and its connection is lost, closed otherwise. It
// reports whether that happened.
func (c *conn) endedMeanwhile(o *Open) bool {
	t := o.Tree
	if t.Session.tree(t.ID) == t {
		return false
	}
	s := c.srv
	if c.ctx.Err() == nil || !s.detachOpen(o) {
		s.closeOpen(o)
	}
	return true
}
