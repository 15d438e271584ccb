package server

import (
	"github.com/smbcluster/smbcluster/node/smb2"
)

// resolveOpen finds the open a request names, for the command table
// (command.go); in a related compound the all-ones FileId means the
// previous operation's open ([MS-SMB2] 3.3.5.2.7.2).
func (r *Request) resolveOpen(fid smb2.FileID) error {
	if fid == smb2.AnyFileID && r.disp.related() {
		st := r.compound
		if st.createErr != nil {
			return st.createErr
		}
		if !st.haveFile {
			return smb2.StatusFileClosed
		}
		fid = st.fileID
	}
	s := r.conn.srv
	s.mu.Lock()
	o := s.opens[fid.Volatile]
	// Session and Tree change under s.mu when a durable open reconnects.
	mine := o != nil && o.ID == fid.Persistent && o.Session == r.Session && o.Tree == r.Tree
	if mine {
		s.forgetCreate(o) // replay.go: the client saw the CREATE's answer
	}
	s.mu.Unlock()
	if !mine || !o.acquire() {
		return smb2.StatusFileClosed
	}
	r.Open, r.openHeld = o, true
	if !r.settleLate {
		r.conn.settle(r.Header.MessageID) // order.go: a CLOSE after it may go on
	}
	if err := r.checkChannelSequence(o); err != nil { // channelseq.go
		r.releaseOpen()
		r.Open = nil
		return err
	}
	return nil
}

// serveCreate handles SMB2 CREATE ([MS-SMB2] 3.3.5.9).
func (c *conn) serveCreate(r *Request) (Response, error) {
	var req smb2.CreateRequest
	if err := req.Decode(r.Msg); err != nil {
		return nil, smb2.StatusInvalidParameter
	}
	c.awaitEarlierBreaks(r.Ctx, r.Header.MessageID) // order.go
	dc, err := parseDurable(c.dialect, &req)        // durable.go
	if err != nil {
		return nil, err
	}
	if dc.reconnect() {
		return c.reconnectDurable(r, &req, &dc)
	}
	if resp, err := c.replayDurable(r, &req, &dc); resp != nil || err != nil {
		return resp, err
	}
	done, err := c.startCreate(r, &dc) // replay.go
	if err != nil {
		return nil, err
	}
	defer done()
	if dc.v2 && !r.disp.inline() {
		defer c.outliveConnection(r)() // replay_pending.go
	}
	c.srv.closeAppInstance(r, &req, &dc)
	if err := c.srv.admitOpen(r.Session); err != nil { // limits.go
		return nil, err
	}
	defer c.srv.unreserveOpen(r.Session)
	o := c.srv.newOpen(r.Tree, c, req.Name, req.DesiredAccess)
	o.chanSeq = r.Header.ChannelSequence()
	r.Open = o
	h, resp, err := r.Tree.Share.Backend.Create(r, &req)
	if err != nil {
		r.Open = nil
		return nil, err
	}
	c.srv.addOpen(o, h)
	resp.FileID = smb2.FileID{Persistent: o.ID, Volatile: o.ID}
	c.grantDurable(r, o, &dc, resp)
	c.rememberCreate(o, &dc, resp)
	if c.endedMeanwhile(o) { // replay_pending.go
		r.Open = nil
		return nil, smb2.StatusNetworkNameDeleted
	}
	return resp, nil
}

// serveClose handles SMB2 CLOSE ([MS-SMB2] 3.3.5.10).
func (c *conn) serveClose(r *Request) (Response, error) {
	var req smb2.CloseRequest
	if err := req.Decode(r.Msg); err != nil {
		return nil, smb2.StatusInvalidParameter
	}
	if !c.srv.removeOpen(r.Open) {
		return nil, smb2.StatusFileClosed
	}
	r.releaseOpen()
	r.Open.drain()
	resp, err := r.Open.Handle.Close(req.Flags&smb2.ClosePostQueryAttrib != 0)
	if err != nil {
		return nil, err
	}
	if resp == nil {
		resp = &smb2.CloseResponse{}
	}
	return resp, nil
}

// serveFlush handles SMB2 FLUSH ([MS-SMB2] 3.3.5.11): the handle flushes
// its file, and every other node that wrote to the open through a channel
// handed over here flushes its own descriptor (remotefile.go).
func (c *conn) serveFlush(r *Request) (Response, error) {
	var req smb2.FlushRequest
	if err := req.Decode(r.Msg); err != nil {
		return nil, smb2.StatusInvalidParameter
	}
	f, ok := r.Open.Handle.(Flusher)
	if !ok {
		return nil, smb2.StatusInvalidDeviceRequest
	}
	if err := f.Flush(r); err != nil {
		return nil, err
	}
	if err := r.Open.flushRemote(r.Ctx); err != nil {
		c.srv.log.Info("FLUSH: another node did not flush what it wrote", "file", r.Open.Name, "err", err)
		return nil, smb2.StatusUnexpectedIOError
	}
	return &smb2.FlushResponse{}, nil
}

// serveRead handles SMB2 READ ([MS-SMB2] 3.3.5.12).
func (c *conn) serveRead(r *Request) (Response, error) {
	req := &r.readReq
	if err := req.Decode(r.Msg); err != nil {
		return nil, smb2.StatusInvalidParameter
	}
	switch h := r.Open.Handle.(type) {
	case FileReader:
		return r.readFile(h, req) // fileread.go
	case Reader:
		return h.Read(r, req)
	}
	return nil, smb2.StatusInvalidDeviceRequest
}

// serveWrite handles SMB2 WRITE ([MS-SMB2] 3.3.5.13).
func (c *conn) serveWrite(r *Request) (Response, error) {
	var req smb2.WriteRequest
	var err error
	if r.spliced != nil || r.remoteWrite != nil {
		// The head only: the reader checked that the data follows it (or
		// another node holds it, remotewrite.go).
		req, err = smb2.DecodeWriteHeader(r.Msg[smb2.HeaderSize:])
	} else {
		err = req.Decode(r.Msg)
	}
	if err != nil {
		return nil, smb2.StatusInvalidParameter
	}
	var resp *smb2.WriteResponse
	switch h := r.Open.Handle.(type) {
	case FileWriter:
		resp, err = r.writeFile(h, &req) // filewrite.go
	case Writer:
		resp, err = c.writeBuffered(r, h, &req)
	default:
		return nil, smb2.StatusInvalidDeviceRequest
	}
	if err != nil {
		return nil, err // not a typed nil in the Response
	}
	return resp, nil
}

// writeBuffered gives a Writer the WRITE's payload in req.Data, read
// into a buffer if it was spliced.
func (c *conn) writeBuffered(r *Request, h Writer, req *smb2.WriteRequest) (*smb2.WriteResponse, error) {
	if rw := r.remoteWrite; rw != nil {
		buf := make([]byte, rw.n)
		if err := rw.p.ReadAll(buf); err != nil {
			return nil, err
		}
		req.Data = buf
	}
	if r.spliced != nil {
		buf, err := r.spliced.buffered()
		if err != nil {
			return nil, err
		}
		defer putBuf(buf)
		req.Data = *buf
		r.spliced = nil
	}
	return h.Write(r, req)
}

const (
	// appendOffset in a WRITE means "at end of file" for an open with
	// FILE_APPEND_DATA but not FILE_WRITE_DATA ([MS-SMB2] 3.3.5.13).
	appendOffset = ^uint64(0)
	// maxFileSize is the largest file NTFS allows (16 TiB - 64 KiB); writes
	// beyond it fail as on Windows.
	maxFileSize = 0xfffffff0000
)

// checkWriteRange refuses writes outside the offsets a Windows volume takes:
// negative offsets and ranges beyond the largest file are invalid, and a
// write that would grow a file to that size cannot be satisfied.
func checkWriteRange(off uint64, n uint32) error {
	switch {
	case off == appendOffset:
		return nil // the handler decides (append-only opens)
	case int64(off) < 0:
		return smb2.StatusInvalidParameter
	case n == 0:
		return nil
	case off+uint64(n) > maxFileSize:
		return smb2.StatusInvalidParameter
	case off+uint64(n) == maxFileSize:
		return smb2.StatusDiskFull
	}
	return nil
}

// checkCharge verifies that a multi-credit request paid for its payload
// ([MS-SMB2] 3.3.5.2.5).
func (c *conn) checkCharge(r *Request, n uint32) error {
	if c.dialect == smb2.Dialect202 {
		return nil
	}
	need := (uint64(n) + 65535) / 65536
	if need == 0 {
		need = 1
	}
	charge := uint64(r.Header.CreditCharge)
	if charge == 0 {
		charge = 1
	}
	if need > charge {
		return smb2.StatusInvalidParameter
	}
	return nil
}

// serveQueryDirectory handles SMB2 QUERY_DIRECTORY ([MS-SMB2] 3.3.5.18).
func (c *conn) serveQueryDirectory(r *Request) (Response, error) {
	var req smb2.QueryDirectoryRequest
	if err := req.Decode(r.Msg); err != nil {
		return nil, smb2.StatusInvalidParameter
	}
	h, ok := r.Open.Handle.(DirQuerier)
	if !ok {
		return nil, smb2.StatusInvalidParameter
	}
	return h.QueryDirectory(r, &req)
}

// serveQueryInfo handles SMB2 QUERY_INFO ([MS-SMB2] 3.3.5.20).
func (c *conn) serveQueryInfo(r *Request) (Response, error) {
	var req smb2.QueryInfoRequest
	if err := req.Decode(r.Msg); err != nil {
		return nil, smb2.StatusInvalidParameter
	}
	h, ok := r.Open.Handle.(InfoQuerier)
	if !ok {
		return nil, smb2.StatusNotSupported
	}
	return h.QueryInfo(r, &req)
}

// serveSetInfo handles SMB2 SET_INFO ([MS-SMB2] 3.3.5.21).
func (c *conn) serveSetInfo(r *Request) (Response, error) {
	var req smb2.SetInfoRequest
	if err := req.Decode(r.Msg); err != nil {
		return nil, smb2.StatusInvalidParameter
	}
	h, ok := r.Open.Handle.(InfoSetter)
	if !ok {
		return nil, smb2.StatusNotSupported
	}
	if err := h.SetInfo(r, &req); err != nil {
		return nil, err
	}
	return &smb2.SetInfoResponse{}, nil
}

// serveLock handles SMB2 LOCK ([MS-SMB2] 3.3.5.14).
func (c *conn) serveLock(r *Request) (Response, error) {
	var req smb2.LockRequest
	if err := req.Decode(r.Msg); err != nil {
		return nil, smb2.StatusInvalidParameter
	}
	h, ok := r.Open.Handle.(Locker)
	if !ok {
		return nil, smb2.StatusNotSupported
	}
	if err := h.Lock(r, &req); err != nil {
		return nil, err
	}
	return &smb2.LockResponse{}, nil
}

// serveChangeNotify handles SMB2 CHANGE_NOTIFY ([MS-SMB2] 3.3.5.19).
func (c *conn) serveChangeNotify(r *Request) (Response, error) {
	var req smb2.ChangeNotifyRequest
	if err := req.Decode(r.Msg); err != nil {
		return nil, smb2.StatusInvalidParameter
	}
	h, ok := r.Open.Handle.(Notifier)
	if !ok {
		return nil, smb2.StatusNotSupported
	}
	return h.ChangeNotify(r, &req)
}

// releaseOpen drops the request's reference on its open, if it holds one.
func (r *Request) releaseOpen() {
	if r.openHeld {
		r.openHeld = false
		r.Open.release()
	}
}
