package auth

import (
	"bytes"
)

// SPNEGODCE is SPNEGO for DCE/RPC (RPC_C_AUTHN_GSS_NEGOTIATE) when the
// client's preferred mechanism is Kerberos with an optimistic DCE-style
// AP-REQ ([MS-SPNG], [MS-RPCE] 3.3.1.5.2.2): the NegTokenInit's AP-REQ is
// answered with accept-incomplete and the raw AP-REP; the client's
// NegTokenResp (alter_context) carries its AP-REP and, when it sends one,
// a mechListMIC — a MIC token over its mechTypes, the first of the
// initiator's sequence numbers — answered with accept-completed and the
// acceptor's own mechListMIC.
type SPNEGODCE struct {
	k         *KerberosDCE
	mechTypes []byte
	cfx       *CFX
	step      int
}

// SPNEGOKerberosDCE returns the acceptor for a first token that is a
// NegTokenInit preferring Kerberos with its AP-REQ, nil for any other
// token (which NTLMSSP's SPNEGO then handles).
func SPNEGOKerberosDCE(cfg *Config, first []byte) *SPNEGODCE {
	var t negTokenInit
	if !cfg.Kerberos.HasKeytab() || t.Decode(first) != nil || len(t.MechTypes) == 0 || t.MechToken == nil ||
		!bytes.Equal(t.MechTypes[0], oidKRB5) && !bytes.Equal(t.MechTypes[0], oidMSKRB5) {
		return nil
	}
	return &SPNEGODCE{k: NewKerberosDCE(cfg)}
}

// Step consumes the NegTokenInit, then the NegTokenResp.
func (s *SPNEGODCE) Step(in []byte) ([]byte, bool, error) {
	s.step++
	switch s.step {
	case 1:
		var t negTokenInit
		if err := t.Decode(in); err != nil {
			return nil, false, ErrInvalidToken
		}
		rep, done, err := s.k.Step(t.MechToken)
		if err != nil {
			return nil, false, err
		}
		if done {
			return nil, false, ErrInvalidToken // only DCE style is spoken here
		}
		s.mechTypes = bytes.Clone(t.MechTypesDER)
		r := negTokenResp{NegState: negStateAcceptIncomplete, SupportedMech: t.MechTypes[0], ResponseToken: rep}
		return r.Append(nil), false, nil
	case 2:
		var t negTokenResp
		if t.Decode(in) != nil || t.ResponseToken == nil || t.NegState == negStateReject {
			return nil, false, ErrInvalidToken
		}
		if _, done, err := s.k.Step(t.ResponseToken); err != nil || !done {
			return nil, false, ErrLogonFailure
		}
		cfx, err := s.k.CFX()
		if err != nil {
			return nil, false, err
		}
		r := negTokenResp{NegState: negStateAcceptCompleted}
		if t.MechListMIC != nil {
			if err := cfx.VerifyMIC(s.mechTypes, t.MechListMIC); err != nil {
				return nil, false, ErrLogonFailure
			}
			r.MechListMIC = cfx.MIC(s.mechTypes)
		}
		s.cfx = cfx
		return r.Append(nil), true, nil
	}
	return nil, false, ErrInvalidToken
}

// CFX is the per-message protection once Step completed.
func (s *SPNEGODCE) CFX() (*CFX, error) {
	if s.cfx == nil {
		return nil, ErrInvalidToken
	}
	return s.cfx, nil
}

// Result is valid once Step completed.
func (s *SPNEGODCE) Result() Result { return s.k.Result() }

// KerberosError is why Kerberos refused the client, for the log.
func (s *SPNEGODCE) KerberosError() error { return s.k.KerberosError() }
