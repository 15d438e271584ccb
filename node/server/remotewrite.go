package server

import (
	"github.com/smbcluster/smbcluster/node/smb2"
)

// WRITEs of a handed-over channel whose payload stays on the node its
// client is connected to, as the home node runs them: the arrival node
// (node/handoff) sends the request without its payload; ServeRemoteWrite
// runs it as if read from the connection — credits, session, tree, open,
// access, the offset, byte-range locks, the break of other opens' read
// caching, ChannelSequence — and, where it would write the payload, has
// the arrival node write it to its own descriptor of the file
// (RemotePayload) and, for a write-through WRITE, flush it there; then it
// finishes the WRITE (position, change notify) and answers through the
// relay. A signed WRITE's signature covers its payload: the arrival node
// verifies it with the channel's key (SessionKeys) before it offers the
// WRITE, and the home node takes it as verified.

// RemotePayload is how the home node reaches a WRITE's payload on the
// arrival node.
type RemotePayload struct {
	// WriteAt has the arrival node write the payload's first n bytes at
	// off of its file of the open (FileID id), and with sync flush them to
	// stable storage before it answers; it returns how many it wrote.
	WriteAt func(id uint64, off int64, n int, sync bool) (int, error)
	// ReadAll fills p with the payload, for a file the arrival node
	// cannot write itself.
	ReadAll func(p []byte) error
}

// remoteWrite is a WRITE's payload on the arrival node.
type remoteWrite struct {
	n      int
	fileID uint64 // the file the arrival node opened for the open
	p      RemotePayload
}

// writeTo writes the payload where WriteRange said: through the arrival
// node's descriptor when it has the open's file (flushed there when the
// WRITE is write-through: synced), else fetched and written here.
func (rw *remoteWrite) writeTo(r *Request, h FileWriter, wr WriteRange) (n int, synced bool, err error) {
	if pf, ok := h.(PeerFiler); ok {
		if p, ok := pf.PeerFile(); ok && p.ID != 0 && p.ID == rw.fileID {
			n, err := rw.p.WriteAt(p.ID, wr.Off, wr.N, wr.Sync)
			if n > 0 && (err != nil || !wr.Sync) {
				r.Open.wroteRemotely(r.conn) // a FLUSH of the open flushes it there
			}
			return n, wr.Sync, err
		}
	}
	buf := make([]byte, wr.N)
	if err := rw.p.ReadAll(buf); err != nil {
		return 0, false, err
	}
	n, err = wr.File.WriteAt(buf, wr.Off)
	return n, false, err
}

// ServeRemoteWrite runs a WRITE whose payload (n bytes) the arrival node
// holds (see above); head is the request up to its payload. It reports
// whether the home node answered it through the relay, or whether the
// arrival node is to send it through the relay (forward: nothing was
// counted).
// fileID is the FileID of the file the arrival node opened for the open
// (RemoteFile).
func (a *Adopted) ServeRemoteWrite(head []byte, n int, fileID uint64, sealed, verified bool, p RemotePayload) (answered bool) {
	c := a.c
	var h smb2.Header
	if h.Decode(head) != nil || h.Command != smb2.CmdWrite || h.NextCommand != 0 ||
		h.Flags&smb2.FlagRelatedOperations != 0 || h.Flags&smb2.FlagSigned != 0 && !verified || c.ctx.Err() != nil {
		return false
	}
	if req, err := smb2.DecodeWriteHeader(head[smb2.HeaderSize:]); err != nil || int(req.Length) != n {
		return false
	}
	m, s, ok := c.remoteRequest(&h, head, !verified, sealed)
	if m == nil {
		return ok
	}
	var enc *Session
	if sealed {
		enc = s
	}
	r := &m.req
	if sealed {
		r.disp |= dispEncrypted
	}
	if verified {
		r.disp |= dispVerified
	}
	r.remoteWrite = &remoteWrite{n: n, fileID: fileID, p: p}
	res, err := c.serveOne(r, &m.st, enc)
	if err != nil {
		c.close()
		return true
	}
	c.writeResults([]result{res})
	return true
}
