package server

import (
	"github.com/smbcluster/smbcluster/node/smb2"
)

// READs of a handed-over channel served by the node its client is
// connected to, as the home node runs them.
//
// A channel handed to its session's home node (handoff.go) would send
// every byte it reads through the home node. Instead, the arrival node
// (node/handoff) offers each large plain READ to the home node out of band:
// ServeRemoteRead runs the request exactly as if it had read it from the
// connection — credits, signature, session, tree, open, access, byte-range
// locks, the range the file has — up to the point where the bytes would
// move, and answers with the response's header and the file range. The
// arrival node then sends the header and the bytes from its own
// descriptor of the same file, opened through its own share (sendfile, or
// read and signed or sealed with the session's keys: SessionKeys). What
// the home node answers otherwise (an error, a file the arrival node has
// not) it sends through the relay itself.

// remoteIOMin is the default of Config.HandoffIOMin: the smallest READ
// the arrival node offers to serve, and the smallest WRITE payload it
// keeps. Below it the out-of-band call costs more time than carrying the
// bytes through the relay, and saves little bandwidth between nodes
// (BenchmarkHandedOverIO, one request at a time over loopback: a 4 KiB
// READ took 120–125 µs through the relay against 168–184 µs out of band,
// 16 KiB 191–198 against 273–296 µs; a WRITE, a stream of its own, costs
// more still: 4 KiB 160–174 against 253–300 µs). From 32 KiB on, a node's
// link carries its own clients' bytes only (make bench-scaleout).
const remoteIOMin = 32 << 10

// RemoteRead is the home node's answer to a READ the arrival node offers
// to serve.
type RemoteRead struct {
	// Forward: send the request through the relay (nothing was counted).
	Forward bool
	// Answered: the home node answered through the relay.
	Answered bool
	// Otherwise: Head (SMB2 header and READ response body, unsigned,
	// SMB2_FLAGS_SIGNED set when it is to be signed with SignKey) is
	// followed by N bytes of the file at Off.
	Head    []byte
	Inode   uint64
	Off     int64
	N       int
	SignAlg uint16
	SignKey []byte
	// Seal: the response is encrypted with the session's key (the
	// request came sealed).
	Seal bool
}

// SessionKeys are a session's keys, for the node a channel's client is
// connected to (Adopted.SessionKeys).
type SessionKeys struct {
	OK                  bool // the connection is a channel of the session
	Dialect, Cipher     uint16
	ServerIn, ServerOut []byte // empty: the session does not encrypt
	ChannelAlg          uint16 // the channel's signing algorithm and key
	ChannelKey          []byte
}

// remoteRead is what the READ handler leaves for ServeRemoteRead.
type remoteRead struct {
	fileID uint64 // the file the arrival node opened for the open
	taken  bool
	inode  uint64
	off    int64
	n      int
}

// take answers a READ whose bytes the arrival node sends: it reports
// false when the arrival node has not the open's file (the home node
// reads it itself then).
func (rr *remoteRead) take(h FileReader, fr FileRange) (Response, bool, error) {
	pf, ok := h.(PeerFiler)
	if !ok {
		return nil, false, nil
	}
	p, ok := pf.PeerFile()
	if !ok || p.ID == 0 || p.ID != rr.fileID {
		return nil, false, nil
	}
	n := 0
	if fr.Off < p.Size {
		n = int(min(int64(fr.N), p.Size-fr.Off))
	}
	if n == 0 || uint32(n) < fr.Min {
		return nil, true, smb2.StatusEndOfFile
	}
	rr.taken, rr.inode, rr.off, rr.n = true, p.ID, fr.Off, n
	h.ReadDone(fr.Off + int64(n))
	return &readPayload{ReadResponse: smb2.ReadResponse{DataOffset: 0x50, DataLength: uint32(n)}}, true, nil
}

// Adopted is a connection another node handed over, as its home node
// holds it.
type Adopted struct{ c *conn }

// ServeRemoteRead runs a READ the arrival node offers to serve from its
// own descriptor (see above). pdu is the request as the client sent it;
// fileID the FileID of the file the arrival node opened for its open
// (RemoteFile).
func (a *Adopted) ServeRemoteRead(pdu []byte, fileID uint64, sealed bool) RemoteRead {
	c := a.c
	var h smb2.Header
	if h.Decode(pdu) != nil || h.Command != smb2.CmdRead || h.NextCommand != 0 || h.Flags&smb2.FlagRelatedOperations != 0 ||
		c.ctx.Err() != nil {
		return RemoteRead{Forward: true}
	}
	m, s, ok := c.remoteRequest(&h, pdu, false, sealed)
	if m == nil {
		return RemoteRead{Forward: !ok, Answered: ok}
	}
	var enc *Session
	if sealed {
		enc = s
	}
	rr := &remoteRead{fileID: fileID}
	r := &m.req
	if sealed {
		r.disp |= dispEncrypted
	} else {
		r.disp |= dispSingle
	}
	r.remote = rr
	res, err := c.serveOne(r, &m.st, enc)
	if err != nil {
		c.close()
		return RemoteRead{Answered: true}
	}
	if !rr.taken || res.hdr.Status != 0 || res.encrypt != nil && res.encrypt != enc || res.onEncoded != nil {
		c.writeResults([]result{res})
		return RemoteRead{Answered: true}
	}
	out := RemoteRead{Head: make([]byte, smb2.HeaderSize+res.body.Size()), Inode: rr.inode, Off: rr.off, N: rr.n,
		Seal: res.encrypt != nil}
	if res.signer != nil && !out.Seal {
		res.hdr.Flags |= smb2.FlagSigned
		ch := s.channelFor(c)
		if ch == nil || ch.signKey == nil {
			c.writeResults([]result{res}) // cannot hand the key over: read here
			return RemoteRead{Answered: true}
		}
		out.SignAlg, out.SignKey = ch.signAlg, append([]byte(nil), ch.signKey...)
	}
	res.hdr.Encode(out.Head)
	res.body.Encode(out.Head[smb2.HeaderSize:])
	releaseBody(res.body)
	return out
}

// SessionKeys returns the keys of session sid for the node the
// connection's client is connected to: only of a session the connection
// is a channel of; its encryption keys when it encrypts, the channel's
// signing key when it has one.
func (a *Adopted) SessionKeys(sid uint64) SessionKeys {
	s := a.c.srv.lookupSession(sid)
	if s == nil || !s.valid() {
		return SessionKeys{}
	}
	ch := s.channelFor(a.c)
	if ch == nil {
		return SessionKeys{}
	}
	k := SessionKeys{OK: true, Dialect: s.Dialect, Cipher: s.Cipher}
	if s.encrypter != nil && len(s.Keys.ServerIn) > 0 {
		k.ServerIn, k.ServerOut = s.Keys.ServerIn, s.Keys.ServerOut
	}
	if ch.signer != nil && ch.signKey != nil {
		k.ChannelAlg, k.ChannelKey = ch.signAlg, ch.signKey
	}
	return k
}

// remoteRequest prepares a request another node read from a handed-over
// connection, as the read loop would have: it counts its credits and its
// arrival. It returns nil and false when the request is to go through
// the relay instead (an encrypted session or tree when the request came
// in plain; with unsigned, a plain request of a session that requires
// signing, since the signature cannot be checked without the payload —
// nothing is counted then), nil and true when the connection ended over
// it. sealed: the arrival node opened the request with the session's key.
func (c *conn) remoteRequest(h *smb2.Header, msg []byte, unsigned, sealed bool) (*message, *Session, bool) {
	s := c.srv.lookupSession(h.SessionID)
	switch {
	case s == nil, !sealed && unsigned && s.SigningRequired:
		return nil, nil, false
	case sealed:
		if ch := s.channelFor(c); ch == nil || s.encrypter == nil {
			return nil, nil, false
		}
	case s.EncryptData:
		return nil, nil, false
	}
	if t := s.tree(h.TreeID); t == nil || t.EncryptData && !sealed {
		return nil, nil, false
	}
	if err := c.charge(h); err != nil {
		c.srv.log.Info("dropping connection", "remote", c.remote, "err", err)
		c.close()
		return nil, nil, true
	}
	c.arrive([]smb2.Header{*h})
	m := new(message)
	m.req = Request{Header: *h, Msg: msg, conn: c, disp: dispLast | dispLone}
	return m, s, true
}
