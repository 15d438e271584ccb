package server

import (
	"bytes"
	"context"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"io"

	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/signing"
)

// READs of a handed-over channel served by the node its client is
// connected to.
//
// A channel handed to its session's home node (handoff.go) would send
// every byte it reads through the home node. Instead, the arrival node
// offers each large plain READ to the home node out of band
// (Relay.RemoteRead): the home node runs the request exactly as if it had
// read it from the connection — credits, signature, session, tree, open,
// access, byte-range locks, the range the file has — up to the point
// where the bytes would move, and answers with the response's header and
// the file range. The arrival node then sends the header and the bytes
// from its own descriptor of the same file, opened through its own share
// (remotefile.go; sendfile, or read and signed or sealed with the
// session's keys). The bytes thus leave through the node the client is
// connected to, and the home node does no I/O for them. What the home
// node answers otherwise (an error, a file the arrival node has not) it
// sends through the relay itself; a READ of a file the arrival node
// could not open goes through the relay, as a small one.

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
// connected to (Relay.SessionKeys).
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

// sealKeys are what the arrival node needs of an encrypting session: open
// its sealed requests, seal the READ responses it sends (with nonces of
// its own: both nodes draw random ones).
type sealKeys struct {
	id       uint64
	enc, dec cipher.AEAD
	nonces   *signing.NonceSource
}

// sessionKeys are what the arrival node knows of a session its connection
// is a channel of: its sealing keys (nil unless it encrypts) and the
// channel's signer (nil unless it has one).
type sessionKeys struct {
	seal   *sealKeys
	signer signing.Signer
}

// keysFor returns session sid's keys, asked of the home node once; nil
// when the connection is no channel of it.
func (rf *remoteFiles) keysFor(ctx context.Context, rl Relay, sid uint64) *sessionKeys {
	rf.mu.Lock()
	sk, known := rf.keys[sid]
	rf.mu.Unlock()
	if known {
		return sk
	}
	ctx, cancel := context.WithTimeout(ctx, handoffWait) // a stopped home node does not hold the reader
	k, err := rl.SessionKeys(ctx, sid)
	cancel()
	if err != nil {
		return nil // asked again next time
	}
	if k.OK {
		sk = &sessionKeys{}
		if len(k.ServerIn) > 0 {
			enc, err1 := signing.NewCipher(k.Cipher, k.ServerOut)
			dec, err2 := signing.NewCipher(k.Cipher, k.ServerIn)
			if err1 == nil && err2 == nil {
				sk.seal = &sealKeys{id: sid, enc: enc, dec: dec, nonces: signing.NewNonceSource()}
			}
		}
		if len(k.ChannelKey) > 0 {
			sk.signer, _ = signing.NewSigner(k.ChannelAlg, k.ChannelKey)
		}
	}
	rf.mu.Lock()
	rf.keys[sid] = sk
	rf.mu.Unlock()
	return sk
}

// verifySigned reports whether msg, a plain signed message, verifies with
// its session's channel key on this connection.
func (c *conn) verifySigned(rl Relay, rf *remoteFiles, msg []byte) bool {
	sk := rf.keysFor(c.ctx, rl, binary.LittleEndian.Uint64(msg[40:]))
	return sk != nil && sk.signer != nil && sk.signer.Verify(msg)
}

// openSealed opens msg, a sealed message of a handed-over channel, when it
// may be a READ or WRITE to serve here (a READ request is small, a WRITE
// large); it returns the plain message and the session's keys, or nil.
func (c *conn) openSealed(rl Relay, rf *remoteFiles, msg []byte) ([]byte, *sealKeys) {
	if len(msg) > 512 && len(msg) < c.srv.cfg.HandoffIOMin {
		return nil, nil
	}
	sid, err := signing.ParseTransformHeader(msg)
	if err != nil {
		return nil, nil
	}
	keys := rf.keysFor(c.ctx, rl, sid)
	if keys == nil || keys.seal == nil {
		return nil, nil
	}
	plain, err := signing.Open(nil, keys.seal.dec, msg)
	if err != nil {
		return nil, nil // the home node refuses it
	}
	return plain, keys.seal
}

// remoteReadable reports whether msg, a message a handed-over channel's
// client sent, is a READ to offer the home node, and the FileId it reads.
func remoteReadable(msg []byte, min int) (uint64, bool) {
	var h smb2.Header
	if len(msg) < smb2.HeaderSize || binary.LittleEndian.Uint32(msg) != smb2.ProtocolID || h.Decode(msg) != nil ||
		h.Command != smb2.CmdRead || h.NextCommand != 0 || h.Flags&smb2.FlagRelatedOperations != 0 {
		return 0, false
	}
	var req smb2.ReadRequest
	if req.Decode(msg) != nil || int(req.Length) < min || req.Channel != 0 {
		return 0, false
	}
	return req.FileID.Persistent, true
}

// plainClose reports whether msg is a lone plaintext CLOSE, and of which
// FileId.
func plainClose(msg []byte) (uint64, bool) {
	var h smb2.Header
	if len(msg) < smb2.HeaderSize || binary.LittleEndian.Uint32(msg) != smb2.ProtocolID || h.Decode(msg) != nil ||
		h.Command != smb2.CmdClose || h.NextCommand != 0 {
		return 0, false
	}
	var req smb2.CloseRequest
	if req.Decode(msg) != nil {
		return 0, false
	}
	return req.FileID.Persistent, true
}

// serveRemoteRead offers the home node the READ in frame and sends what
// it answers; forward sends a frame through the relay. An error ends the
// connection.
func (c *conn) serveRemoteRead(rl Relay, rf *remoteFiles, frame, msg []byte, fid uint64, sk *sealKeys, forward func([]byte) error) error {
	var h smb2.Header
	h.Decode(msg) // remoteReadable decoded it
	pf := c.remoteFile(rl, rf, &h, fid, false)
	defer rf.release(pf)
	if pf == nil || pf.f == nil {
		return forward(frame) // served by the home node, as a small READ
	}
	rr, err := rl.RemoteRead(c.ctx, msg, pf.id, sk != nil)
	switch {
	case err != nil:
		return err
	case rr.Forward:
		return forward(frame)
	case rr.Answered:
		return nil
	case len(rr.Head) < smb2.HeaderSize+16:
		return errors.New("handoff: short READ response header")
	case rr.Seal && sk == nil:
		return errors.New("handoff: a sealed response to a plain request")
	}
	signed := binary.LittleEndian.Uint32(rr.Head[16:])&smb2.FlagSigned != 0
	if ff, ok := pf.f.(FdFile); ok && !signed && c.raw != nil && pf.share.PageCacheReads() {
		head := make([]byte, 4+len(rr.Head))
		copy(head[4:], rr.Head)
		smb2.PutTransportHeader(head, len(rr.Head)+rr.N)
		// The descriptor is held (pf) for the sendfile: a CLOSE of the
		// open going by (drop) cannot close it, and so let its number be
		// reused by another file, while its bytes are being sent.
		c.srv.remoteReads.Add(1) // before the client can see the response
		c.srv.cfg.Metrics.HandoffMoved(false, rr.N)
		c.wmu.Lock()
		defer c.wmu.Unlock()
		return c.sendHeaderAndFile(head, fileSegment{ff.Fd(), rr.Off, rr.N}, false)
	}
	data := make([]byte, rr.N)
	n, err := pf.f.ReadAt(data, rr.Off)
	if n < rr.N && err != nil && !errors.Is(err, io.EOF) {
		return c.sendRemoteError(rf, rr, sk, smb2.StatusUnexpectedIOError)
	}
	data = data[:n]
	binary.LittleEndian.PutUint32(rr.Head[smb2.HeaderSize+4:], uint32(n)) // DataLength
	c.srv.remoteReads.Add(1)
	c.srv.cfg.Metrics.HandoffMoved(false, n)
	return c.sendRemoteResponse(rf, rr, sk, rr.Head, data)
}

// sendRemoteError answers a READ the home node let this node serve with
// an error, as the home node would have.
func (c *conn) sendRemoteError(rf *remoteFiles, rr RemoteRead, sk *sealKeys, st smb2.Status) error {
	var h smb2.Header
	if err := h.Decode(rr.Head); err != nil {
		return err
	}
	h.Status = uint32(st)
	b := make([]byte, smb2.HeaderSize+errorBody.Size())
	h.Encode(b)
	errorBody.Encode(b[smb2.HeaderSize:])
	return c.sendRemoteResponse(rf, rr, sk, b, nil)
}

// sendRemoteResponse seals or signs (as the home node said) and sends a
// response made here.
func (c *conn) sendRemoteResponse(rf *remoteFiles, rr RemoteRead, sk *sealKeys, msg, data []byte) error {
	if rr.Seal {
		out := signing.Seal(make([]byte, 4, 4+signing.TransformHeaderSize+len(msg)+len(data)+16), sk.enc, sk.nonces, sk.id, msg, data)
		smb2.PutTransportHeader(out, len(out)-4)
		c.wmu.Lock()
		defer c.wmu.Unlock()
		return c.bw.Write(out)
	}
	if binary.LittleEndian.Uint32(msg[16:])&smb2.FlagSigned != 0 {
		sg, err := rf.signerFor(rr.SignAlg, rr.SignKey)
		if err != nil {
			return err
		}
		clear(msg[48:64])
		sig := sg.Sign(msg, data)
		copy(msg[48:64], sig[:])
	}
	nb := make([]byte, 4)
	smb2.PutTransportHeader(nb, len(msg)+len(data))
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.bw.Writev([][]byte{nb, msg, data})
}

// fileSegment is a READ's bytes in a file, for sendHeaderAndFile.
type fileSegment struct {
	fd  uintptr
	off int64
	n   int
}

func (s fileSegment) Size() int                               { return 0 }
func (s fileSegment) Encode([]byte)                           {}
func (s fileSegment) Segment() (fd uintptr, off int64, n int) { return s.fd, s.off, s.n }
func (s fileSegment) Release()                                {}

// signerFor returns the channel's signer, made once.
func (rf *remoteFiles) signerFor(alg uint16, key []byte) (signing.Signer, error) {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	if rf.signer == nil || !bytes.Equal(rf.key, key) {
		sg, err := signing.NewSigner(alg, key)
		if err != nil {
			return nil, err
		}
		rf.signer, rf.key = sg, append([]byte(nil), key...)
	}
	return rf.signer, nil
}
