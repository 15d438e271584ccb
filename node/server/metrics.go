package server

import (
	"net"
	"time"

	"github.com/smbcluster/smbcluster/node/metrics"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// The engine's side of node/metrics: one call per event, on
// pre-resolved instruments; with Config.Metrics nil every call returns
// at once.

// begin marks a request read; the zero time when metrics are off.
func (c *conn) begin() time.Time {
	m := c.srv.cfg.Metrics
	if m == nil {
		return time.Time{}
	}
	m.Started()
	return time.Now()
}

// observe records an answered request: its command, status and time,
// its share's time and bytes by data path, the credits granted, and the
// counters of its open and session for the top-N tables.
func (c *conn) observe(r *Request, res *result, status smb2.Status, start time.Time) {
	m := c.srv.cfg.Metrics
	if m == nil {
		return
	}
	d := time.Since(start)
	m.Request(r.Header.Command, status, d)
	m.Credits(res.hdr.Credits)
	var read, written int
	if status == smb2.StatusSuccess || status == smb2.StatusBufferOverflow {
		switch b := res.body.(type) {
		case *readPayload:
			read = int(b.DataLength)
		case *sendfileSegment:
			read = int(b.DataLength)
		case *smb2.WriteResponse:
			written = int(b.Count)
		}
	}
	if t := r.Tree; t != nil {
		t.met.Request(d)
		if read > 0 {
			t.met.Read(c.ioPath(r, res, true), read)
		}
		if written > 0 {
			t.met.Written(c.ioPath(r, res, false), written)
		}
	}
	if o := r.Open; o != nil {
		countIO(&o.io, read, written)
	}
	if s := r.Session; s != nil {
		countIO(&s.io, read, written)
	}
}

func countIO(c *metrics.IOCount, read, written int) {
	c.Requests.Add(1)
	if read > 0 {
		c.BytesRead.Add(uint64(read))
	}
	if written > 0 {
		c.BytesWritten.Add(uint64(written))
	}
}

// ioPath is how a READ's or WRITE's data moved (writeResults, splice.go).
func (c *conn) ioPath(r *Request, res *result, read bool) metrics.IOPath {
	switch {
	case res.encrypt != nil || r.disp.encrypted():
		return metrics.PathSealed
	case res.signer != nil || !read && r.Header.Flags&smb2.FlagSigned != 0:
		return metrics.PathSigned
	case read:
		if _, ok := res.body.(SendfileResponse); ok {
			return metrics.PathZeroCopy
		}
	case r.spliced != nil:
		return metrics.PathSpliced
	}
	return metrics.PathBuffered
}

// fileKey names o's file in the top-N table: share\path.
func (o *Open) fileKey() string { return o.Tree.Share.Name + `\` + o.Name }

// clientKey names s's client in the top-N table: user@address.
func (s *Session) clientKey() string {
	u := s.User
	if s.Domain != "" {
		u = s.Domain + `\` + u
	}
	if u == "" {
		u = "anonymous"
	}
	return u + "@" + s.addr
}

// clientHost is the address of a connection's peer without its port.
func clientHost(remote string) string {
	if h, _, err := net.SplitHostPort(remote); err == nil {
		return h
	}
	return remote
}

// openGone and sessionGone fold the counters of an open or session
// that ended into the node's top-N tables.
func (s *Server) openGone(o *Open) {
	if m := s.cfg.Metrics; m != nil && o.Tree != nil && o.Tree.Share != nil {
		m.FileClosed(o.fileKey(), &o.io)
	}
}

func (s *Server) sessionGone(ss *Session) {
	if m := s.cfg.Metrics; m != nil && ss.addr != "" { // addr: it was established
		m.ClientGone(ss.clientKey(), &ss.io)
	}
}

// Client is the address and user of an open's client, for logs of
// other packages (a break that timed out).
func (o *Open) Client() (addr, user string) {
	if o.conn != nil {
		addr = o.conn.remote
	}
	return addr, o.Session.User
}

// Held implements metrics.Source: the sessions, channels, tree connects
// and opens the server holds now.
func (s *Server) Held(h *metrics.Held) {
	h.Sessions, h.Channels, h.Trees = map[metrics.Kind]int{}, map[metrics.Kind]int{}, map[string]int{}
	for _, ss := range s.Sessions() {
		k := ss.kind()
		h.Sessions[k]++
		ss.mu.Lock()
		h.Channels[k] += len(ss.channels)
		for _, t := range ss.trees {
			h.Trees[t.Share.Name]++
		}
		ss.mu.Unlock()
	}
	s.mu.Lock()
	h.Opens = len(s.opens)
	for _, o := range s.opens {
		if o.dur != nil {
			h.DurableOpens++
		}
	}
	s.mu.Unlock()
}

// EachFile and EachClient implement metrics.Source.
func (s *Server) EachFile(fn func(key string, c *metrics.IOCount)) {
	type live struct {
		key string
		io  *metrics.IOCount
	}
	s.mu.Lock() // a durable reconnect moves an open to another Tree under it
	opens := make([]live, 0, len(s.opens))
	for _, o := range s.opens {
		opens = append(opens, live{o.fileKey(), &o.io})
	}
	s.mu.Unlock()
	for _, o := range opens {
		fn(o.key, o.io)
	}
}

func (s *Server) EachClient(fn func(key string, c *metrics.IOCount)) {
	for _, ss := range s.Sessions() {
		fn(ss.clientKey(), &ss.io)
	}
}

// kind classifies s for the session and channel gauges.
func (s *Session) kind() metrics.Kind {
	k := metrics.Kind{Dialect: s.Dialect, Signing: "optional", Encryption: "none"}
	switch {
	case s.Guest || s.Anonymous:
		k.Signing = "none"
	case s.SigningRequired:
		k.Signing = "required"
	}
	if s.EncryptData {
		k.Encryption = cipherName(s.Cipher)
	}
	return k
}

func cipherName(c uint16) string {
	switch c {
	case smb2.CipherAES128CCM:
		return "aes-128-ccm"
	case smb2.CipherAES128GCM:
		return "aes-128-gcm"
	case smb2.CipherAES256CCM:
		return "aes-256-ccm"
	case smb2.CipherAES256GCM:
		return "aes-256-gcm"
	}
	return "other"
}
