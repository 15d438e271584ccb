package server

import (
	"errors"
	"strings"
	"time"

	"github.com/smbcluster/smbcluster/node/auth"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/signing"
)

func (c *conn) authConfig() *auth.Config {
	cfg := &c.srv.cfg
	return &auth.Config{
		Users:           cfg.Users,
		AllowGuest:      cfg.AllowGuest,
		AllowAnonymous:  cfg.AllowAnonymous,
		NetBIOSComputer: cfg.ServerName,
		NetBIOSDomain:   cfg.Workgroup,
		DNSComputer:     cfg.ServerName,
		DNSDomain:       cfg.Workgroup,
	}
}

// serveSessionSetup handles SMB2 SESSION_SETUP ([MS-SMB2] 3.3.5.5).
func (c *conn) serveSessionSetup(r *Request) (Response, error) {
	var req smb2.SessionSetupRequest
	if err := req.Decode(r.Msg); err != nil {
		return nil, smb2.StatusInvalidParameter
	}
	if req.Flags&smb2.SessionFlagBinding != 0 {
		return c.bindSession(r, &req)
	}
	s, ch, err := c.setupChannel(r)
	if err != nil {
		return nil, err
	}
	r.Session = s
	return c.authStep(r, s, ch, &req)
}

// setupChannel finds or creates the session and the in-progress
// authentication of this connection for a non-binding SESSION_SETUP.
func (c *conn) setupChannel(r *Request) (*Session, *channel, error) {
	if r.Header.SessionID == 0 {
		s := c.srv.newSession()
		ch := &channel{auth: auth.NewContext(c.authConfig()), preauth: c.preauth}
		s.mu.Lock()
		s.channels[c] = ch
		s.mu.Unlock()
		return s, ch, nil
	}
	s := c.srv.lookupSession(r.Header.SessionID)
	if s == nil {
		return nil, nil, smb2.StatusUserSessionDeleted
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.channels[c]
	switch {
	case s.state == sessionExpired:
		return nil, nil, smb2.StatusNetworkSessionExpired
	case ch == nil:
		return nil, nil, smb2.StatusUserSessionDeleted
	case ch.auth == nil:
		// Re-authentication of a valid session ([MS-SMB2] 3.3.5.5.2).
		ch.auth = auth.NewContext(c.authConfig())
		ch.preauth = c.preauth
	}
	return s, ch, nil
}

// authStep feeds the client's token to the channel's authentication and
// answers with the next token, or completes the session.
func (c *conn) authStep(r *Request, s *Session, ch *channel, req *smb2.SessionSetupRequest) (Response, error) {
	if c.dialect == smb2.Dialect311 {
		ch.preauth.Update(r.Msg)
	}
	out, err := ch.auth.Step(req.SecurityBuffer)
	resp := &smb2.SessionSetupResponse{SecurityBuffer: out}
	switch {
	case errors.Is(err, auth.ErrMoreProcessing):
		if c.dialect == smb2.Dialect311 {
			r.onEncoded = func(pdu []byte) { ch.preauth.Update(pdu) }
		}
		return resp, smb2.StatusMoreProcessingRequired
	case err != nil:
		c.failAuth(s, ch)
		c.srv.log.Info("logon failed", "remote", c.remote, "err", err)
		r.Session = nil
		return nil, smb2.StatusLogonFailure
	}
	res := ch.auth.Result()
	ch.auth = nil
	if s.valid() {
		// Re-authentication keeps keys; the user must not change.
		if res.User != s.User || res.Guest != s.Guest {
			return nil, smb2.StatusAccessDenied
		}
		return resp, nil
	}
	if err := c.completeSession(s, ch, res, req); err != nil {
		c.failAuth(s, ch)
		r.Session = nil
		return nil, err
	}
	c.endPreviousSession(s, req.PreviousSessionID)
	if s.Guest {
		resp.SessionFlags |= smb2.SessionFlagIsGuest
	} else if s.Anonymous {
		resp.SessionFlags |= smb2.SessionFlagIsNull
	} else {
		r.forceSign = c.dialect >= smb2.Dialect300 || s.SigningRequired
		if s.EncryptData {
			resp.SessionFlags |= smb2.SessionFlagEncryptData
		}
	}
	c.srv.log.Info("session established", "remote", c.remote, "user", s.User, "session", s.ID,
		"dialect", dialectString(c.dialect), "signing", s.SigningRequired, "encrypt", s.EncryptData)
	return resp, nil
}

// endPreviousSession ends the session a reconnecting client names in
// PreviousSessionId, if it belongs to the same user ([MS-SMB2] 3.3.5.5.3):
// its opens are closed so that the new session can reopen the files.
func (c *conn) endPreviousSession(s *Session, prev uint64) {
	if prev == 0 || prev == s.ID {
		return
	}
	old := c.srv.lookupSession(prev)
	if old == nil || !old.valid() || !strings.EqualFold(old.User, s.User) || old.Anonymous || old.Guest {
		return
	}
	c.srv.log.Info("session replaced by a reconnect", "old", old.ID, "new", s.ID, "user", s.User)
	c.srv.expireSession(old)
}

// failAuth forgets a failed authentication: a new session is removed, a
// re-authenticating one ends ([MS-SMB2] 3.3.5.5.3).
func (c *conn) failAuth(s *Session, ch *channel) {
	ch.auth = nil
	c.srv.expireSession(s)
}

// completeSession derives the session's keys and makes it valid.
func (c *conn) completeSession(s *Session, ch *channel, res auth.Result, req *smb2.SessionSetupRequest) error {
	cfg := &c.srv.cfg
	s.User, s.Domain, s.Guest, s.Anonymous = res.User, res.Domain, res.Guest, res.Anonymous
	s.Dialect, s.ClientGUID, s.CreatedAt = c.dialect, c.clientGUID, time.Now()
	s.SigningAlg = c.signingAlg
	if c.dialect >= smb2.Dialect300 {
		s.Cipher = c.cipher
	}
	keyed := !s.Guest && !s.Anonymous
	s.SigningRequired = keyed && (cfg.SigningRequired || req.SecurityMode&uint8(smb2.NegotiateSigningRequired) != 0)
	if keyed {
		key := make([]byte, 16)
		copy(key, res.SessionKey)
		s.SessionKey = key
		if err := s.deriveKeys(res.SessionKey, ch.preauth[:]); err != nil {
			return err
		}
		signer, err := signing.NewSigner(s.SigningAlg, s.Keys.Signing)
		if err != nil {
			return err
		}
		ch.signer = signer
	}
	wantEncrypt := cfg.Encryption != EncryptOff
	if wantEncrypt && keyed && s.encrypter != nil {
		s.EncryptData = true
	} else if cfg.Encryption == EncryptRequired {
		return smb2.StatusAccessDenied
	}
	s.mu.Lock()
	s.state = sessionValid
	s.mu.Unlock()
	return nil
}

// deriveKeys sets the session's signing and encryption keys from the
// authentication's session key ([MS-SMB2] 3.3.5.5.3).
func (s *Session) deriveKeys(fullKey, preauth []byte) error {
	s.Keys = signing.SessionKeys(s.Dialect, s.Cipher, fullKey, preauth)
	if s.Dialect < smb2.Dialect300 || s.Cipher == 0 {
		return nil
	}
	var err error
	if s.encrypter, err = signing.NewCipher(s.Cipher, s.Keys.ServerOut); err != nil {
		return err
	}
	if s.decrypter, err = signing.NewCipher(s.Cipher, s.Keys.ServerIn); err != nil {
		return err
	}
	s.nonces = signing.NewNonceSource()
	return nil
}

// serveLogoff handles SMB2 LOGOFF ([MS-SMB2] 3.3.5.6).
func (c *conn) serveLogoff(r *Request) (Response, error) {
	if err := (&smb2.LogoffRequest{}).Decode(r.Msg); err != nil {
		return nil, smb2.StatusInvalidParameter
	}
	r.forceSign = r.signResponse()
	c.srv.expireSession(r.Session)
	return &smb2.LogoffResponse{}, nil
}

func dialectString(d uint16) string {
	switch d {
	case smb2.Dialect202:
		return "2.0.2"
	case smb2.Dialect210:
		return "2.1"
	case smb2.Dialect300:
		return "3.0"
	case smb2.Dialect302:
		return "3.0.2"
	case smb2.Dialect311:
		return "3.1.1"
	}
	return "unknown"
}
