package ncacn

import (
	"log/slog"

	"github.com/smbcluster/smbcluster/node/auth"
	"github.com/smbcluster/smbcluster/node/ipc/dcerpc"
)

// NTLMSecurity authenticates associations with NTLMSSP, raw
// (RPC_C_AUTHN_WINNT) or in SPNEGO (RPC_C_AUTHN_GSS_NEGOTIATE), against the
// users of cfg, the acceptor the SMB server uses; packet integrity and
// privacy then use NTLMSSP's signing and sealing ([MS-NLMP] 3.4).
// Kerberos is not offered (see Security): SPNEGO negotiates NTLMSSP only.
func NTLMSecurity(cfg *auth.Config) *dcerpc.Security {
	return &dcerpc.Security{New: ntlmNew(cfg)}
}

func ntlmNew(cfg *auth.Config) func(uint8) dcerpc.Authenticator {
	c := *cfg
	c.Kerberos = nil
	c.AllowGuest = false
	c.AllowAnonymous = false
	return func(typ uint8) dcerpc.Authenticator {
		if typ != dcerpc.AuthTypeNTLMSSP && typ != dcerpc.AuthTypeSPNEGO {
			return nil
		}
		return &ntlmAuth{ctx: auth.NewContext(&c)}
	}
}

// Security is NTLMSecurity plus, when cfg holds a Kerberos keytab,
// Kerberos in DCE style ([MS-RPCE] 3.3.1.5.2.2), as
// RPC_C_AUTHN_GSS_KERBEROS (auth_type 16: the AP-REQ in the bind, the
// AP-REP in the bind_ack, the client's AP-REP in auth3) and in SPNEGO
// (auth_type 9, when the client's NegTokenInit prefers Kerberos and
// carries its AP-REQ: the client's AP-REP and mechListMIC in
// alter_context); packet integrity and privacy then use [RFC4121] MIC and
// DCE-style Wrap tokens (AES session keys only). NoNTLM in cfg leaves
// NTLMSSP refused. A Kerberos refusal is logged to log, if not nil, with
// its reason (a wrong principal, a replayed authenticator, clock skew).
func Security(cfg *auth.Config, log *slog.Logger) *dcerpc.Security {
	ntlm := ntlmNew(cfg)
	c := *cfg
	c.AllowGuest = false
	c.AllowAnonymous = false
	return &dcerpc.Security{New: func(typ uint8) dcerpc.Authenticator {
		switch {
		case !c.Kerberos.HasKeytab():
		case typ == dcerpc.AuthTypeKerberos:
			return &krbAuth{ctx: auth.NewKerberosDCE(&c), log: log}
		case typ == dcerpc.AuthTypeSPNEGO:
			return &spnegoAuth{cfg: &c, log: log, ntlm: func() dcerpc.Authenticator { return ntlm(typ) }}
		}
		return ntlm(typ)
	}}
}

type ntlmAuth struct {
	ctx *auth.Context
	sec *auth.Security
}

func (a *ntlmAuth) Step(in []byte) ([]byte, bool, error) {
	out, err := a.ctx.Step(in)
	switch err {
	case auth.ErrMoreProcessing:
		return out, false, nil
	case nil:
	default:
		return nil, false, err
	}
	sec, err := a.ctx.Security()
	if err != nil {
		return nil, false, err
	}
	a.sec = sec
	return out, true, nil
}

// User is the authenticated user: one of the cluster's users (the domain
// a client names is not checked, as on the SMB side).
func (a *ntlmAuth) User() string { return a.ctx.Result().User }

func (a *ntlmAuth) SignatureSize() int { return auth.SignatureSize }

func (a *ntlmAuth) Sign(msg []byte) []byte {
	s := a.sec.Sign(msg)
	return s[:]
}

func (a *ntlmAuth) Verify(msg, sig []byte) error { return a.sec.Verify(msg, sig) }

func (a *ntlmAuth) Seal(data, msg []byte) []byte {
	s := a.sec.Seal(data, msg)
	return s[:]
}

func (a *ntlmAuth) Unseal(data, msg, sig []byte) error { return a.sec.Unseal(data, msg, sig) }
