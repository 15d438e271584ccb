package server

import (
	"encoding/binary"
	"errors"

	"github.com/smbcluster/smbcluster/node/smb2"
)

// WRITEs of a handed-over channel whose payload stays on the node its
// client is connected to: the arrival node sends the home node the
// request without its payload (Relay.RemoteWrite); the home node runs it
// as if read from the connection — credits, session, tree, open, access,
// the offset, byte-range locks, the break of other opens' read caching,
// ChannelSequence — and, where it would write the payload, has the
// arrival node write it to its own descriptor of the file (opened through
// its own share, remotefile.go) and, for a write-through WRITE, flush it
// there; then it finishes the WRITE (position, change notify) and answers
// through the relay. A file the arrival node could not open takes the
// relay, payload and all. A signed WRITE's signature covers its payload: the
// arrival node verifies it with the channel's key (Relay.SessionKeys)
// before it offers the WRITE, and the home node takes it as verified.

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

// remoteWritable reports whether msg, a message a handed-over channel's
// client sent (opened, if it came sealed), is a WRITE whose payload to
// keep here, where the payload begins, the FileId it writes, and whether
// it is signed (its signature is then verified here first).
func remoteWritable(msg []byte, min int) (dataOff int, fid uint64, signed, ok bool) {
	var h smb2.Header
	if len(msg) < smb2.HeaderSize+48 || binary.LittleEndian.Uint32(msg) != smb2.ProtocolID || h.Decode(msg) != nil ||
		h.Command != smb2.CmdWrite || h.NextCommand != 0 || h.Flags&smb2.FlagRelatedOperations != 0 {
		return 0, 0, false, false
	}
	req, err := smb2.DecodeWriteHeader(msg[smb2.HeaderSize:])
	if err != nil || int(req.Length) < min || req.Channel != 0 {
		return 0, 0, false, false
	}
	off := int(binary.LittleEndian.Uint16(msg[smb2.HeaderSize+2:]))
	if off < smb2.HeaderSize+48 || off+int(req.Length) != len(msg) {
		return 0, 0, false, false
	}
	return off, req.FileID.Persistent, h.Flags&smb2.FlagSigned != 0, true
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

// WriteExchange is the arrival node's side of a RemoteWrite.
type WriteExchange interface {
	// Next returns what the home node asks next.
	Next() (WriteStep, error)
	// Written answers a Write step.
	Written(n int, err error) error
	// SendData sends part of the payload, answering a SendData step.
	SendData(p []byte) error
	// Close ends the exchange.
	Close()
}

// WriteStep is one ask of the home node in a RemoteWrite.
type WriteStep struct {
	// Write: write the payload's first N bytes at Off of the file (FileID
	// Inode); Sync: flush them to stable storage before answering.
	Write bool
	Inode uint64
	Off   int64
	N     int
	Sync  bool
	// SendData: send the payload.
	SendData bool
	// The end: the home node answered the WRITE through the relay, or
	// the arrival node is to send it through the relay.
	Answered, Forward bool
}

// serveRemoteWrite sends the home node the WRITE in frame (its payload at
// dataOff) and does what it asks; forward sends a frame through the
// relay. An error ends the connection.
func (c *conn) serveRemoteWrite(rl Relay, rf *remoteFiles, frame, msg []byte, dataOff int, fid uint64, sealed, verified bool, forward func([]byte) error) error {
	var h smb2.Header
	h.Decode(msg) // remoteWritable decoded it
	pf := c.remoteFile(rl, rf, &h, fid, true)
	defer rf.release(pf)
	if pf == nil || pf.f == nil {
		return forward(frame) // served by the home node, as a small WRITE
	}
	data := msg[dataOff:]
	x, err := rl.RemoteWrite(c.ctx, msg[:dataOff], len(data), pf.id, sealed, verified)
	if err != nil {
		return err
	}
	defer x.Close()
	for {
		st, err := x.Next()
		switch {
		case err != nil:
			return err
		case st.Forward:
			return forward(frame)
		case st.Answered:
			return nil
		case st.SendData:
			for p := data; len(p) > 0; {
				k := min(len(p), 1<<20)
				if err := x.SendData(p[:k]); err != nil {
					return err
				}
				p = p[k:]
			}
		case st.Write:
			if st.N > len(data) || st.Inode != pf.id {
				if err := x.Written(0, errors.New("not this WRITE's payload or file")); err != nil {
					return err
				}
				continue
			}
			if !c.srv.cfg.Control.Valid() {
				return dropError{errFenced} // a fenced node writes nothing (cluster.go)
			}
			n, werr := pf.f.WriteAt(data[:st.N], st.Off)
			if werr == nil && st.Sync {
				// Write-through ([MS-SMB2] 3.3.5.13): on the descriptor
				// that wrote, before the home node answers.
				werr = pf.f.Sync()
			}
			if n > 0 && (!st.Sync || werr != nil) {
				rf.wrote(pf)
			}
			if werr == nil {
				c.srv.remoteWrites.Add(1)
				c.srv.cfg.Metrics.HandoffMoved(true, n)
			}
			if err := x.Written(n, werr); err != nil {
				return err
			}
		}
	}
}
