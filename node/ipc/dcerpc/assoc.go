package dcerpc

// bind answers a bind PDU ([C706] 12.6.4.3; [MS-RPCE] 3.3.1.5.6), with the
// first leg of the security context when it carries a verifier.
func (c *Conn) bind(pdu []byte, emit func([]byte)) {
	var b Bind
	nak := BindNak{CallID: callID(pdu)}
	switch err := b.Decode(pdu); {
	case err != nil, c.bound, b.MaxRecvFrag < minFrag:
		nak.Reason = NakProtocolError
	default:
		var (
			t     SecTrailer
			token []byte
		)
		if b.AuthLength != 0 {
			if t, token, err = c.authStep(pdu, &b.Header, true); err != nil {
				nak.Reason = NakAuthTypeNotRecognized
				break
			}
		}
		c.bound = true
		c.maxXmit = min(MaxFrag, int(b.MaxRecvFrag))
		c.assoc = b.AssocGroupID
		if c.assoc == 0 {
			c.assoc = defaultAssocGroupID
		}
		// Header signing is offered back when asked for ([MS-RPCE]
		// 3.3.1.5.2.2); NTLMSSP signs the whole PDU either way.
		c.headerSign = b.AuthLength != 0 && b.Flags&FlagSupportHeaderSign != 0
		if p, ok := c.auth.ctx.(Protector); ok {
			p.SetProtection(c.auth.level, c.headerSign)
		}
		ack := c.ack(&b, TypeBindAck, c.secAddr)
		if c.headerSign {
			ack.Flags |= FlagSupportHeaderSign
		}
		out := encode(ack)
		if b.AuthLength != 0 {
			out = appendAuth(out, t, token)
		}
		emit(out)
		return
	}
	emit(encode(&nak))
}

// alterContext answers an alter_context PDU ([C706] 12.6.4.1), which may
// carry the next leg of the security context (SPNEGO).
func (c *Conn) alterContext(pdu []byte, emit func([]byte)) {
	var b Bind
	if err := b.Decode(pdu); err != nil || !c.bound {
		c.fault(callID(pdu), 0, StatusProtoError, emit)
		return
	}
	var (
		t     SecTrailer
		token []byte
	)
	if b.AuthLength != 0 {
		var err error
		if t, token, err = c.authStep(pdu, &b.Header, false); err != nil {
			c.fault(b.CallID, 0, StatusAccessDenied, emit)
			return
		}
	}
	// The secondary address of an alter_context_resp is empty ([C706] 12.6.4.2).
	out := encode(c.ack(&b, TypeAlterContextResp, ""))
	if b.AuthLength != 0 && token != nil {
		out = appendAuth(out, t, token)
	}
	emit(out)
}

// auth3 completes a three-leg security context (NTLMSSP); nothing is sent
// back, so a failure shows at the next request ([MS-RPCE] 3.3.1.5.2).
func (c *Conn) auth3(pdu []byte, h *Header) {
	if !c.bound || h.AuthLength == 0 {
		c.auth.failed = true
		return
	}
	c.authStep(pdu, h, false)
}

func (c *Conn) ack(b *Bind, typ uint8, secAddr string) *BindAck {
	a := &BindAck{
		Header:       Header{Type: typ, Flags: FlagFirstFrag | FlagLastFrag, CallID: b.CallID},
		MaxXmitFrag:  uint16(c.maxXmit),
		MaxRecvFrag:  MaxFrag,
		AssocGroupID: c.assoc,
		SecAddr:      secAddr,
		Results:      make([]ContextResult, len(b.Contexts)),
	}
	for i := range b.Contexts {
		a.Results[i] = c.negotiate(&b.Contexts[i])
	}
	return a
}

// negotiate decides one presentation context: NDR for a served interface,
// NDR64 when the client offers only that and the interface speaks it,
// negotiate_ack for the bind time feature negotiation item ([MS-RPCE]
// 3.3.1.5.3), the matching provider rejection otherwise.
func (c *Conn) negotiate(ctx *ContextElem) ContextResult {
	if len(ctx.Transfer) == 1 {
		if bits, ok := featureBitmask(ctx.Transfer[0]); ok {
			return ContextResult{Result: ResultNegotiateAck, Reason: uint16(bits & featuresSupported)}
		}
	}
	iface := c.lookup(ctx.Abstract)
	if iface == nil {
		return ContextResult{Result: ResultProviderRejection, Reason: ReasonAbstractSyntax}
	}
	for _, t := range ctx.Transfer {
		if t == NDR {
			c.contexts[ctx.ContextID] = pcontext{iface: iface, abstract: ctx.Abstract}
			return ContextResult{Result: ResultAcceptance, Transfer: NDR}
		}
	}
	for _, t := range ctx.Transfer {
		if t == NDR64 && iface.NDR64 {
			c.contexts[ctx.ContextID] = pcontext{iface: iface, abstract: ctx.Abstract, ndr64: true}
			return ContextResult{Result: ResultAcceptance, Transfer: NDR64}
		}
	}
	return ContextResult{Result: ResultProviderRejection, Reason: ReasonTransferSyntaxes}
}

// lookup finds the interface with the abstract syntax's UUID and major
// version and a minor version at least the client's ([C706] 12.6.3.1).
func (c *Conn) lookup(s SyntaxID) *Interface {
	for _, i := range c.ifaces {
		if i.Syntax.UUID == s.UUID && i.Syntax.Major == s.Major && i.Syntax.Minor >= s.Minor {
			return i
		}
	}
	return nil
}
