package ncacn

import (
	"log/slog"

	"github.com/smbcluster/smbcluster/node/auth"
	"github.com/smbcluster/smbcluster/node/ipc/dcerpc"
)

// krbAuth is a DCE-style Kerberos security context
// (RPC_C_AUTHN_GSS_KERBEROS): the AP-REQ, AP-REP, AP-REP exchange of
// [MS-RPCE] 3.3.1.5.2.2, then [RFC4121] tokens with the acceptor's
// subkey: a MIC of the PDU for packet integrity, a DCE-style GSS_WrapEx
// for privacy ([MS-KILE] 3.4.5.4.1) with the stub and auth padding
// encrypted in place and, with header signing, the rest of the PDU up to
// the sec_trailer signed only. Only AES session keys are accepted.
type krbAuth struct {
	ctx        krbContext
	log        *slog.Logger // told why a bind was refused
	cfx        *auth.CFX
	headerSign bool
	privacy    bool // packet privacy: Wrap tokens, else MICs
}

// krbContext is auth.KerberosDCE, bare or in SPNEGO (auth.SPNEGODCE).
type krbContext interface {
	Step(in []byte) ([]byte, bool, error)
	CFX() (*auth.CFX, error)
	Result() auth.Result
	KerberosError() error
}

func (a *krbAuth) Step(in []byte) ([]byte, bool, error) {
	out, done, err := a.ctx.Step(in)
	if err != nil && a.log != nil {
		a.log.Warn("Kerberos authentication of an RPC association refused", "err", err, "kerberos", a.ctx.KerberosError())
	}
	if err != nil || !done {
		return out, done, err
	}
	a.cfx, err = a.ctx.CFX()
	if err != nil {
		return nil, false, err
	}
	return out, true, nil
}

// SetProtection is told the level and whether the PDU header is signed,
// as the bind negotiated (PFC_SUPPORT_HEADER_SIGN).
func (a *krbAuth) SetProtection(level uint8, headerSign bool) {
	a.privacy, a.headerSign = level == dcerpc.AuthLevelPrivacy, headerSign
}

func (a *krbAuth) User() string { return a.ctx.Result().User }

// SignatureSize is that of a Wrap token at privacy, of a MIC below.
func (a *krbAuth) SignatureSize() int {
	if a.privacy {
		return a.cfx.WrapDCESize()
	}
	return a.cfx.MICSize()
}

// signed is what a MIC covers: the PDU through the sec_trailer with header
// signing, else the stub and auth padding only.
func (a *krbAuth) signed(msg []byte) []byte {
	if a.headerSign {
		return msg
	}
	return msg[dcerpc.StubOffset(msg) : len(msg)-dcerpc.SecTrailerSize]
}

func (a *krbAuth) Sign(msg []byte) []byte { return a.cfx.MIC(a.signed(msg)) }

func (a *krbAuth) Verify(msg, sig []byte) error { return a.cfx.VerifyMIC(a.signed(msg), sig) }

func (a *krbAuth) split(data, msg []byte) (pre, post []byte) {
	if !a.headerSign {
		return nil, nil
	}
	off := cap(msg) - cap(data) // data is a sub-slice of msg
	return msg[:off], msg[off+len(data):]
}

func (a *krbAuth) Seal(data, msg []byte) []byte {
	pre, post := a.split(data, msg)
	return a.cfx.WrapDCE(pre, data, post)
}

func (a *krbAuth) Unseal(data, msg, sig []byte) error {
	pre, post := a.split(data, msg)
	return a.cfx.UnwrapDCE(pre, data, post, sig)
}

// spnegoAuth is RPC_C_AUTHN_GSS_NEGOTIATE: Kerberos (DCE style) when the
// client's NegTokenInit prefers it and carries its AP-REQ, else NTLMSSP;
// the first token decides.
type spnegoAuth struct {
	cfg  *auth.Config
	log  *slog.Logger
	ntlm func() dcerpc.Authenticator
	dcerpc.Authenticator
	level      uint8
	headerSign bool
}

func (a *spnegoAuth) Step(in []byte) ([]byte, bool, error) {
	if a.Authenticator == nil {
		if k := auth.SPNEGOKerberosDCE(a.cfg, in); k != nil {
			a.Authenticator = &krbAuth{ctx: k, log: a.log}
		} else {
			a.Authenticator = a.ntlm()
		}
		if p, ok := a.Authenticator.(dcerpc.Protector); ok && a.level != 0 {
			p.SetProtection(a.level, a.headerSign)
		}
	}
	return a.Authenticator.Step(in)
}

func (a *spnegoAuth) SetProtection(level uint8, headerSign bool) {
	a.level, a.headerSign = level, headerSign
	if p, ok := a.Authenticator.(dcerpc.Protector); ok {
		p.SetProtection(level, headerSign)
	}
}

func (a *spnegoAuth) User() string {
	if id, ok := a.Authenticator.(dcerpc.Identifier); ok {
		return id.User()
	}
	return ""
}
