package server

import (
	"errors"

	"github.com/smbcluster/smbcluster/node/auth"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/signing"
)

// echoesSignature reports whether an unsigned response to a signed request
// echoes the request's SMB2_FLAGS_SIGNED and signature, as Windows and Samba
// do (they copy the request's flags and signature into every response
// header they do not sign). Clients that require signing accept these
// statuses unverified — given before any key of the connection is known —
// but refuse an unsigned response, so the echo is what lets them see the
// status. It is kept to those statuses: the server signs everything else
// it can.
func echoesSignature(cmd smb2.Command, st smb2.Status) bool {
	switch st {
	case smb2.StatusUserSessionDeleted:
		return true
	case smb2.StatusAccessDenied, smb2.StatusNotSupported, smb2.StatusRequestOutOfSequence:
		return cmd == smb2.CmdSessionSetup
	}
	return false
}

// maxChannels is the most channels a session has, its first connection
// included: Windows Server 2012 R2 and 2016 refuse the 33rd with
// STATUS_INSUFFICIENT_RESOURCES (smbtorture smb2.multichannel.generic.
// num_channels).
const maxChannels = 32

// bindSession handles a SESSION_SETUP with SMB2_SESSION_FLAG_BINDING: a new
// channel for an existing session ([MS-SMB2] 3.3.5.5, 3.3.5.5.2).
//
// The request's signature is verified first, with the key the client must
// have used: the session's signing key, or this connection's channel key
// when the connection already is a channel of the session. Once it
// verifies, every response is signed with that key, refusals included, so
// that a client that requires signing sees the real status. A request that
// does not verify gets an unsigned STATUS_ACCESS_DENIED: the server never
// signs for a client that has not proved it holds the key.
func (c *conn) bindSession(r *Request, req *smb2.SessionSetupRequest) (Response, error) {
	if r.Header.SessionID == 0 {
		return nil, smb2.StatusInvalidParameter
	}
	s := c.srv.lookupSession(r.Header.SessionID)
	if s == nil {
		return nil, smb2.StatusUserSessionDeleted
	}
	ch := s.channelFor(c)
	if r.Header.Flags&smb2.FlagSigned != 0 {
		if err := c.verifySetup(r, s, ch); err != nil {
			return nil, err
		}
	}
	if err := c.checkBinding(r, s, ch); err != nil {
		return nil, err
	}
	if ch == nil {
		ch = &channel{seq: channelSeq.Add(1), auth: auth.NewContext(c.authConfig()), preauth: c.preauth, binding: true}
		s.mu.Lock()
		full := len(s.channels) >= maxChannels
		if !full {
			s.channels[c] = ch
		}
		s.mu.Unlock()
		if full {
			return nil, smb2.StatusInsufficientResources
		}
	}
	return c.bindStep(r, s, ch, req)
}

// checkBinding applies the refusals of [MS-SMB2] 3.3.5.5 step 4 to a
// binding request whose signature verified (or that is unsigned). The
// order follows Windows and Samba, which smbtorture's smb2.session
// bind_negative tests pin down: signing algorithm mismatches first (a
// session or connection using AES-GMAC cannot mix algorithms), then the
// dialect family, the signature, the dialect and the cipher.
//
// Session.Connection.ClientGuid is not compared: the specification allows
// refusing another client's connection (MAY), Windows binds it.
func (c *conn) checkBinding(r *Request, s *Session, ch *channel) error {
	s.mu.Lock()
	state := s.state
	s.mu.Unlock()
	if state != sessionValid {
		return smb2.StatusRequestNotAccepted // still authenticating
	}
	// Immutable once the session is valid (completeSession).
	switch {
	case s.SigningAlg >= signing.AESGMAC && c.signingAlg != s.SigningAlg:
		return smb2.StatusRequestOutOfSequence
	case c.signingAlg >= signing.AESGMAC && c.signingAlg != s.SigningAlg:
		return smb2.StatusNotSupported
	case c.dialect < smb2.Dialect300:
		return smb2.StatusRequestNotAccepted
	case r.Header.Flags&smb2.FlagSigned == 0:
		return smb2.StatusInvalidParameter
	case s.Dialect != c.dialect:
		return smb2.StatusInvalidParameter
	case s.Cipher != c.cipher:
		return smb2.StatusInvalidParameter
	case ch != nil && !ch.binding:
		return smb2.StatusRequestNotAccepted // already a channel of this session
	case s.Guest || s.Anonymous:
		return smb2.StatusNotSupported
	}
	return nil
}

// bindStep runs one round of the binding's authentication; the last one
// derives the channel's signing key ([MS-SMB2] 3.3.5.5.3).
func (c *conn) bindStep(r *Request, s *Session, ch *channel, req *smb2.SessionSetupRequest) (Response, error) {
	resp, err := c.authRound(r, ch, req)
	switch {
	case errors.Is(err, auth.ErrMoreProcessing):
		return resp, smb2.StatusMoreProcessingRequired
	case err != nil:
		// A failed binding removes the channel, not the session.
		c.dropChannel(s)
		return nil, authStatus(err)
	}
	res := ch.auth.Result()
	if !sameUser(res, s) {
		c.dropChannel(s)
		return nil, smb2.StatusAccessDenied
	}
	keys := signing.SessionKeys(s.Dialect, s.Cipher, res.SessionKey, ch.preauth[:])
	// The channel signs with its connection's algorithm ([MS-SMB2] 3.3.5.5.3:
	// Channel.SigningKey; 3.1.4.1 picks the algorithm by Connection).
	signer, err := signing.NewSigner(c.signingAlg, keys.Signing)
	if err != nil {
		c.dropChannel(s)
		return nil, err
	}
	s.mu.Lock()
	ch.auth, ch.signer, ch.binding = nil, signer, false
	s.mu.Unlock()
	c.authenticated() // limits.go
	// The final response is signed with the new channel key.
	r.bindSigner = nil
	r.forceSign = true
	c.srv.log.Info("channel bound", "remote", c.remote, "user", s.User, "session", s.ID)
	return resp, nil
}

// sameUser reports whether an authentication result names the session's
// user with a real (keyed) logon.
func sameUser(res auth.Result, s *Session) bool {
	return !res.Guest && !res.Anonymous && res.SessionKey != nil && equalFoldUser(res.User, s.User)
}

// dropChannel removes this connection's unfinished channel from s.
func (c *conn) dropChannel(s *Session) {
	s.mu.Lock()
	delete(s.channels, c)
	s.mu.Unlock()
}
