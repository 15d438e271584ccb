package server

import (
	"errors"

	"github.com/smbcluster/smbcluster/node/smb2"
)

var errNoChannel = errors.New("server: no connection left to deliver a break on")

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
		return errNoChannel
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
	c.writeResults([]result{res})
	return nil
}

// channel returns a live connection of o's client.
func (o *Open) channel() *conn {
	if o.conn != nil && o.conn.ctx.Err() == nil {
		return o.conn
	}
	s := o.Session
	s.mu.Lock()
	defer s.mu.Unlock()
	for c, ch := range s.channels {
		if c.ctx.Err() == nil && ch.auth == nil {
			return c
		}
	}
	return nil
}

// serveOplockBreak handles an oplock break acknowledgment ([MS-SMB2]
// 3.3.5.22.1). Leases are not granted, so a lease acknowledgment is refused.
func (c *conn) serveOplockBreak(r *Request) (Response, error) {
	isLease, err := smb2.DecodeOplockBreak(r.Msg)
	if err != nil {
		return nil, smb2.StatusInvalidParameter
	}
	if isLease {
		return nil, smb2.StatusInvalidParameter
	}
	var req smb2.OplockBreakAck
	if err := req.Decode(r.Msg); err != nil {
		return nil, smb2.StatusInvalidParameter
	}
	if err := r.resolveOpen(req.FileID); err != nil {
		return nil, err
	}
	a, ok := r.Open.Handle.(OplockAcker)
	if !ok {
		return nil, smb2.StatusInvalidOplockProtocol
	}
	level, err := a.AckOplock(req.OplockLevel)
	if err != nil {
		return nil, err
	}
	return &smb2.OplockBreakAck{OplockLevel: level, FileID: req.FileID}, nil
}
