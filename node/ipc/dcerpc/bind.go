package dcerpc

import "encoding/binary"

// Presentation context results (p_cont_def_result_t, [C706] 12.6.3.1;
// negotiate_ack from [MS-RPCE] 2.2.2.4).
const (
	ResultAcceptance         = 0
	ResultUserRejection      = 1
	ResultProviderRejection  = 2
	ResultNegotiateAck       = 3
	ReasonNotSpecified       = 0 // reason_not_specified
	ReasonAbstractSyntax     = 1 // abstract_syntax_not_supported
	ReasonTransferSyntaxes   = 2 // proposed_transfer_syntaxes_not_supported
	ReasonLocalLimitExceeded = 3 // local_limit_exceeded
)

// bind_nak provider_reject_reason values ([C706] 12.6.3.1; [MS-RPCE] 2.2.2.5).
const (
	NakReasonNotSpecified    = 0
	NakLocalLimitExceeded    = 2
	NakProtocolError         = 4 // protocol_version_not_supported, also any protocol error
	NakAuthTypeNotRecognized = 8 // authentication_type_not_recognized
)

const (
	bindBodyOffset          = HeaderSize + 8
	bindAckFixed            = HeaderSize + 8 + 2
	bindNakSize             = 24
	contextListHeaderSize   = 4
	contextElemFixed        = 4 + syntaxSize
	contextResultSize       = 4 + syntaxSize
	secondaryAddrAlign      = 4
	authVerifierTrailerSize = 8 // sec_trailer before auth_value ([MS-RPCE] 2.2.2.11)
)

// ContextElem is one proposed presentation context (p_cont_elem_t).
type ContextElem struct {
	ContextID uint16
	Abstract  SyntaxID
	Transfer  []SyntaxID
}

// Bind is a bind or alter_context PDU ([C706] 12.6.4.3, 12.6.4.1).
type Bind struct {
	Header
	MaxXmitFrag  uint16
	MaxRecvFrag  uint16
	AssocGroupID uint32
	Contexts     []ContextElem
}

// bodyEnd returns where the PDU body ends: before the auth verifier, if any.
func bodyEnd(h *Header) (int, bool) {
	end := int(h.FragLength)
	if h.AuthLength != 0 {
		end -= int(h.AuthLength) + authVerifierTrailerSize
	}
	return end, end >= HeaderSize
}

// Decode parses a bind or alter_context PDU.
func (b *Bind) Decode(msg []byte) error {
	if err := b.Header.Decode(msg); err != nil {
		return err
	}
	end, ok := bodyEnd(&b.Header)
	if !ok || end < bindBodyOffset+contextListHeaderSize {
		return ErrFormat
	}
	msg = msg[:end]
	b.MaxXmitFrag = binary.LittleEndian.Uint16(msg[16:])
	b.MaxRecvFrag = binary.LittleEndian.Uint16(msg[18:])
	b.AssocGroupID = binary.LittleEndian.Uint32(msg[20:])
	n := int(msg[24])
	off := bindBodyOffset + contextListHeaderSize
	b.Contexts = make([]ContextElem, 0, n)
	for range n {
		if len(msg)-off < contextElemFixed {
			return ErrFormat
		}
		var c ContextElem
		c.ContextID = binary.LittleEndian.Uint16(msg[off:])
		nt := int(msg[off+2])
		c.Abstract.decode(msg[off+4:])
		off += contextElemFixed
		if len(msg)-off < nt*syntaxSize {
			return ErrFormat
		}
		c.Transfer = make([]SyntaxID, nt)
		for i := range c.Transfer {
			c.Transfer[i].decode(msg[off:])
			off += syntaxSize
		}
		b.Contexts = append(b.Contexts, c)
	}
	return nil
}

// ContextResult is one p_result_t of a bind_ack or alter_context_resp.
type ContextResult struct {
	Result   uint16
	Reason   uint16 // provider reason, or the feature bitmask for negotiate_ack
	Transfer SyntaxID
}

// BindAck is a bind_ack or alter_context_resp PDU ([C706] 12.6.4.4, 12.6.4.2).
type BindAck struct {
	Header
	MaxXmitFrag  uint16
	MaxRecvFrag  uint16
	AssocGroupID uint32
	SecAddr      string // port_spec; "" encodes as length 0
	Results      []ContextResult
}

func (a *BindAck) secAddrLen() int {
	if a.SecAddr == "" {
		return 0
	}
	return len(a.SecAddr) + 1
}

func (a *BindAck) resultsOffset() int {
	n := bindAckFixed + a.secAddrLen()
	return (n + secondaryAddrAlign - 1) &^ (secondaryAddrAlign - 1)
}

// Size returns the encoded size of the whole PDU.
func (a *BindAck) Size() int {
	return a.resultsOffset() + contextListHeaderSize + len(a.Results)*contextResultSize
}

// Encode writes the whole PDU into b[:a.Size()], setting frag_length.
func (a *BindAck) Encode(b []byte) {
	size := a.Size()
	clear(b[:size])
	h := a.Header
	h.FragLength = uint16(size)
	h.Encode(b)
	binary.LittleEndian.PutUint16(b[16:], a.MaxXmitFrag)
	binary.LittleEndian.PutUint16(b[18:], a.MaxRecvFrag)
	binary.LittleEndian.PutUint32(b[20:], a.AssocGroupID)
	binary.LittleEndian.PutUint16(b[24:], uint16(a.secAddrLen()))
	copy(b[26:], a.SecAddr) // the NUL is already there from clear
	off := a.resultsOffset()
	b[off] = uint8(len(a.Results))
	off += contextListHeaderSize
	for i := range a.Results {
		r := &a.Results[i]
		binary.LittleEndian.PutUint16(b[off:], r.Result)
		binary.LittleEndian.PutUint16(b[off+2:], r.Reason)
		r.Transfer.encode(b[off+4:])
		off += contextResultSize
	}
}

// Decode parses a bind_ack or alter_context_resp PDU (used by tests and
// fuzzing; a server only encodes them).
func (a *BindAck) Decode(msg []byte) error {
	if err := a.Header.Decode(msg); err != nil {
		return err
	}
	end, ok := bodyEnd(&a.Header)
	if !ok || end < bindAckFixed {
		return ErrFormat
	}
	msg = msg[:end]
	a.MaxXmitFrag = binary.LittleEndian.Uint16(msg[16:])
	a.MaxRecvFrag = binary.LittleEndian.Uint16(msg[18:])
	a.AssocGroupID = binary.LittleEndian.Uint32(msg[20:])
	n := int(binary.LittleEndian.Uint16(msg[24:]))
	if len(msg)-bindAckFixed < n {
		return ErrFormat
	}
	a.SecAddr = ""
	if n > 0 {
		s := msg[bindAckFixed : bindAckFixed+n]
		if s[n-1] == 0 {
			s = s[:n-1]
		}
		a.SecAddr = string(s)
	}
	off := a.resultsOffset()
	if len(msg)-off < contextListHeaderSize {
		return ErrFormat
	}
	cnt := int(msg[off])
	off += contextListHeaderSize
	if len(msg)-off < cnt*contextResultSize {
		return ErrFormat
	}
	a.Results = make([]ContextResult, cnt)
	for i := range a.Results {
		r := &a.Results[i]
		r.Result = binary.LittleEndian.Uint16(msg[off:])
		r.Reason = binary.LittleEndian.Uint16(msg[off+2:])
		r.Transfer.decode(msg[off+4:])
		off += contextResultSize
	}
	return nil
}

// BindNak is a bind_nak PDU ([C706] 12.6.4.5; [MS-RPCE] 2.2.2.9). It offers
// protocol version 5.0 only.
type BindNak struct {
	CallID uint32
	Reason uint16 // provider_reject_reason
}

// Size returns the encoded size.
func (n *BindNak) Size() int { return bindNakSize }

// Encode writes the whole PDU into b[:n.Size()].
func (n *BindNak) Encode(b []byte) {
	clear(b[:bindNakSize])
	h := Header{Type: TypeBindNak, Flags: FlagFirstFrag | FlagLastFrag, FragLength: bindNakSize, CallID: n.CallID}
	h.Encode(b)
	binary.LittleEndian.PutUint16(b[16:], n.Reason)
	b[18] = 1           // n_protocols
	b[19], b[20] = 5, 0 // rpc_vers, rpc_vers_minor
}
