package server

import (
	"github.com/smbcluster/smbcluster/node/smb2"
)

// GoAsync turns the request into an asynchronous one ([MS-SMB2] 3.3.4.2):
// it sends the interim STATUS_PENDING response now (granting the request's
// credits) and the final response later carries the AsyncId. CANCEL can then
// name it by AsyncId. A request inside a compound, other than the last,
// stays synchronous; GoAsync reports whether the request went async.
// When the last request of a compound goes async, the responses of the
// requests before it go out now, compounded with the interim response, as
// Windows sends them ([MS-SMB2] 3.3.4.2 <footnote>; smbtorture
// smb2.compound.interim1).
func (r *Request) GoAsync() bool {
	if r.asyncID != 0 {
		return true
	}
	if !r.disp.last() || r.conn == nil {
		return false
	}
	c := r.conn
	c.mu.Lock()
	c.nextAsync++
	id := c.nextAsync
	if p := c.pending[r.Header.MessageID]; p != nil {
		p.asyncID = id
		c.async[id] = p
		p.settle() // order.go
		if c.draining.Load() {
			p.cancel() // as drain does: the server shuts down
		}
	}
	c.mu.Unlock()
	r.asyncID = id
	h := &r.Header
	res := result{hdr: smb2.Header{
		Command:      h.Command,
		CreditCharge: h.CreditCharge,
		Status:       uint32(smb2.StatusPending),
		Flags:        smb2.FlagServerToRedir | smb2.FlagAsyncCommand,
		MessageID:    h.MessageID,
		AsyncID:      id,
		Credits:      c.grantFor(h),
	}, body: errorBody}
	if r.Session != nil {
		res.hdr.SessionID = r.Session.ID
		if r.Session.EncryptData || r.Tree != nil && r.Tree.EncryptData {
			res.encrypt = r.Session
		}
	}
	rs := []result{res}
	if st := r.compound; st != nil && len(st.earlier) > 0 && !st.flushed {
		res.hdr.Flags |= h.Flags & smb2.FlagRelatedOperations
		if res.encrypt == nil {
			res.encrypt = st.earlier[0].encrypt
		}
		rs = append(st.earlier[:len(st.earlier):len(st.earlier)], res)
		st.flushed = true
	}
	c.writeResults(rs)
	return true
}

// Interior reports whether the request is inside a compound and not its
// last: it cannot go async, and an operation that must wait fails there
// with STATUS_INTERNAL_ERROR as on Windows (smbtorture
// smb2.compound.interim2).
func (r *Request) Interior() bool { return r.conn != nil && !r.disp.last() }

// untrackAsync forgets an async request once its final response is made.
func (c *conn) untrackAsync(id uint64) {
	c.mu.Lock()
	delete(c.async, id)
	c.mu.Unlock()
}
