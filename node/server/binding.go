package server

import (
	"errors"
	"fmt"

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
// channel for an existing session ([MS-SMB2] 3.3.5.5, 3.3.5.5.2). A
// refusal is logged at info with the client's address and the reason: a
// client that cannot bind its channels falls back, and the Linux client
// even drops its session, so an operator needs to see why.
func (c *conn) bindSession(r *Request, req *smb2.SessionSetupRequest) (Response, error) {
	resp, err := c.bindChannel(r, req)
	if st := statusOf(err); err != nil && st != smb2.StatusMoreProcessingRequired {
		c.srv.log.Info("channel bind refused", "remote", c.remote, "session", fmt.Sprintf("%#x", r.Header.SessionID),
			"status", st.String(), "reason", err.Error())
	}
	return resp, err
}

// bindRefused is a binding refusal with its reason, for the log; the
// client sees st.
func bindRefused(st smb2.Status, reason string) error {
	return fmt.Errorf("%s: %w", reason, st)
}

// bindChannel runs a binding SESSION_SETUP.
//
// The request's signature is verified first, with the key the client must
// have used: the session's signing key, or this connection's channel key
// when the connection already is a channel of the session. Once it
// verifies, every response is signed with that key, refusals included, so
// that a client that requires signing sees the real status. A request that
// does not verify gets an unsigned STATUS_ACCESS_DENIED: the server never
// signs for a client that has not proved it holds the key.
func (c *conn) bindChannel(r *Request, req *smb2.SessionSetupRequest) (Response, error) {
	if r.Header.SessionID == 0 {
		return nil, bindRefused(smb2.StatusInvalidParameter, "no session id")
	}
	s := c.srv.lookupSession(r.Header.SessionID)
	if s == nil {
		// In a cluster, no other node holds it either: a binding to
		// another node's session was handed to that node (handoff.go).
		return nil, bindRefused(smb2.StatusUserSessionDeleted, "no such session")
	}
	ch := s.channelFor(c)
	if r.Header.Flags&smb2.FlagSigned != 0 {
		if err := c.verifySetup(r, s, ch); err != nil {
			return nil, bindRefused(statusOf(err), "the signature does not verify")
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
			return nil, bindRefused(smb2.StatusInsufficientResources, fmt.Sprintf("the session has %d channels", maxChannels))
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
		return bindRefused(smb2.StatusRequestNotAccepted, "the session is still authenticating")
	}
	// Immutable once the session is valid (completeSession).
	switch {
	case s.SigningAlg >= signing.AESGMAC && c.signingAlg != s.SigningAlg:
		return bindRefused(smb2.StatusRequestOutOfSequence, "the session signs with AES-GMAC, the connection not")
	case c.signingAlg >= signing.AESGMAC && c.signingAlg != s.SigningAlg:
		return bindRefused(smb2.StatusNotSupported, "the connection signs with AES-GMAC, the session not")
	case c.dialect < smb2.Dialect300:
		return bindRefused(smb2.StatusRequestNotAccepted, "the connection's dialect has no multichannel")
	case r.Header.Flags&smb2.FlagSigned == 0:
		return bindRefused(smb2.StatusInvalidParameter, "the request is not signed")
	case s.Dialect != c.dialect:
		return bindRefused(smb2.StatusInvalidParameter, "the connection's dialect differs from the session's")
	case s.Cipher != c.cipher:
		return bindRefused(smb2.StatusInvalidParameter, "the connection's cipher differs from the session's")
	case ch != nil && !ch.binding:
		return bindRefused(smb2.StatusRequestNotAccepted, "the connection already is a channel of the session")
	case s.Guest || s.Anonymous:
		return bindRefused(smb2.StatusNotSupported, "a guest or anonymous session")
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
		return nil, bindRefused(statusOf(authStatus(err)), "authentication failed: "+err.Error())
	}
	res := ch.auth.Result()
	if !sameUser(res, s) {
		c.dropChannel(s)
		return nil, bindRefused(smb2.StatusAccessDenied, "another user than the session's")
	}
	// The channel signs with its connection's algorithm ([MS-SMB2] 3.3.5.5.3:
	// Channel.SigningKey; 3.1.4.1 picks the algorithm by Connection).
	sc, err := signing.NewSession(signing.Server, s.Dialect, s.Cipher, c.signingAlg, res.SessionKey, ch.preauth[:])
	if err != nil {
		c.dropChannel(s)
		return nil, err
	}
	s.mu.Lock()
	ch.auth, ch.signer, ch.binding = nil, sc.Signer, false
	ch.signAlg, ch.signKey = c.signingAlg, sc.Keys.Signing
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
