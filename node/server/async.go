package server

import (
	"github.com/smbcluster/smbcluster/node/smb2"
)

// GoAsync turns the request into an asynchronous one ([MS-SMB2] 3.3.4.2):
// it sends the interim STATUS_PENDING response now (granting the request's
// credits) and the final response later carries the AsyncId. CANCEL can then
// name it by AsyncId. A request inside a compound, other than the last,
// stays synchronous; GoAsync reports whether the request went async.
func (r *Request) GoAsync() bool {
	if r.asyncID != 0 {
		return true
	}
	if !r.last || r.conn == nil {
		return false
	}
	c := r.conn
	c.mu.Lock()
	c.nextAsync++
	id := c.nextAsync
	if p := c.pending[r.Header.MessageID]; p != nil {
		p.asyncID = id
		c.async[id] = p
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
		Credits:      c.credits.grant(max(h.Credits, 1)),
	}, body: errorBody}
	if r.Session != nil {
		res.hdr.SessionID = r.Session.ID
		if r.Session.EncryptData || r.Tree != nil && r.Tree.EncryptData {
			res.encrypt = r.Session
		}
	}
	c.writeResults([]result{res})
	return true
}

// untrackAsync forgets an async request once its final response is made.
func (c *conn) untrackAsync(id uint64) {
	c.mu.Lock()
	delete(c.async, id)
	c.mu.Unlock()
}
