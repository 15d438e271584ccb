package server

import (
	"context"
	"errors"
	"net"
	"sync"

	"github.com/smbcluster/smbcluster/node/smb2"
)

// compoundState carries what a related operation inherits from the
// previous operation of its compound ([MS-SMB2] 3.3.5.2.7.2).
type compoundState struct {
	session   *Session
	tree      *Tree
	fileID    smb2.FileID
	haveFile  bool
	createErr error // a failed CREATE fails the related operations after it
	// earlier holds the responses of the operations before the current
	// one; GoAsync of the last operation sends them with its interim
	// response and sets flushed.
	earlier []result
	flushed bool
}

// result is one response of a compound, ready to be encoded.
type result struct {
	hdr       smb2.Header
	body      Response
	signer    signingKey
	encrypt   *Session
	onEncoded func(pdu []byte)
	open      *Open // reference held until the response is written (sendfile)
	// inline: written by the read loop, which may hold it back while more
	// requests wait in its buffer (conn.send).
	inline bool
}

// signingKey is whatever signs a response; nil when the response is unsigned.
type signingKey interface {
	Sign(msg ...[]byte) [16]byte
}

var errorBody = &smb2.ErrorResponse{}

// errOffload is what serveCompound answers for a lone request of the read
// loop whose handler would block (ErrWouldBlock): dispatch serves it again
// on a goroutine.
var errOffload = errors.New("request handed off the read loop")

// message is what serving one message needs on the heap.
type message struct {
	st      compoundState
	results [1]result
	req     Request // the first
}

// serveCompound serves the PDUs of one message in order and writes their
// responses as one message.
// inline is true when the read loop itself serves the message: nothing
// read later can overtake it or CANCEL it while it runs.
func (c *conn) serveCompound(pdus [][]byte, hdrs []smb2.Header, enc *Session, inline bool, sp *Spliced) error {
	// The state, the results and a lone request are one allocation.
	m := new(message)
	st := &m.st
	results := m.results[:0]
	for i, p := range pdus {
		r := &m.req
		if i > 0 {
			r = new(Request)
		}
		// A related first request has nothing to relate to: it fails, as do
		// the related requests after any request that resolved no session.
		*r = Request{Header: hdrs[i], Msg: p, conn: c, disp: dispositionOf(&hdrs[i], i, len(pdus), enc != nil, inline)}
		r.spliced = sp // a spliced WRITE is a lone PDU
		st.earlier = results
		res, err := c.serveOne(r, st, enc)
		if err != nil {
			return err // errOffload: nothing was answered yet
		}
		results = append(results, res)
	}
	if st.flushed {
		// The earlier responses went out with the interim response.
		results = results[len(results)-1:]
	}
	results[len(results)-1].inline = inline
	c.writeResults(results)
	return nil
}

// serveOne runs the checks of the command table, then the handler, and
// makes its response.
func (c *conn) serveOne(r *Request, st *compoundState, enc *Session) (result, error) {
	h := &r.Header
	res := newResult(h, enc)
	start := c.begin() // metrics.go
	defer c.srv.cfg.Metrics.Finished()
	if r.disp.inline() {
		// Served by the read loop: no CANCEL can arrive while it runs, so
		// the connection's context will do (and saves its allocations).
		r.Ctx = c.ctx
	} else {
		defer c.uncancellable(h.MessageID, c.cancellable(r))
	}
	body, err := c.run(r, st, enc)
	r.doneChannelSequence()
	if err == ErrWouldBlock {
		r.releaseOpen()
		if r.disp.inline() && r.disp.lone() {
			return res, errOffload
		}
		err = smb2.StatusInternalError // a handler that ignored MayWait
	}
	if _, ok := body.(SendfileResponse); ok && err == nil && r.openHeld {
		res.open, r.openHeld = r.Open, false
	}
	r.releaseOpen()
	res.protect(r, err)
	res.onEncoded = r.onEncoded
	if err != nil && errors.As(err, new(dropError)) {
		return res, err
	}
	st.follow(r, err)
	status := res.setBody(body, err)
	c.setCredits(r, &res)
	if err != nil {
		c.srv.log.Debug("request failed", "cmd", h.Command.String(), "mid", h.MessageID, "sid", h.SessionID, "status", status.String(), "err", err)
	}
	c.observe(r, &res, status, start)
	return res, nil
}

// cancellable gives r a context that CANCEL and the connection's end
// cancel, and returns its cancel function.
func (c *conn) cancellable(r *Request) context.CancelFunc {
	ctx, cancel := context.WithCancel(c.ctx)
	r.Ctx = ctx
	c.trackPending(r.Header.MessageID, cancel)
	return cancel
}

// uncancellable ends what cancellable began, once the request with
// message id mid has its response.
func (c *conn) uncancellable(mid uint64, cancel context.CancelFunc) {
	c.untrackPending(mid)
	cancel()
}

// newResult starts the response to the request h; enc is the session
// whose key decrypted the request, which encrypts the response.
func newResult(h *smb2.Header, enc *Session) result {
	res := result{hdr: smb2.Header{
		Command:      h.Command,
		CreditCharge: h.CreditCharge,
		Flags:        smb2.FlagServerToRedir | h.Flags&smb2.FlagRelatedOperations,
		MessageID:    h.MessageID,
		SessionID:    h.SessionID,
		TreeID:       h.TreeID,
	}}
	if enc != nil {
		res.encrypt = enc
	}
	return res
}

// protect fills in the ids of the session and tree r resolved and how the
// response is protected: sealed with the session's key, signed
// ([MS-SMB2] 3.3.4.1.1), or with the request's signature echoed
// (echoesSignature).
func (res *result) protect(r *Request, err error) {
	h := &r.Header
	if r.Session != nil {
		res.hdr.SessionID = r.Session.ID
		if res.encrypt == nil && r.Session.EncryptData && h.Command != smb2.CmdSessionSetup {
			res.encrypt = r.Session
		}
		if res.encrypt == nil && r.Tree != nil && r.Tree.EncryptData && r.Session.encrypter != nil && h.Command != smb2.CmdTreeConnect {
			res.encrypt = r.Session
		}
		if res.encrypt == nil && r.bindSigner != nil {
			res.signer = r.bindSigner
		} else if res.encrypt == nil && r.signResponse() {
			res.signer = r.signer()
		}
	}
	if r.Tree != nil {
		res.hdr.TreeID = r.Tree.ID
	}
	if res.signer == nil && res.encrypt == nil && h.Flags&smb2.FlagSigned != 0 && echoesSignature(h.Command, statusOf(err)) {
		res.hdr.Flags |= smb2.FlagSigned
		res.hdr.Signature = h.Signature
	}
}

// follow records what the operation after r in its compound inherits
// from it ([MS-SMB2] 3.3.5.2.7.2).
func (st *compoundState) follow(r *Request, err error) {
	st.session, st.tree = r.Session, r.Tree
	st.haveFile = r.Open != nil // a related request takes the previous request's open, or none
	if r.Open != nil {
		st.fileID = smb2.FileID{Persistent: r.Open.ID, Volatile: r.Open.ID}
	}
	if r.Header.Command == smb2.CmdCreate {
		st.createErr = err
	}
}

// setBody sets the response's status from err and its body: the
// handler's, or the error response. It returns the status.
func (res *result) setBody(body Response, err error) smb2.Status {
	status := statusOf(err)
	res.hdr.Status = uint32(status)
	switch {
	case status == smb2.StatusSuccess:
		res.body = body
	case body != nil && (status == smb2.StatusMoreProcessingRequired || status == smb2.StatusBufferOverflow || status.IsWarning()):
		res.body = body
	case body != nil && res.open == nil:
		// Some errors carry a body: an IOCTL's limits with
		// STATUS_INVALID_PARAMETER (copychunk), the size with
		// STATUS_BUFFER_TOO_SMALL.
		res.body = body
	default:
		releaseBody(body)
		if res.open != nil {
			res.open.release()
			res.open = nil
		}
		res.body = errorBody
	}
	return status
}

// setCredits grants the response's credits, or marks it as the final
// response of an async request, whose interim response granted them.
func (c *conn) setCredits(r *Request, res *result) {
	if r.asyncID != 0 {
		res.hdr.Flags |= smb2.FlagAsyncCommand
		res.hdr.AsyncID = r.asyncID
		c.untrackAsync(r.asyncID)
	} else {
		res.hdr.Credits = c.grantFor(&r.Header)
	}
}

// run resolves the session, tree and open the command table asks for,
// checks signing, encryption, sizes and the credit charge, and calls the
// handler.
func (c *conn) run(r *Request, st *compoundState, enc *Session) (Response, error) {
	h := &r.Header
	if int(h.Command) >= len(commands) || commands[h.Command].serve == nil {
		return nil, smb2.StatusInvalidParameter
	}
	cmd := &commands[h.Command]
	if cmd.sessionless != nil && h.SessionID == 0 && !r.disp.related() && cmd.sessionless(r.Msg) {
		r.compound = st
		return cmd.serve(c, r)
	}
	if r.disp.related() && (cmd.needSession && st.session == nil || cmd.needTree && st.tree == nil) {
		return nil, smb2.StatusInvalidParameter
	}
	if cmd.needSession {
		sid := h.SessionID
		if r.disp.related() {
			sid = st.session.ID
		}
		s, err := c.resolveSession(sid)
		if err != nil {
			return nil, err
		}
		r.Session = s
		if err := c.checkProtection(r, enc); err != nil {
			return nil, err
		}
	}
	if cmd.needTree {
		tid := h.TreeID
		if r.disp.related() {
			tid = st.tree.ID
		}
		t := r.Session.tree(tid)
		if t == nil {
			return nil, smb2.StatusNetworkNameDeleted
		}
		r.Tree = t
		if t.EncryptData && enc == nil && r.Session.encrypter != nil {
			return nil, smb2.StatusAccessDenied
		}
	}
	r.compound = st
	if err := c.prepare(r, cmd); err != nil {
		return nil, err
	}
	return cmd.serve(c, r)
}

// resolveSession finds a valid session bound to this connection.
func (c *conn) resolveSession(id uint64) (*Session, error) {
	s := c.srv.lookupSession(id)
	if s == nil {
		return nil, smb2.StatusUserSessionDeleted
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.state == sessionExpired:
		return nil, smb2.StatusNetworkSessionExpired
	case s.state != sessionValid:
		return nil, smb2.StatusUserSessionDeleted
	case s.channels[c] == nil || s.channels[c].signer == nil && s.channels[c].binding:
		return nil, smb2.StatusUserSessionDeleted
	}
	return s, nil
}

// checkProtection enforces signing and encryption on a request of a session
// ([MS-SMB2] 3.3.5.2.4, 3.3.5.2.9).
func (c *conn) checkProtection(r *Request, enc *Session) error {
	s := r.Session
	if enc != nil {
		if enc != s {
			return smb2.StatusAccessDenied
		}
		return nil
	}
	if s.EncryptData && s.encrypter != nil && c.dialect >= smb2.Dialect300 {
		return smb2.StatusAccessDenied
	}
	if r.Header.Flags&smb2.FlagSigned != 0 {
		if r.disp.verified() {
			return nil
		}
		ch := s.channelFor(c)
		if ch == nil || ch.signer == nil || !ch.signer.Verify(r.Msg) {
			return smb2.StatusAccessDenied
		}
		return nil
	}
	if s.SigningRequired && !s.Guest && !s.Anonymous {
		return smb2.StatusAccessDenied
	}
	return nil
}

// signResponse reports whether the response to r is signed ([MS-SMB2] 3.3.4.1.1).
func (r *Request) signResponse() bool {
	s := r.Session
	if s == nil || s.Guest || s.Anonymous || r.forceSign {
		return r.forceSign
	}
	if !s.valid() {
		return false
	}
	return r.Header.Flags&smb2.FlagSigned != 0 || s.SigningRequired
}

func (r *Request) signer() signingKey {
	if ch := r.Session.channelFor(r.conn); ch != nil && ch.signer != nil {
		return ch.signer
	}
	return nil
}

// tree returns the session's tree connect id, or nil.
func (s *Session) tree(id uint32) *Tree {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.trees[id]
}

// releaseBody frees the buffers a response body holds.
func releaseBody(b Response) {
	switch p := b.(type) {
	case PayloadResponse:
		p.Release()
	case SendfileResponse:
		p.Release()
	}
}

// writeResults encodes, signs, encrypts and queues the responses of one message.
func (c *conn) writeResults(rs []result) {
	if len(rs) == 1 && c.writeLone(&rs[0]) {
		return
	}
	for i := range rs {
		if sf, ok := rs[i].body.(SendfileResponse); ok {
			// Signed, sealed or compounded after all: read the data instead.
			rs[i].body = bufferSendfile(sf)
		}
	}
	b, parts, w := encodeResults(rs)
	inline := rs[len(rs)-1].inline
	if enc := rs[0].encrypt; enc != nil && enc.encrypter != nil {
		sealed := enc.seal(parts, b)
		w.release()
		sealed.inline = inline
		c.send(sealed)
		return
	}
	total := 0
	for _, p := range parts {
		total += len(p)
	}
	smb2.PutTransportHeader(b, total-4)
	c.send(frame{parts: net.Buffers(parts), w: w, inline: inline})
}

// writeLone writes a lone response without copying its data when it can:
// sealed or signed in its payload's buffer, or sent from its file
// (sendfile). It reports whether it wrote res.
func (c *conn) writeLone(res *result) bool {
	if res.encrypt != nil && res.encrypt.encrypter != nil {
		if p, ok := res.body.(inPlacePayload); ok && c.writeSealedInPlace(res, p) {
			return true
		}
	}
	if res.signer != nil && res.encrypt == nil && res.onEncoded == nil {
		if p, ok := res.body.(inPlacePayload); ok && c.writeSignedInPlace(res, p) {
			return true
		}
	}
	if res.signer == nil && res.encrypt == nil {
		if sf, ok := res.body.(SendfileResponse); ok {
			c.writeSendfile(res, sf)
			return true
		}
	}
	return false
}

// encodeResults encodes rs as one message into a pooled buffer b, after
// room for the transport header, and returns b, the message's parts
// (parts[0] begins at b[0], with the header) and what they refer to.
func encodeResults(rs []result) ([]byte, [][]byte, *written) {
	buf := getBuf(4 + messageSize(rs))
	b := *buf
	w := newWritten(buf)
	parts := w.partsArr[:0]
	off := 4
	for i := range rs {
		off, parts = encodeResult(&rs[i], b, off, parts, w, len(rs) > 1, i < len(rs)-1)
	}
	// parts[0] begins at b[4]; prepend the NetBIOS header.
	parts[0] = b[0 : len(parts[0])+4]
	return b, parts, w
}

// messageSize is the size of rs encoded, payloads aside.
func messageSize(rs []result) int {
	size := 0
	for i := range rs {
		n := smb2.HeaderSize + rs[i].body.Size()
		if len(rs) > 1 {
			n = (n + 7) &^ 7
		}
		size += n
	}
	return size
}

// encodeResult encodes res at b[off:], appends its parts to parts and
// returns the offset after it with them; w holds its payload and open.
// Every response of a compound is padded to 8 bytes, the last one too,
// as Windows does (smbtorture smb2.compound.compound-padding); chained:
// another response follows it.
func encodeResult(res *result, b []byte, off int, parts [][]byte, w *written, compound, chained bool) (int, [][]byte) {
	start := off
	bodyLen := res.body.Size()
	var payload []byte
	if p, ok := res.body.(PayloadResponse); ok {
		payload = p.Payload()
		w.payloads = append(w.payloads, p)
	}
	w.hold(res.open)
	pduLen := smb2.HeaderSize + bodyLen + len(payload)
	pad := 0
	if compound {
		pad = (8 - pduLen%8) % 8
	}
	if chained {
		res.hdr.NextCommand = uint32(pduLen + pad)
	}
	if res.signer != nil {
		res.hdr.Flags |= smb2.FlagSigned
	}
	res.hdr.Encode(b[off:])
	res.body.Encode(b[off+smb2.HeaderSize : off+smb2.HeaderSize+bodyLen])
	off += smb2.HeaderSize + bodyLen
	if payload == nil {
		// Keep the pad contiguous with the body when there is no payload.
		clear(b[off : off+pad])
		off += pad
		parts = append(parts, b[start:off])
	} else {
		parts = append(parts, b[start:off], payload)
		if pad > 0 {
			parts = append(parts, padZeros[:pad])
		}
	}
	res.encoded(parts, start, b)
	return off, parts
}

// encoded signs res, encoded at b[start:] and ending parts, and shows it
// to res.onEncoded.
func (res *result) encoded(parts [][]byte, start int, b []byte) {
	if res.signer != nil {
		pdu := collect(parts, start, b)
		sig := res.signer.Sign(pdu...)
		copy(b[start+48:start+64], sig[:])
	}
	if res.onEncoded != nil {
		res.onEncoded(flatten(collect(parts, start, b)))
	}
}

// padZeros pads compound responses to 8 bytes; never written to.
var padZeros [8]byte

// written holds what an encoded message refers to until it is written:
// its buffer, the payloads, the file of a sendfile READ and the opens of
// its responses. Every frame carries one; pooled, so that a response
// costs no allocation for its bookkeeping.
type written struct {
	buf      *[]byte   // may be nil
	partsArr [4][]byte // parts of a lone response with a payload and pad
	payloads []PayloadResponse
	file     SendfileResponse
	opens    []*Open
}

var writtenPool = sync.Pool{New: func() any {
	return &written{payloads: make([]PayloadResponse, 0, 2), opens: make([]*Open, 0, 2)}
}}

// newWritten returns a pooled written holding buf.
func newWritten(buf *[]byte) *written {
	w := writtenPool.Get().(*written)
	w.buf = buf
	return w
}

// hold adds open o, if any, to what w releases.
func (w *written) hold(o *Open) {
	if o != nil {
		w.opens = append(w.opens, o)
	}
}

// release frees the buffers and opens and returns w to its pool.
func (w *written) release() {
	putBuf(w.buf)
	for _, p := range w.payloads {
		p.Release()
	}
	if w.file != nil {
		w.file.Release()
	}
	for _, o := range w.opens {
		o.release()
	}
	clear(w.partsArr[:])
	clear(w.payloads)
	clear(w.opens)
	*w = written{payloads: w.payloads[:0], opens: w.opens[:0]}
	writtenPool.Put(w)
}

// collect returns the parts that make up the PDU starting at start in b.
func collect(parts [][]byte, start int, b []byte) [][]byte {
	for i := len(parts) - 1; i >= 0; i-- {
		if len(parts[i]) > 0 && &parts[i][0] == &b[start] {
			return parts[i:]
		}
	}
	return parts
}

// flatten returns the concatenation of parts.
func flatten(parts [][]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
