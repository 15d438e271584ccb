package dcerpc

// bind answers a bind PDU ([C706] 12.6.4.3; [MS-RPCE] 3.3.1.5.6).
func (c *Conn) bind(pdu []byte, emit func([]byte)) {
	var b Bind
	nak := BindNak{CallID: callID(pdu)}
	switch err := b.Decode(pdu); {
	case err != nil, c.bound, b.MaxRecvFrag < minFrag:
		nak.Reason = NakProtocolError
	case b.AuthLength != 0:
		nak.Reason = NakAuthTypeNotRecognized
	default:
		c.bound = true
		c.maxXmit = min(MaxFrag, int(b.MaxRecvFrag))
		c.assoc = b.AssocGroupID
		if c.assoc == 0 {
			c.assoc = defaultAssocGroupID
		}
		emit(encode(c.ack(&b, TypeBindAck, c.secAddr)))
		return
	}
	emit(encode(&nak))
}

// alterContext answers an alter_context PDU ([C706] 12.6.4.1).
func (c *Conn) alterContext(pdu []byte, emit func([]byte)) {
	var b Bind
	if err := b.Decode(pdu); err != nil || !c.bound || b.AuthLength != 0 {
		c.fault(callID(pdu), 0, StatusProtoError, emit)
		return
	}
	// The secondary address of an alter_context_resp is empty ([C706] 12.6.4.2).
	emit(encode(c.ack(&b, TypeAlterContextResp, "")))
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
			c.contexts[ctx.ContextID] = iface
			return ContextResult{Result: ResultAcceptance, Transfer: NDR}
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
