package auth

import (
	"bytes"
	"errors"
)

// DER tags used by SPNEGO ([MS-SPNG], RFC 4178 4.2).
const (
	tagEnumerated    = 0x0a
	tagOctetString   = 0x04
	tagOID           = 0x06
	tagGeneralString = 0x1b
	tagSequence      = 0x30
	tagApplication0  = 0x60 // InitialContextToken (RFC 2743 3.1)
	tagContext0      = 0xa0
	tagContext1      = 0xa1
	tagContext2      = 0xa2
	tagContext3      = 0xa3
	tagContext4      = 0xa4
)

// negState values of NegTokenResp (RFC 4178 4.2.2).
const (
	negStateAbsent           = -1
	negStateAcceptCompleted  = 0
	negStateAcceptIncomplete = 1
	negStateReject           = 2
	negStateRequestMIC       = 3
)

// OID contents (without tag and length).
var (
	oidSPNEGO  = []byte{0x2b, 0x06, 0x01, 0x05, 0x05, 0x02}                         // 1.3.6.1.5.5.2
	oidNTLMSSP = []byte{0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x02, 0x02, 0x0a} // 1.3.6.1.4.1.311.2.2.10
)

// negHintName is the hintName Windows servers send in NegTokenInit2 ([MS-SPNG] 2.2.1).
const negHintName = "not_defined_in_RFC4178@please_ignore"

var errDER = errors.New("auth: malformed SPNEGO token")

// parseTLV splits the first BER/DER element off b. It accepts definite
// lengths of up to 4 octets and single-octet tags only.
func parseTLV(b []byte) (tag byte, content, rest []byte, err error) {
	if len(b) < 2 || b[0]&0x1f == 0x1f {
		return 0, nil, nil, errDER
	}
	tag, n := b[0], int(b[1])
	b = b[2:]
	if n&0x80 != 0 {
		k := n & 0x7f
		if k == 0 || k > 4 || len(b) < k {
			return 0, nil, nil, errDER
		}
		n = 0
		for _, c := range b[:k] {
			n = n<<8 | int(c)
		}
		b = b[k:]
	}
	if n > len(b) {
		return 0, nil, nil, errDER
	}
	return tag, b[:n:n], b[n:], nil
}

// expectTLV parses one element of b that must carry tag, and rejects trailing bytes.
func expectTLV(b []byte, tag byte) ([]byte, error) {
	t, content, rest, err := parseTLV(b)
	if err != nil || t != tag || len(rest) != 0 {
		return nil, errDER
	}
	return content, nil
}

// appendTLV appends a DER element with the concatenated contents.
func appendTLV(b []byte, tag byte, contents ...[]byte) []byte {
	n := 0
	for _, c := range contents {
		n += len(c)
	}
	b = append(b, tag)
	switch {
	case n < 0x80:
		b = append(b, byte(n))
	case n < 0x100:
		b = append(b, 0x81, byte(n))
	case n < 0x10000:
		b = append(b, 0x82, byte(n>>8), byte(n))
	default:
		b = append(b, 0x84, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	for _, c := range contents {
		b = append(b, c...)
	}
	return b
}

func tlv(tag byte, contents ...[]byte) []byte { return appendTLV(nil, tag, contents...) }

// negTokenInit is NegTokenInit, or NegTokenInit2 with negHints ([MS-SPNG]
// 2.2.1), inside an InitialContextToken. Slices alias the decoded token.
type negTokenInit struct {
	MechTypes    [][]byte // OID contents
	MechTypesDER []byte   // the MechTypeList element as sent: what mechListMIC covers
	MechToken    []byte
	MechListMIC  []byte
	HintName     []byte // negHints.hintName, NegTokenInit2 only
}

// Decode parses an InitialContextToken (0x60 ...) carrying a NegTokenInit,
// or a bare [0] NegTokenInit.
func (t *negTokenInit) Decode(b []byte) error {
	*t = negTokenInit{}
	if len(b) > 0 && b[0] == tagApplication0 {
		inner, err := expectTLV(b, tagApplication0)
		if err != nil {
			return err
		}
		tag, oid, rest, err := parseTLV(inner)
		if err != nil || tag != tagOID || !bytes.Equal(oid, oidSPNEGO) {
			return errDER
		}
		b = rest
	}
	seq, err := expectTLV(b, tagContext0)
	if err != nil {
		return err
	}
	if seq, err = expectTLV(seq, tagSequence); err != nil {
		return err
	}
	return t.decodeFields(seq)
}

func (t *negTokenInit) decodeFields(seq []byte) error {
	for len(seq) > 0 {
		tag, field, rest, err := parseTLV(seq)
		if err != nil {
			return err
		}
		seq = rest
		switch tag {
		case tagContext0:
			err = t.decodeMechTypes(field)
		case tagContext2:
			t.MechToken, err = expectTLV(field, tagOctetString)
		case tagContext3: // negHints in NegTokenInit2, mechListMIC in NegTokenInit
			if len(field) > 0 && field[0] == tagSequence {
				err = t.decodeNegHints(field)
			} else {
				t.MechListMIC, err = expectTLV(field, tagOctetString)
			}
		case tagContext4:
			t.MechListMIC, err = expectTLV(field, tagOctetString)
		}
		if err != nil {
			return err
		}
	}
	if t.MechTypesDER == nil {
		return errDER // mechTypes is mandatory
	}
	return nil
}

func (t *negTokenInit) decodeMechTypes(field []byte) error {
	list, err := expectTLV(field, tagSequence)
	if err != nil {
		return err
	}
	t.MechTypesDER = field
	for len(list) > 0 {
		tag, oid, rest, err := parseTLV(list)
		if err != nil || tag != tagOID {
			return errDER
		}
		t.MechTypes = append(t.MechTypes, oid)
		list = rest
	}
	return nil
}

func (t *negTokenInit) decodeNegHints(field []byte) error {
	seq, err := expectTLV(field, tagSequence)
	if err != nil {
		return err
	}
	for len(seq) > 0 {
		tag, f, rest, err := parseTLV(seq)
		if err != nil {
			return err
		}
		if tag == tagContext0 {
			if t.HintName, err = expectTLV(f, tagGeneralString); err != nil {
				return err
			}
		}
		seq = rest
	}
	return nil
}

// Append appends the token as an InitialContextToken. With HintName set it is
// a NegTokenInit2 (negHints at [3], mechListMIC at [4]); otherwise a NegTokenInit.
func (t *negTokenInit) Append(b []byte) []byte {
	var oids []byte
	for _, oid := range t.MechTypes {
		oids = appendTLV(oids, tagOID, oid)
	}
	seq := tlv(tagContext0, tlv(tagSequence, oids))
	if t.MechToken != nil {
		seq = appendTLV(seq, tagContext2, tlv(tagOctetString, t.MechToken))
	}
	micTag := byte(tagContext3)
	if t.HintName != nil {
		hints := tlv(tagSequence, tlv(tagContext0, tlv(tagGeneralString, t.HintName)))
		seq = appendTLV(seq, tagContext3, hints)
		micTag = tagContext4
	}
	if t.MechListMIC != nil {
		seq = appendTLV(seq, micTag, tlv(tagOctetString, t.MechListMIC))
	}
	return appendTLV(b, tagApplication0, tlv(tagOID, oidSPNEGO), tlv(tagContext0, tlv(tagSequence, seq)))
}

// NegTokenInit returns the SPNEGO NegTokenInit2 a server puts in the
// SMB2 NEGOTIATE response's security buffer ([MS-SPNG] 3.2.5.2): NTLMSSP as
// the only mechanism and the customary negHints.
func NegTokenInit() []byte { return (&Config{}).NegTokenInit() }

// NegTokenInit returns the NegTokenInit2 for the mechanisms cfg enables:
// MS-KRB5 and Kerberos 5 when it has a keytab, then NTLMSSP unless it
// refuses it ([MS-SPNG] 3.2.5.2, [MS-SMB2] 3.3.5.4).
func (cfg *Config) NegTokenInit() []byte {
	t := negTokenInit{HintName: []byte(negHintName)}
	if cfg.Kerberos.HasKeytab() {
		t.MechTypes = append(t.MechTypes, oidMSKRB5, oidKRB5)
	}
	if !cfg.NoNTLM {
		t.MechTypes = append(t.MechTypes, oidNTLMSSP)
	}
	return t.Append(nil)
}

// negTokenResp is NegTokenResp (RFC 4178 4.2.2). Slices alias the decoded token.
type negTokenResp struct {
	NegState      int // negStateAbsent when not present
	SupportedMech []byte
	ResponseToken []byte
	MechListMIC   []byte
}

// Decode parses a [1] NegTokenResp.
func (t *negTokenResp) Decode(b []byte) error {
	*t = negTokenResp{NegState: negStateAbsent}
	seq, err := expectTLV(b, tagContext1)
	if err != nil {
		return err
	}
	if seq, err = expectTLV(seq, tagSequence); err != nil {
		return err
	}
	for len(seq) > 0 {
		tag, field, rest, err := parseTLV(seq)
		if err != nil {
			return err
		}
		seq = rest
		switch tag {
		case tagContext0:
			var v []byte
			if v, err = expectTLV(field, tagEnumerated); err == nil && len(v) != 1 {
				err = errDER
			}
			if err == nil {
				t.NegState = int(v[0])
			}
		case tagContext1:
			t.SupportedMech, err = expectTLV(field, tagOID)
		case tagContext2:
			t.ResponseToken, err = expectTLV(field, tagOctetString)
		case tagContext3:
			t.MechListMIC, err = expectTLV(field, tagOctetString)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Append appends the token as a [1] NegTokenResp; nil fields are omitted.
func (t *negTokenResp) Append(b []byte) []byte {
	var seq []byte
	if t.NegState != negStateAbsent {
		seq = appendTLV(seq, tagContext0, tlv(tagEnumerated, []byte{byte(t.NegState)}))
	}
	if t.SupportedMech != nil {
		seq = appendTLV(seq, tagContext1, tlv(tagOID, t.SupportedMech))
	}
	if t.ResponseToken != nil {
		seq = appendTLV(seq, tagContext2, tlv(tagOctetString, t.ResponseToken))
	}
	if t.MechListMIC != nil {
		seq = appendTLV(seq, tagContext3, tlv(tagOctetString, t.MechListMIC))
	}
	return appendTLV(b, tagContext1, tlv(tagSequence, seq))
}
