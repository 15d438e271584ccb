package auth

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/iana/chksumtype"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

// The Kerberos acceptor of DCE/RPC (RPC_C_AUTHN_GSS_KERBEROS), which uses
// GSS_C_DCE_STYLE ([MS-RPCE] 3.3.1.5.2.2, [MS-KILE] 3.4.5.1): the client's
// AP-REQ (framed as a GSS-API token or raw) is answered with a raw AP-REP,
// and the client then sends a raw AP-REP of its own, encrypted with the
// ticket's session key and echoing the acceptor's sequence number, which
// completes the context. Per-message tokens then use the acceptor's
// subkey (CFX).

const gssDCEStyleFlag = 0x1000 // GSS_C_DCE_STYLE in the authenticator checksum

// KerberosDCE is one DCE-style Kerberos acceptance. It is not safe for
// concurrent use.
type KerberosDCE struct {
	c         Context
	state     contextState
	ticketKey types.EncryptionKey
	subkey    types.EncryptionKey
	sendSeq   int64  // the acceptor's, sent in the AP-REP
	recvSeq   int64  // the initiator's, from the authenticator
	rep       []byte // the AP-REP sent, which the client must not reflect
}

// NewKerberosDCE starts a DCE-style Kerberos acceptance with cfg's keytab.
func NewKerberosDCE(cfg *Config) *KerberosDCE {
	return &KerberosDCE{c: Context{cfg: cfg}}
}

// Step consumes the client's AP-REQ, then its AP-REP; it returns the token
// to answer with and reports completion.
func (k *KerberosDCE) Step(in []byte) (out []byte, done bool, err error) {
	switch k.state {
	case stateStart:
		out, done, err = k.accept(in)
	case stateWantAPReq:
		err = k.finish(in)
		done = err == nil
	default:
		err = ErrInvalidToken
	}
	switch {
	case err != nil:
		k.state = stateFailed
	case done:
		k.state = stateDone
	default:
		k.state = stateWantAPReq // waiting for the client's AP-REP
	}
	return out, done, err
}

func (k *KerberosDCE) accept(token []byte) ([]byte, bool, error) {
	if !k.c.kerberos() {
		return nil, false, ErrLogonFailure
	}
	msg := token
	if tokID, m, err := parseKRB5Token(token); err == nil {
		if !bytes.Equal(tokID, tokAPReq) {
			return nil, false, ErrInvalidToken
		}
		msg = m
	}
	apReq, err := k.c.krbVerify(k.c.cfg.Kerberos.keys.Load(), msg)
	if err != nil {
		return nil, false, err
	}
	user, err := k.c.krbUser(apReq)
	if err != nil {
		return nil, false, err
	}
	a := &apReq.Authenticator
	k.ticketKey = apReq.Ticket.DecryptedEncPart.Key
	key := k.ticketKey
	if len(a.SubKey.KeyValue) > 0 {
		key = a.SubKey
	}
	sub, rep, seq, err := apRep(apReq, key.KeyType)
	if err != nil {
		return nil, false, err
	}
	k.subkey, k.sendSeq, k.recvSeq, k.rep = sub, seq, a.SeqNumber, rep
	name, realm := a.CName.PrincipalNameString(), a.CRealm
	k.c.result = Result{User: user, Domain: realm, Principal: name + "@" + realm, SessionKey: smbSessionKey(sub.KeyValue)}
	ck := a.Cksum
	dce := ck.CksumType == chksumtype.GSSAPI && len(ck.Checksum) >= 24 &&
		binary.LittleEndian.Uint32(ck.Checksum[20:24])&gssDCEStyleFlag != 0
	if !dce {
		// Not DCE style: the framed AP-REP completes the context.
		return appendKRB5Token(nil, tokAPRep, rep), true, nil
	}
	return rep, false, nil
}

// finish checks the client's DCE-style AP-REP: it must decrypt with the
// ticket's session key and echo the acceptor's sequence number. The
// acceptor's own AP-REP would pass both, so it is refused when reflected
// (a client's, encrypted with another confounder, never equals it).
func (k *KerberosDCE) finish(token []byte) error {
	msg := token
	if tokID, m, err := parseKRB5Token(token); err == nil && bytes.Equal(tokID, tokAPRep) {
		msg = m
	}
	if bytes.Equal(msg, k.rep) {
		k.c.krbErr = errors.New("the acceptor's AP-REP reflected as the client's")
		return ErrLogonFailure
	}
	part, err := decryptAPRep(msg, k.ticketKey)
	if err != nil {
		k.c.krbErr = err
		return ErrLogonFailure
	}
	if part.SequenceNumber != k.sendSeq {
		k.c.krbErr = fmt.Errorf("DCE-style AP-REP echoes sequence number %d, not %d", part.SequenceNumber, k.sendSeq)
		return ErrLogonFailure
	}
	return nil
}

func decryptAPRep(msg []byte, key types.EncryptionKey) (part *messages.EncAPRepPart, err error) {
	defer func() {
		if recover() != nil {
			part, err = nil, errDER
		}
	}()
	var rep messages.APRep
	if err := rep.Unmarshal(msg); err != nil {
		return nil, fmt.Errorf("client AP-REP: %w", err)
	}
	plain, err := crypto.DecryptEncPart(rep.EncPart, key, keyusage.AP_REP_ENCPART)
	if err != nil {
		return nil, fmt.Errorf("client AP-REP: %w", err)
	}
	part = new(messages.EncAPRepPart)
	if err := part.Unmarshal(plain); err != nil {
		return nil, fmt.Errorf("client AP-REP: %w", err)
	}
	return part, nil
}

// Result is valid once Step reported completion.
func (k *KerberosDCE) Result() Result { return k.c.result }

// KerberosError is why the acceptance failed, for the log.
func (k *KerberosDCE) KerberosError() error { return k.c.krbErr }

// CFX returns the per-message protection of the completed context: the
// acceptor's subkey, the acceptor's sequence numbers from its AP-REP, the
// initiator's from its authenticator.
func (k *KerberosDCE) CFX() (*CFX, error) {
	if k.state != stateDone {
		return nil, errors.New("auth: Kerberos context not established")
	}
	return NewCFX(k.subkey, false, true, uint64(uint32(k.sendSeq)), uint64(uint32(k.recvSeq)))
}
