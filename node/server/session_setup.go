package server

import (
	"context"
	"errors"
	"strings"

	"github.com/smbcluster/smbcluster/node/auth"
	"github.com/smbcluster/smbcluster/node/clock"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/signing"
)

func (c *conn) authConfig() *auth.Config {
	cfg := &c.srv.cfg
	_, allowGuest, _, _ := c.srv.effective()
	return &auth.Config{
		Users:           cfg.Users,
		AllowGuest:      allowGuest,
		AllowAnonymous:  cfg.AllowAnonymous,
		Kerberos:        cfg.Kerberos,
		NoNTLM:          cfg.NoNTLM,
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
		ch := &channel{seq: channelSeq.Add(1), auth: auth.NewContext(c.authConfig()), preauth: c.preauth}
		s.mu.Lock()
		s.channels[c] = ch
		s.mu.Unlock()
		return s, ch, nil
	}
	s := c.srv.lookupSession(r.Header.SessionID)
	if s == nil {
		return nil, nil, smb2.StatusUserSessionDeleted
	}
	ch := s.channelFor(c)
	if err := c.checkSetupSignature(r, s, ch); err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.state == sessionExpired:
		return nil, nil, smb2.StatusNetworkSessionExpired
	case ch == nil:
		return nil, nil, smb2.StatusUserSessionDeleted
	case ch.auth == nil:
		// Re-authentication of a valid session ([MS-SMB2] 3.3.5.5.2). An
		// anonymous one is allowed whatever the configuration says: the
		// session keeps its keys and its user, and gains nothing.
		cfg := c.authConfig()
		cfg.AllowAnonymous = true
		ch.auth = auth.NewContext(cfg)
		ch.preauth = c.preauth
	}
	return s, ch, nil
}

// checkSetupSignature enforces signing on a SESSION_SETUP for an existing
// session ([MS-SMB2] 3.3.5.2.4): a signed request must verify, and once a
// channel of a session that requires signing is established here, an
// unsigned plaintext request is refused.
func (c *conn) checkSetupSignature(r *Request, s *Session, ch *channel) error {
	if r.Header.Flags&smb2.FlagSigned != 0 {
		return c.verifySetup(r, s, ch)
	}
	if r.disp.encrypted() {
		return nil
	}
	s.mu.Lock()
	established := ch != nil && ch.signer != nil
	s.mu.Unlock()
	if established && s.SigningRequired {
		return smb2.StatusAccessDenied
	}
	return nil
}

// verifySetup verifies a signed SESSION_SETUP of session s: with this
// connection's channel key once the channel is established, else with the
// session's signing key (a binding, or a request on a connection that is no
// channel of the session). When it verifies, r's response is signed with
// that key whatever its status; when it does not, the request fails with
// STATUS_ACCESS_DENIED, unsigned. With no key to verify with yet (a session
// still authenticating, guest or anonymous) the request goes on and its
// response stays unsigned.
func (c *conn) verifySetup(r *Request, s *Session, ch *channel) error {
	signer := setupSigner(s, ch)
	if signer == nil {
		return nil
	}
	if !signer.Verify(r.Msg) {
		return smb2.StatusAccessDenied
	}
	r.Session, r.bindSigner = s, signer
	return nil
}

// setupSigner returns the key that signs SESSION_SETUP requests of s on the
// connection of ch (nil when it has none), or nil.
func setupSigner(s *Session, ch *channel) signing.Signer {
	s.mu.Lock()
	valid := s.state == sessionValid
	var signer signing.Signer
	if ch != nil {
		signer = ch.signer
	}
	s.mu.Unlock()
	if signer != nil {
		return signer
	}
	if !valid || len(s.Keys.Signing) == 0 {
		return nil
	}
	// The keys are immutable once the session is valid.
	signer, err := signing.NewSigner(s.SigningAlg, s.Keys.Signing)
	if err != nil {
		return nil
	}
	return signer
}

// authRound feeds the client's token to the channel's authentication and
// keeps the 3.1.1 preauth integrity hash of the exchange: the request now,
// and a MORE_PROCESSING response once it is encoded ([MS-SMB2] 3.3.5.5).
// It returns auth.ErrMoreProcessing while another round is needed.
func (c *conn) authRound(r *Request, ch *channel, req *smb2.SessionSetupRequest) (*smb2.SessionSetupResponse, error) {
	if c.dialect == smb2.Dialect311 {
		ch.preauth.Update(r.Msg)
	}
	out, err := ch.auth.Step(req.SecurityBuffer)
	if errors.Is(err, auth.ErrMoreProcessing) && c.dialect == smb2.Dialect311 {
		r.onEncoded = func(pdu []byte) { ch.preauth.Update(pdu) }
	}
	return &smb2.SessionSetupResponse{SecurityBuffer: out}, err
}

// authStep feeds the client's token to the channel's authentication and
// answers with the next token, or completes the session.
func (c *conn) authStep(r *Request, s *Session, ch *channel, req *smb2.SessionSetupRequest) (Response, error) {
	resp, err := c.authRound(r, ch, req)
	switch {
	case errors.Is(err, auth.ErrMoreProcessing):
		return resp, smb2.StatusMoreProcessingRequired
	case err != nil:
		// The session ends, a re-authenticated one included
		// ([MS-SMB2] 3.3.5.5.3). The response is still signed when the
		// request verified (r.bindSigner).
		user := ch.auth.Result() // the names the client sent
		attrs := []any{"remote", c.remote, "user", user.User, "domain", user.Domain, "err", err}
		if krbErr := ch.auth.KerberosError(); krbErr != nil {
			attrs = append(attrs, "kerberos", krbErr)
		}
		c.failAuth(s, ch)
		c.srv.log.Warn("logon failed", attrs...)
		c.srv.cfg.Metrics.AuthFailed(statusOf(authStatus(err)))
		if r.bindSigner == nil {
			r.Session = nil
		}
		return nil, authStatus(err)
	}
	res := ch.auth.Result()
	ch.auth = nil
	if s.valid() {
		return c.reauthenticated(r, s, res, resp)
	}
	if err := c.completeSession(s, ch, res, req); err != nil {
		c.failAuth(s, ch)
		r.Session = nil
		return nil, err
	}
	c.endPreviousSession(s, req.PreviousSessionID)
	c.authenticated() // limits.go
	c.srv.cfg.Metrics.SessionEstablished()
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
	c.srv.log.Info("session established", "remote", c.remote, "user", s.User, "principal", res.Principal, "session", s.ID,
		"dialect", smb2.DialectName(c.dialect), "signing", s.SigningRequired, "encrypt", s.EncryptData)
	return resp, nil
}

// reauthenticated completes the re-authentication of a valid session
// ([MS-SMB2] 3.3.5.5.3). The session keeps its keys, its signing state and
// its user: the new logon must be the same user, or anonymous (Windows and
// Samba accept an anonymous re-authentication; opens made before keep
// their access).
func (c *conn) reauthenticated(r *Request, s *Session, res auth.Result, resp *smb2.SessionSetupResponse) (Response, error) {
	switch {
	case res.Anonymous:
	case res.Guest != s.Guest || !equalFoldUser(res.User, s.User):
		return nil, smb2.StatusAccessDenied
	}
	c.srv.log.Info("session re-authenticated", "remote", c.remote, "session", s.ID, "user", s.User, "anonymous", res.Anonymous)
	return resp, nil
}

// authStatus is the SESSION_SETUP status of a failed authentication: a
// malformed token is STATUS_INVALID_PARAMETER, a Kerberos authenticator
// out of the clock skew STATUS_TIME_DIFFERENCE_AT_DC (KRB_AP_ERR_SKEW, as
// Samba maps it), NTLM switched off STATUS_NTLM_BLOCKED, anything else
// STATUS_LOGON_FAILURE.
func authStatus(err error) error {
	switch {
	case errors.Is(err, auth.ErrInvalidToken):
		return smb2.StatusInvalidParameter
	case errors.Is(err, auth.ErrClockSkew):
		return smb2.StatusTimeDifferenceAtDc
	case errors.Is(err, auth.ErrNTLMBlocked):
		return smb2.StatusNtlmBlocked
	}
	return smb2.StatusLogonFailure
}

// equalFoldUser compares user names as Windows does, without case.
func equalFoldUser(a, b string) bool { return strings.EqualFold(a, b) }

// endPreviousSession ends the session a reconnecting client names in
// PreviousSessionId, if it belongs to the same user ([MS-SMB2] 3.3.5.5.3):
// its opens are closed so that the new session can reopen the files, but
// its durable opens are kept for the new session to reconnect.
func (c *conn) endPreviousSession(s *Session, prev uint64) {
	if prev == 0 || prev == s.ID {
		return
	}
	old := c.srv.lookupSession(prev)
	if old == nil && c.srv.cfg.SessionPeers != nil {
		// A client reconnecting through another node than before.
		ctx, cancel := context.WithTimeout(c.ctx, handoffWait)
		defer cancel()
		c.srv.cfg.SessionPeers.EndPrevious(ctx, prev, s.User, s.ID)
		return
	}
	if old == nil || !old.valid() || !strings.EqualFold(old.User, s.User) || old.Anonymous || old.Guest {
		return
	}
	c.srv.log.Info("session replaced by a reconnect", "old", old.ID, "new", s.ID, "user", s.User)
	c.srv.endSession(old, true) // durable opens wait for the reconnect
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
	s.Dialect, s.ClientGUID, s.CreatedAt = c.dialect, c.clientGUID, clock.Now()
	s.addr = clientHost(c.remote) // metrics.go
	s.SigningAlg = c.signingAlg
	if c.dialect >= smb2.Dialect300 {
		s.Cipher = c.cipher
	}
	keyed := !s.Guest && !s.Anonymous
	required, _, _, _ := c.srv.effective()
	s.SigningRequired = keyed && (required || req.SecurityMode&uint8(smb2.NegotiateSigningRequired) != 0)
	if keyed {
		key := make([]byte, 16)
		copy(key, res.SessionKey)
		s.SessionKey = key
		sc, err := signing.NewSession(signing.Server, s.Dialect, s.Cipher, s.SigningAlg, res.SessionKey, ch.preauth[:])
		if err != nil {
			return err
		}
		s.Keys, s.encrypter, s.decrypter, s.nonces = sc.Keys, sc.Encrypter, sc.Decrypter, sc.Nonces
		ch.signer, ch.signAlg, ch.signKey = sc.Signer, s.SigningAlg, sc.Keys.Signing
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

// serveLogoff handles SMB2 LOGOFF ([MS-SMB2] 3.3.5.6).
func (c *conn) serveLogoff(r *Request) (Response, error) {
	if err := (&smb2.LogoffRequest{}).Decode(r.Msg); err != nil {
		return nil, smb2.StatusInvalidParameter
	}
	r.forceSign = r.signResponse()
	// Durable opens outlive a LOGOFF for a later reconnect, as on Windows
	// and Samba (smbtorture smb2.durable-open.reopen4).
	c.srv.endSession(r.Session, true)
	return &smb2.LogoffResponse{}, nil
}
