package auth

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jcmturner/gofork/encoding/asn1"
	"github.com/jcmturner/gokrb5/v8/asn1tools"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/iana/asnAppTag"
	"github.com/jcmturner/gokrb5/v8/iana/chksumtype"
	"github.com/jcmturner/gokrb5/v8/iana/errorcode"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/iana/msgtype"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/service"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/smbcluster/smbcluster/node/clock"
)

// The Kerberos 5 acceptor ([RFC4121], [MS-KILE]) in SPNEGO. The protocol
// itself — decrypting the ticket with the keytab, checking its times, the
// authenticator, the clock skew and the replay cache — is gokrb5's
// (service.VerifyAPREQ); this file chooses the principals accepted, builds
// the AP-REP for mutual authentication, picks the session key and maps the
// client principal to a user.

// Kerberos OIDs (contents, without tag and length).
var (
	oidKRB5   = []byte{0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02} // 1.2.840.113554.1.2.2
	oidMSKRB5 = []byte{0x2a, 0x86, 0x48, 0x82, 0xf7, 0x12, 0x01, 0x02, 0x02} // 1.2.840.48018.1.2.2 ([MS-SPNG] 2.2)
)

// GSS-API Kerberos token identifiers ([RFC4121] 4.1).
var (
	tokAPReq = []byte{0x01, 0x00}
	tokAPRep = []byte{0x02, 0x00}
)

// ErrClockSkew reports an authenticator whose time is too far from the
// server's (KRB_AP_ERR_SKEW); SESSION_SETUP answers it with
// STATUS_TIME_DIFFERENCE_AT_DC, as Samba maps it.
var ErrClockSkew = errors.New("auth: Kerberos clock skew too great (KRB_AP_ERR_SKEW)")

// PrincipalMapper maps an authenticated Kerberos client principal
// ("alice", "EXAMPLE.COM") to the user its session runs as.
type PrincipalMapper interface {
	MapPrincipal(name, realm string) (user string, ok bool)
}

// Kerberos accepts Kerberos 5 AP-REQs for the service principals of a
// keytab. It is safe for concurrent use: SetKeytab replaces the keys while
// sessions authenticate (the cluster distributes a new keytab).
type Kerberos struct {
	keys   atomic.Pointer[krbKeys]
	replay replayCache

	// MaxClockSkew bounds the difference between an authenticator's time
	// and the server's; zero → 5 minutes ([RFC4120] 1.6).
	MaxClockSkew time.Duration
	// Principals maps client principals to users; nil refuses every one.
	Principals PrincipalMapper
}

// krbKeys is one keytab and the principals accepted with it.
type krbKeys struct {
	kt   *keytab.Keytab
	spns []types.PrincipalName // empty: every principal of the keytab
}

// ParseKeytab decodes a keytab file's contents (the MIT format ktutil and
// kadmin ktadd write).
func ParseKeytab(b []byte) (kt *keytab.Keytab, err error) {
	defer func() {
		if recover() != nil {
			kt, err = nil, errors.New("auth: malformed keytab")
		}
	}()
	kt = keytab.New()
	if err := kt.Unmarshal(b); err != nil {
		return nil, fmt.Errorf("auth: keytab: %w", err)
	}
	if len(kt.Entries) == 0 {
		return nil, errors.New("auth: keytab has no keys")
	}
	return kt, nil
}

// SetKeytab makes kt the keys AP-REQs are decrypted with; spns, when not
// empty, are the only service principals accepted ("cifs/files.example.com",
// the realm is the ticket's). A nil kt accepts no AP-REQ.
func (k *Kerberos) SetKeytab(kt *keytab.Keytab, spns []string) {
	if kt == nil {
		k.keys.Store(nil)
		return
	}
	keys := &krbKeys{kt: kt}
	for _, s := range spns {
		s, _, _ = strings.Cut(s, "@")
		keys.spns = append(keys.spns, types.NewPrincipalName(2, s)) // KRB_NT_SRV_INST
	}
	k.keys.Store(keys)
}

// HasKeytab reports whether a keytab is set.
func (k *Kerberos) HasKeytab() bool { return k != nil && k.keys.Load() != nil }

// accepts reports whether sname is one of the principals accepted.
func (keys *krbKeys) accepts(sname types.PrincipalName) bool {
	if len(keys.spns) == 0 {
		return true
	}
	for _, p := range keys.spns {
		if len(p.NameString) == len(sname.NameString) && strings.EqualFold(p.PrincipalNameString(), sname.PrincipalNameString()) {
			return true
		}
	}
	return false
}

// parseKRB5Token splits a GSS-API Kerberos token ([RFC4121] 4.1, either
// Kerberos OID) into its token ID and the message after it.
func parseKRB5Token(b []byte) (tokID, msg []byte, err error) {
	inner, err := expectTLV(b, tagApplication0)
	if err != nil {
		return nil, nil, err
	}
	tag, oid, rest, err := parseTLV(inner)
	if err != nil || tag != tagOID || !bytes.Equal(oid, oidKRB5) && !bytes.Equal(oid, oidMSKRB5) || len(rest) < 2 {
		return nil, nil, errDER
	}
	return rest[:2], rest[2:], nil
}

// appendKRB5Token frames a Kerberos message as a GSS-API token.
func appendKRB5Token(b, tokID, msg []byte) []byte {
	return appendTLV(b, tagApplication0, tlv(tagOID, oidKRB5), tokID, msg)
}

// isKRB5Token reports whether b is a GSS-API token of the Kerberos mechanism
// (not SPNEGO).
func isKRB5Token(b []byte) bool {
	_, _, err := parseKRB5Token(b)
	return err == nil
}

// krbAccept verifies a GSS-API AP-REQ token and returns the AP-REP token
// when the client asked for mutual authentication (nil otherwise), having
// set c.result ([RFC4121] 4.1, [MS-KILE] 3.4.5).
func (c *Context) krbAccept(token []byte) ([]byte, error) {
	k := c.cfg.Kerberos
	keys := k.keys.Load()
	if keys == nil {
		return nil, ErrLogonFailure
	}
	tokID, msg, err := parseKRB5Token(token)
	if err != nil || !bytes.Equal(tokID, tokAPReq) {
		return nil, ErrInvalidToken
	}
	apReq, err := c.krbVerify(keys, msg)
	if err != nil {
		return nil, err
	}
	return c.krbEstablish(apReq)
}

// krbVerify decrypts and checks an AP-REQ message.
func (c *Context) krbVerify(keys *krbKeys, msg []byte) (*messages.APReq, error) {
	k := c.cfg.Kerberos
	apReq, err := unmarshalAPReq(msg)
	if err != nil {
		return nil, ErrInvalidToken
	}
	if !keys.accepts(apReq.Ticket.SName) {
		c.krbErr = fmt.Errorf("ticket for %s, not a principal of this service (KRB_AP_ERR_NOT_US)", apReq.Ticket.SName.PrincipalNameString())
		return nil, ErrLogonFailure
	}
	settings := service.NewSettings(keys.kt, service.MaxClockSkew(k.MaxClockSkew), service.DecodePAC(false))
	ok, _, err := service.VerifyAPREQ(apReq, settings)
	if err != nil || !ok {
		return nil, c.krbFailure(err)
	}
	if !k.replay.fresh(&apReq.Authenticator, settings.MaxClockSkew(), clock.Now()) {
		c.krbErr = fmt.Errorf("authenticator of %s seen before, for any principal of the keytab (KRB_AP_ERR_REPEAT)", apReq.Authenticator.CName.PrincipalNameString())
		return nil, ErrLogonFailure
	}
	return apReq, nil
}

// unmarshalAPReq decodes an AP-REQ; gokrb5's decoder is kept from
// panicking the connection on hostile input.
func unmarshalAPReq(b []byte) (a *messages.APReq, err error) {
	defer func() {
		if recover() != nil {
			a, err = nil, errDER
		}
	}()
	a = new(messages.APReq)
	if err := a.Unmarshal(b); err != nil {
		return nil, err
	}
	return a, nil
}

// krbFailure maps a failed verification to the error Step returns:
// KRB_AP_ERR_SKEW to ErrClockSkew, anything else (expired or not yet
// valid ticket, a key the keytab lacks, a modified ticket or
// authenticator, a replay) to ErrLogonFailure, as Samba does.
func (c *Context) krbFailure(err error) error {
	c.krbErr = err
	var ke messages.KRBError
	if errors.As(err, &ke) && ke.ErrorCode == errorcode.KRB_AP_ERR_SKEW {
		return ErrClockSkew
	}
	return ErrLogonFailure
}

// krbEstablish completes a verified AP-REQ: the user, the session key and,
// for mutual authentication, the AP-REP.
func (c *Context) krbEstablish(apReq *messages.APReq) ([]byte, error) {
	a := &apReq.Authenticator
	user, err := c.krbUser(apReq)
	if err != nil {
		return nil, err
	}
	name, realm := a.CName.PrincipalNameString(), a.CRealm
	// [MS-KILE] 3.1.1.2: with mutual authentication the session key is
	// the subkey of the AP-REP, else the authenticator's subkey, else the
	// ticket's session key.
	key := apReq.Ticket.DecryptedEncPart.Key
	if len(a.SubKey.KeyValue) > 0 {
		key = a.SubKey
	}
	var out []byte
	if mutualRequested(apReq) {
		sub, rep, _, err := apRep(apReq, key.KeyType)
		if err != nil {
			return nil, err
		}
		key, out = sub, appendKRB5Token(nil, tokAPRep, rep)
	}
	c.result = Result{User: user, Domain: realm, Principal: name + "@" + realm, SessionKey: smbSessionKey(key.KeyValue)}
	return out, nil
}

// krbUser maps the client principal of a verified AP-REQ to its user.
func (c *Context) krbUser(apReq *messages.APReq) (string, error) {
	a := &apReq.Authenticator
	name, realm := a.CName.PrincipalNameString(), a.CRealm
	if m := c.cfg.Kerberos.Principals; m != nil {
		if user, ok := m.MapPrincipal(name, realm); ok {
			return user, nil
		}
	}
	c.krbErr = fmt.Errorf("principal %s@%s maps to no user", name, realm)
	return "", ErrLogonFailure
}

// smbSessionKey is the first 16 bytes of the GSS key, right-padded with
// zeros ([MS-SMB2] 3.3.5.5.3, 3.2.1.3).
func smbSessionKey(k []byte) []byte {
	out := make([]byte, 16)
	copy(out, k)
	return out
}

// mutualRequested reports whether the client wants an AP-REP: the
// MUTUAL-REQUIRED AP option, or GSS_C_MUTUAL_FLAG in the authenticator's
// GSS checksum ([RFC4121] 4.1.1).
func mutualRequested(apReq *messages.APReq) bool {
	if types.IsFlagSet(&apReq.APOptions, flags.APOptionMutualRequired) {
		return true
	}
	ck := apReq.Authenticator.Cksum
	const gssMutualFlag = 2
	return ck.CksumType == chksumtype.GSSAPI && len(ck.Checksum) >= 24 &&
		binary.LittleEndian.Uint32(ck.Checksum[20:24])&gssMutualFlag != 0
}

// apRep builds the AP-REP (not framed as a GSS-API token) for apReq with a
// fresh acceptor subkey of enctype etype, and returns the subkey and the
// acceptor's first sequence number ([RFC4120] 5.5.2, [RFC4121] 4.1,
// [MS-KILE] 3.1.1.2).
func apRep(apReq *messages.APReq, etype int32) (types.EncryptionKey, []byte, int64, error) {
	et, err := crypto.GetEtype(etype)
	if err != nil {
		return types.EncryptionKey{}, nil, 0, ErrLogonFailure
	}
	sub, err := types.GenerateEncryptionKey(et)
	if err != nil {
		return types.EncryptionKey{}, nil, 0, err
	}
	seq, err := rand.Int(rand.Reader, big.NewInt(1<<30))
	if err != nil {
		return types.EncryptionKey{}, nil, 0, err
	}
	part := messages.EncAPRepPart{
		CTime: apReq.Authenticator.CTime, Cusec: apReq.Authenticator.Cusec,
		Subkey: sub, SequenceNumber: seq.Int64() + 1,
	}
	plain, err := asn1.Marshal(part)
	if err != nil {
		return types.EncryptionKey{}, nil, 0, err
	}
	plain = asn1tools.AddASNAppTag(plain, asnAppTag.EncAPRepPart)
	enc, err := crypto.GetEncryptedData(plain, apReq.Ticket.DecryptedEncPart.Key, keyusage.AP_REP_ENCPART, 0)
	if err != nil {
		return types.EncryptionKey{}, nil, 0, err
	}
	rep, err := asn1.Marshal(messages.APRep{PVNO: 5, MsgType: msgtype.KRB_AP_REP, EncPart: enc})
	if err != nil {
		return types.EncryptionKey{}, nil, 0, err
	}
	rep = asn1tools.AddASNAppTag(rep, asnAppTag.APREP)
	return sub, rep, part.SequenceNumber, nil
}

// replayCache remembers the authenticators accepted within the clock
// skew, by client and time. gokrb5's cache (service.VerifyAPREQ) tells
// them apart by the ticket's service name too, which travels in the clear:
// with several principals under one key (cifs/ and host/ of an Active
// Directory account) an authenticator replayed under the other name would
// pass it.
type replayCache struct {
	mu    sync.Mutex
	seen  map[replayKey]time.Time // → when the entry may go
	sweep time.Time
}

type replayKey struct {
	client string // name@REALM
	ctime  int64  // authenticator time, µs
}

// fresh records a and reports whether it was not seen before.
func (r *replayCache) fresh(a *types.Authenticator, skew time.Duration, now time.Time) bool {
	k := replayKey{a.CName.PrincipalNameString() + "@" + a.CRealm, a.CTime.UnixMicro() + int64(a.Cusec)}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[replayKey]time.Time{}
	}
	if now.After(r.sweep) {
		for k, until := range r.seen {
			if now.After(until) {
				delete(r.seen, k)
			}
		}
		r.sweep = now.Add(skew)
	}
	if _, ok := r.seen[k]; ok {
		return false
	}
	r.seen[k] = now.Add(2 * skew) // past it, the clock-skew check refuses a
	return true
}

// KerberosError is why the last Kerberos step failed, for the server's
// log; nil when it did not fail in Kerberos.
func (c *Context) KerberosError() error { return c.krbErr }
