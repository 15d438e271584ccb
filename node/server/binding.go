package server

import (
	"errors"

	"github.com/smbcluster/smbcluster/node/auth"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/signing"
)

// bindSession handles a SESSION_SETUP with SMB2_SESSION_FLAG_BINDING: a new
// channel for an existing session ([MS-SMB2] 3.3.5.5.2).
func (c *conn) bindSession(r *Request, req *smb2.SessionSetupRequest) (Response, error) {
	if c.dialect < smb2.Dialect300 {
		return nil, smb2.StatusRequestNotAccepted
	}
	s := c.srv.lookupSession(r.Header.SessionID)
	if s == nil {
		return nil, smb2.StatusUserSessionDeleted
	}
	s.mu.Lock()
	state, ch := s.state, s.channels[c]
	s.mu.Unlock()
	switch {
	case state == sessionExpired:
		return nil, smb2.StatusNetworkSessionExpired
	case state != sessionValid:
		return nil, smb2.StatusRequestNotAccepted
	case s.Dialect != c.dialect:
		return nil, smb2.StatusInvalidParameter
	case s.ClientGUID != c.clientGUID:
		return nil, smb2.StatusUserSessionDeleted
	case s.Guest || s.Anonymous:
		return nil, smb2.StatusNotSupported
	case c.dialect == smb2.Dialect311 && (s.Cipher != c.cipher || s.SigningAlg != c.signingAlg):
		return nil, smb2.StatusInvalidParameter
	case r.Header.Flags&smb2.FlagSigned == 0:
		return nil, smb2.StatusInvalidParameter
	}
	// Binding requests are signed with the session's signing key.
	sessionSigner, err := signing.NewSigner(s.SigningAlg, s.Keys.Signing)
	if err != nil || !sessionSigner.Verify(r.Msg) {
		return nil, smb2.StatusAccessDenied
	}
	if ch != nil && !ch.binding {
		return nil, smb2.StatusRequestNotAccepted // already a channel of this session
	}
	if ch == nil {
		ch = &channel{auth: auth.NewContext(c.authConfig()), preauth: c.preauth, binding: true}
		s.mu.Lock()
		s.channels[c] = ch
		s.mu.Unlock()
	}
	r.Session = s
	r.bindSigner = sessionSigner
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
		c.dropChannel(s)
		return nil, smb2.StatusLogonFailure
	}
	res := ch.auth.Result()
	if res.User != s.User || res.Guest || res.Anonymous {
		c.dropChannel(s)
		return nil, smb2.StatusAccessDenied
	}
	keys := signing.SessionKeys(s.Dialect, s.Cipher, res.SessionKey, ch.preauth[:])
	signer, err := signing.NewSigner(s.SigningAlg, keys.Signing)
	if err != nil {
		c.dropChannel(s)
		return nil, err
	}
	s.mu.Lock()
	ch.auth, ch.signer, ch.binding = nil, signer, false
	s.mu.Unlock()
	r.bindSigner = nil
	r.forceSign = true
	c.srv.log.Info("channel bound", "remote", c.remote, "user", s.User, "session", s.ID)
	return resp, nil
}

// dropChannel removes this connection's unfinished channel from s.
func (c *conn) dropChannel(s *Session) {
	s.mu.Lock()
	delete(s.channels, c)
	s.mu.Unlock()
}
