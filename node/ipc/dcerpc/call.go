package dcerpc

import "context"

// request handles one request fragment ([C706] 12.6.4.9), reassembling
// fragmented calls ([MS-RPCE] 3.3.1.5.1) before dispatching them.
func (c *Conn) request(ctx context.Context, pdu []byte, emit func([]byte)) {
	var r Request
	if err := r.Decode(pdu); err != nil || !c.bound {
		c.call = call{}
		c.fault(callID(pdu), 0, StatusProtoError, emit)
		return
	}
	stub, err := c.verify(pdu, &r)
	if err != nil {
		c.call = call{}
		c.fault(r.CallID, r.ContextID, StatusAccessDenied, emit)
		return
	}
	r.Stub = stub
	first, last := r.Flags&FlagFirstFrag != 0, r.Flags&FlagLastFrag != 0
	if first {
		c.call = call{}
		if last {
			c.dispatch(ctx, r.CallID, r.ContextID, r.Opnum, r.Stub, emit)
			return
		}
		c.call = call{active: true, id: r.CallID, contextID: r.ContextID, opnum: r.Opnum,
			stub: make([]byte, 0, min(int(r.AllocHint), maxRequest))}
	} else if !c.call.active || c.call.id != r.CallID {
		c.call = call{}
		c.fault(r.CallID, r.ContextID, StatusProtoError, emit)
		return
	}
	if len(c.call.stub)+len(r.Stub) > maxRequest {
		c.call = call{}
		c.fault(r.CallID, r.ContextID, StatusProtoError, emit)
		return
	}
	c.call.stub = append(c.call.stub, r.Stub...)
	if last {
		cl := c.call
		c.call = call{}
		c.dispatch(ctx, cl.id, cl.contextID, cl.opnum, cl.stub, emit)
	}
}

// dispatch runs a complete call and emits its response fragments.
func (c *Conn) dispatch(ctx context.Context, id uint32, contextID, opnum uint16, stub []byte, emit func([]byte)) {
	pc := c.contexts[contextID]
	iface := pc.iface
	if iface == nil {
		c.fault(id, contextID, StatusUnknownIf, emit)
		return
	}
	if iface.MinLevel > AuthLevelNone && c.AuthLevel() < iface.MinLevel {
		c.fault(id, contextID, StatusAccessDenied, emit)
		return
	}
	if err := checkVerificationTrailer(stub, c.verifiable(id, contextID, opnum, pc)); err != nil {
		c.fault(id, contextID, StatusAccessDenied, emit)
		return
	}
	if pc.ndr64 {
		ctx = context.WithValue(ctx, ndr64Key{}, true)
	}
	if who, ok := c.auth.ctx.(Identifier); ok && c.AuthLevel() > AuthLevelNone {
		ctx = WithUser(ctx, who.User())
	}
	if iface.CallContext != nil && iface.Concurrent && c.concurrent {
		c.dispatchConcurrent(ctx, iface, id, contextID, opnum, stub, emit)
		return
	}
	var (
		out    []byte
		status uint32
	)
	if iface.CallContext != nil {
		out, status = iface.CallContext(ctx, opnum, stub)
	} else {
		out, status = iface.Call(opnum, stub)
	}
	if status != 0 {
		c.fault(id, contextID, status, emit)
		return
	}
	c.respond(id, contextID, out, emit)
}

// dispatchConcurrent runs a call on a goroutine of its own, which answers
// under sendMu; a CoCancel or orphaned PDU for it, or the connection's
// end, cancels its context. Past maxConcurrent running calls the client
// is told the server is too busy.
func (c *Conn) dispatchConcurrent(ctx context.Context, iface *Interface, id uint32, contextID, opnum uint16, stub []byte, emit func([]byte)) {
	c.runMu.Lock()
	_, dup := c.running[id]
	if dup || len(c.running) >= maxConcurrent {
		c.runMu.Unlock()
		status := uint32(StatusServerTooBusy)
		if dup {
			status = StatusProtoError
		}
		c.fault(id, contextID, status, emit)
		return
	}
	cctx, cancel := context.WithCancel(ctx)
	c.running[id] = cancel
	c.runMu.Unlock()
	go func() {
		out, status := iface.CallContext(cctx, opnum, stub)
		c.runMu.Lock()
		delete(c.running, id)
		c.runMu.Unlock()
		cancel()
		if cctx.Err() != nil && ctx.Err() != nil {
			return // the connection is gone
		}
		c.sendMu.Lock()
		defer c.sendMu.Unlock()
		if status != 0 {
			c.fault(id, contextID, status, emit)
			return
		}
		c.respond(id, contextID, out, emit)
	}()
}

// cancelRunning cancels a concurrent call.
func (c *Conn) cancelRunning(id uint32) {
	c.runMu.Lock()
	defer c.runMu.Unlock()
	if cancel, ok := c.running[id]; ok {
		cancel()
	}
}

// respond sends out in response fragments no larger than the client's
// max_recv_frag; every fragment but the last carries a multiple of 16 stub
// bytes, so NDR alignment survives reassembly ([C706] 12.6.2).
func (c *Conn) respond(id uint32, contextID uint16, out []byte, emit func([]byte)) {
	chunk := (c.maxXmit - responseFixed - c.authOverhead()) &^ 15
	flags := uint8(FlagFirstFrag)
	for {
		n := min(chunk, len(out))
		r := Response{
			Header:    Header{Flags: flags, CallID: id},
			AllocHint: uint32(len(out)),
			ContextID: contextID,
			Stub:      out[:n],
		}
		out = out[n:]
		if len(out) == 0 {
			r.Flags |= FlagLastFrag
		}
		pdu := encode(&r)
		if c.auth.protects() {
			pdu = c.sealResponse(pdu)
		}
		emit(pdu)
		if len(out) == 0 {
			return
		}
		flags = 0
	}
}

// fault emits a fault PDU for a call that did not execute.
func (c *Conn) fault(id uint32, contextID uint16, status uint32, emit func([]byte)) {
	f := Fault{
		Header:    Header{Flags: FlagFirstFrag | FlagLastFrag | FlagDidNotExecute, CallID: id},
		ContextID: contextID,
		Status:    status,
	}
	emit(encode(&f))
}
