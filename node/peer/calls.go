package peer

import (
	"context"

	"github.com/smbcluster/smbcluster/node/state"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The owner side of Call and Wait: one handler per operation, each
// given the operation's own message (peer_service.proto) once the
// request's route is checked.

// handlers serve Call and Wait at the owner: one method per operation,
// over the owner's tables and proxies.
type handlers struct {
	r     *Router
	ow    *owner
	table *state.Table
	locks *state.LockTable
}

// call is what every handler of an operation on a file gets.
type call struct {
	ctx context.Context
	key state.FileKey
}

// Call implements peerv1.PeerServiceServer: one short operation, run by
// its handler. A state error is the answer's error; a request that cannot
// be served (no such open, no operation) fails the call.
func (sv *Service) Call(ctx context.Context, req *peerv1.CallRequest) (*peerv1.CallResponse, error) {
	r := sv.r
	switch op := req.Op.(type) {
	case *peerv1.CallRequest_Flush:
		return &peerv1.CallResponse{}, nil // served after what the stream carried before (closing.go)
	case *peerv1.CallRequest_HasOpenBelow:
		return sv.h.serveHasOpenBelow(op.HasOpenBelow), nil
	case *peerv1.CallRequest_AckLease:
		if req.Route == nil {
			// An acknowledgment looking for its lease (ackAnywhere): only
			// the table that knows the lease takes it, whatever shard.
			return answer(sv.h.serveAckLease(call{ctx, state.FileKey{}}, op.AckLease))
		}
	}
	c := call{ctx, keyOf(req.Key)}
	if err := r.own.owns(req.Route, c.key); err != nil {
		return nil, err
	}
	resp, err := sv.h.serveCall(c, req)
	// Checked again before the answer: a check may have waited for a
	// recall or flushes, and one answered by an owner that lost the shard
	// meanwhile is not the new owner's (Service.admit checks the same).
	if err := r.own.owns(req.Route, c.key); err != nil {
		return nil, err
	}
	return answer(resp, err)
}

// answer puts a handler's state error in its answer; a gRPC status
// fails the call.
func answer(resp *peerv1.CallResponse, err error) (*peerv1.CallResponse, error) {
	if err == nil {
		return resp, nil
	}
	if _, ok := status.FromError(err); ok {
		return nil, err
	}
	if resp == nil {
		resp = &peerv1.CallResponse{}
	}
	resp.Error, resp.Message = errCode(err)
	return resp, nil
}

// serveCall dispatches a Call to its operation's handler.
func (h handlers) serveCall(c call, req *peerv1.CallRequest) (*peerv1.CallResponse, error) {
	switch op := req.Op.(type) {
	case *peerv1.CallRequest_Remove:
		return h.serveRemove(c, op.Remove)
	case *peerv1.CallRequest_Drop:
		return h.serveDrop(c, op.Drop)
	case *peerv1.CallRequest_Ack:
		return h.serveAck(c, op.Ack)
	case *peerv1.CallRequest_AckLease:
		return h.serveAckLease(c, op.AckLease)
	case *peerv1.CallRequest_BreakRead:
		return h.serveBreakRead(c, op.BreakRead)
	case *peerv1.CallRequest_MarkDeletePending:
		return h.serveMarkDeletePending(c, op.MarkDeletePending)
	case *peerv1.CallRequest_SetDeletePending:
		return h.serveSetDeletePending(c, op.SetDeletePending)
	case *peerv1.CallRequest_DeletePending:
		return h.serveDeletePending(c, op.DeletePending)
	case *peerv1.CallRequest_CheckRename:
		return h.serveCheckRename(c, op.CheckRename)
	case *peerv1.CallRequest_Renamed:
		return h.serveRenamed(c, op.Renamed)
	case *peerv1.CallRequest_NameOf:
		return h.serveNameOf(c, op.NameOf)
	case *peerv1.CallRequest_CheckAccess:
		return h.serveCheckAccess(c, op.CheckAccess)
	case *peerv1.CallRequest_StreamOpen:
		return h.serveStreamOpen(c, op.StreamOpen)
	case *peerv1.CallRequest_StreamOf:
		return h.serveStreamOf(c, op.StreamOf)
	case *peerv1.CallRequest_RenamedStream:
		return h.serveRenamedStream(c, op.RenamedStream)
	case *peerv1.CallRequest_CachingOf:
		return h.serveCachingOf(c, op.CachingOf)
	case *peerv1.CallRequest_Oplock:
		return h.serveOplock(c, op.Oplock)
	case *peerv1.CallRequest_Sole:
		return h.serveSole(c, op.Sole)
	case *peerv1.CallRequest_Detach:
		return h.serveDetach(c, op.Detach)
	case *peerv1.CallRequest_ParentLeaseOf:
		return h.serveParentLeaseOf(c, op.ParentLeaseOf)
	case *peerv1.CallRequest_BreakDirLeases:
		return h.serveBreakDirLeases(c, op.BreakDirLeases)
	case *peerv1.CallRequest_Lock:
		return h.serveLock(c, op.Lock)
	case *peerv1.CallRequest_Unlock:
		return h.serveUnlock(c, op.Unlock)
	case *peerv1.CallRequest_ReleaseLocks:
		return h.serveReleaseLocks(c, op.ReleaseLocks)
	case *peerv1.CallRequest_CheckIo:
		return h.serveCheckIO(c, op.CheckIo)
	case *peerv1.CallRequest_LockCount:
		return h.serveLockCount(c, op.LockCount)
	case *peerv1.CallRequest_Handover:
		return h.serveHandover(c, op.Handover) // durable.go
	case *peerv1.CallRequest_ReturnDelegation:
		h.r.dg.takeBack(c.key, op.ReturnDelegation) // deleg.go
		return &peerv1.CallResponse{}, nil
	}
	return nil, status.Errorf(codes.InvalidArgument, "operation %v is not a Call", opOf(req))
}

// openOf is the open ref names, which the owner must have.
func (h handlers) openOf(ref *peerv1.OpenRef, key state.FileKey) (*state.Open, error) {
	if o := h.ow.lookup(ref); o != nil {
		return o, nil
	}
	return nil, status.Errorf(codes.NotFound, "no open %v of %v", ref, key)
}

// exceptOf is the open a break spares: ref's open, or — when it closed
// meanwhile — a stand-in of its stream that spares no one.
func (h handlers) exceptOf(ref *peerv1.OpenRef, stream string, key state.FileKey) *state.Open {
	if o := h.ow.lookup(ref); o != nil {
		return o
	}
	return &state.Open{Key: key, Stream: stream}
}

// serveRemove closes an open; one already gone is closed.
func (h handlers) serveRemove(c call, m *peerv1.RemoveOp) (*peerv1.CallResponse, error) {
	o := h.ow.lookup(m.Open)
	if o == nil {
		return &peerv1.CallResponse{}, nil // removing is idempotent
	}
	last, deletePending := h.ow.closeProxy(o)
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_Remove{Remove: &peerv1.RemoveResult{Last: last, DeletePending: deletePending}}}, nil
}

// serveDrop closes an open as a CLOSE does; one already gone is closed.
func (h handlers) serveDrop(c call, m *peerv1.DropOp) (*peerv1.CallResponse, error) {
	o := h.ow.lookup(m.Open)
	if o == nil {
		return &peerv1.CallResponse{}, nil
	}
	ok, done := h.ow.leaving(o)
	if !ok {
		return &peerv1.CallResponse{}, nil
	}
	h.locks.Release(o)
	stream, file := h.table.Drop(o)
	done()
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_Drop{Drop: &peerv1.DropResult{DeleteStream: stream, DeleteFile: file}}}, nil
}

func (h handlers) serveAck(c call, m *peerv1.AckOp) (*peerv1.CallResponse, error) {
	o, err := h.openOf(m.Open, c.key)
	if err != nil {
		return nil, err
	}
	acked := h.table.Ack(o, uint8(m.Level))
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_Ack{Ack: &peerv1.AckResult{Acked: acked, Level: uint32(h.table.Oplock(o))}}}, nil
}

func (h handlers) serveAckLease(c call, m *peerv1.AckLeaseOp) (*peerv1.CallResponse, error) {
	st, err := h.table.AckLease(leaseIDOf(m.Lease), m.State)
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_AckLease{AckLease: &peerv1.AckLeaseResult{State: st}}}, err
}

func (h handlers) serveBreakRead(c call, m *peerv1.BreakReadOp) (*peerv1.CallResponse, error) {
	h.table.BreakRead(c.key, h.exceptOf(m.Except, m.ExceptStream, c.key))
	return &peerv1.CallResponse{}, nil
}

func (h handlers) serveMarkDeletePending(c call, m *peerv1.MarkDeletePendingOp) (*peerv1.CallResponse, error) {
	o, err := h.openOf(m.Open, c.key)
	if err != nil {
		return nil, err
	}
	h.ow.markPending(c.key, m.Pending, func() { h.table.MarkDeletePending(o, m.Pending) })
	return &peerv1.CallResponse{}, nil
}

func (h handlers) serveSetDeletePending(c call, m *peerv1.SetDeletePendingOp) (*peerv1.CallResponse, error) {
	h.ow.markPending(c.key, m.Pending, func() { h.table.SetDeletePending(c.key, m.Pending) })
	return &peerv1.CallResponse{}, nil
}

func (h handlers) serveDeletePending(c call, m *peerv1.DeletePendingOp) (*peerv1.CallResponse, error) {
	pending := h.table.DeletePending(c.key)
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_DeletePending{DeletePending: &peerv1.DeletePendingResult{Pending: pending}}}, nil
}

// serveCheckRename, serveCheckAccess, serveStreamOpen and serveSole
// refuse only after the nodes holding opens of the file flushed their
// closes (closing.go) — but the caller's, which came before on its stream.
func (h handlers) serveCheckRename(c call, m *peerv1.CheckRenameOp) (resp *peerv1.CallResponse, err error) {
	o, err := h.openOf(m.Open, c.key)
	if err != nil {
		return nil, err
	}
	h.ow.flushFor(c.key, m.Open.GetNode(), func() bool { err = h.table.CheckRename(o); return err != nil })
	return &peerv1.CallResponse{}, err
}

func (h handlers) serveRenamed(c call, m *peerv1.RenamedOp) (*peerv1.CallResponse, error) {
	h.r.dg.without(c.key, func(bool) { h.table.Renamed(c.key, m.Name) })
	return &peerv1.CallResponse{}, nil
}

func (h handlers) serveNameOf(c call, m *peerv1.NameOfOp) (*peerv1.CallResponse, error) {
	o, err := h.openOf(m.Open, c.key)
	if err != nil {
		return nil, err
	}
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_NameOf{NameOf: &peerv1.NameOfResult{Name: h.table.NameOf(o)}}}, nil
}

func (h handlers) serveHasOpenBelow(m *peerv1.HasOpenBelowOp) *peerv1.CallResponse {
	found := h.ow.hasOpenBelow(m.Dir)
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_HasOpenBelow{HasOpenBelow: &peerv1.HasOpenBelowResult{Found: found}}}
}

func (h handlers) serveCheckAccess(c call, m *peerv1.CheckAccessOp) (resp *peerv1.CallResponse, err error) {
	h.ow.flushFor(c.key, "", func() bool { err = h.table.CheckAccess(c.key, m.Access, m.ShareAccess); return err != nil })
	return &peerv1.CallResponse{}, err
}

func (h handlers) serveStreamOpen(c call, m *peerv1.StreamOpenOp) (*peerv1.CallResponse, error) {
	var open bool
	h.ow.flushFor(c.key, m.Except.GetNode(), func() bool { open = h.table.StreamOpen(c.key, m.Stream, h.ow.lookup(m.Except)); return open })
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_StreamOpen{StreamOpen: &peerv1.StreamOpenResult{Open: open}}}, nil
}

func (h handlers) serveStreamOf(c call, m *peerv1.StreamOfOp) (*peerv1.CallResponse, error) {
	o, err := h.openOf(m.Open, c.key)
	if err != nil {
		return nil, err
	}
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_StreamOf{StreamOf: &peerv1.StreamOfResult{Stream: h.table.StreamOf(o)}}}, nil
}

func (h handlers) serveRenamedStream(c call, m *peerv1.RenamedStreamOp) (*peerv1.CallResponse, error) {
	h.r.dg.without(c.key, func(bool) { h.table.RenamedStream(c.key, m.From, m.To) })
	return &peerv1.CallResponse{}, nil
}

func (h handlers) serveCachingOf(c call, m *peerv1.CachingOfOp) (*peerv1.CallResponse, error) {
	o, err := h.openOf(m.Open, c.key)
	if err != nil {
		return nil, err
	}
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_CachingOf{CachingOf: &peerv1.CachingOfResult{Caching: cachingPB(h.table.CachingOf(o))}}}, nil
}

func (h handlers) serveOplock(c call, m *peerv1.OplockOp) (*peerv1.CallResponse, error) {
	o, err := h.openOf(m.Open, c.key)
	if err != nil {
		return nil, err
	}
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_Oplock{Oplock: &peerv1.OplockResult{Level: uint32(h.table.Oplock(o))}}}, nil
}

func (h handlers) serveSole(c call, m *peerv1.SoleOp) (*peerv1.CallResponse, error) {
	o, err := h.openOf(m.Open, c.key)
	if err != nil {
		return nil, err
	}
	res := &peerv1.SoleResult{}
	h.ow.flushFor(c.key, m.Open.GetNode(), func() bool { res.Sole, res.DeletePending = h.table.Sole(o); return !res.Sole })
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_Sole{Sole: res}}, nil
}

// serveDetach: the holder delivers the breaks of a detached open itself;
// the owner only refuses while a break waits for an acknowledgment.
func (h handlers) serveDetach(c call, m *peerv1.DetachOp) (*peerv1.CallResponse, error) {
	o, err := h.openOf(m.Open, c.key)
	if err != nil {
		return nil, err
	}
	accepted := h.table.Detach(o, o.Breaker)
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_Detach{Detach: &peerv1.DetachResult{Accepted: accepted}}}, nil
}

func (h handlers) serveParentLeaseOf(c call, m *peerv1.ParentLeaseOfOp) (*peerv1.CallResponse, error) {
	o, err := h.openOf(m.Open, c.key)
	if err != nil {
		return nil, err
	}
	id, found := h.table.ParentLeaseOf(o)
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_ParentLeaseOf{ParentLeaseOf: &peerv1.ParentLeaseOfResult{Found: found, Lease: leaseKeyPB(id)}}}, nil
}

func (h handlers) serveBreakDirLeases(c call, m *peerv1.BreakDirLeasesOp) (*peerv1.CallResponse, error) {
	if h.table.DirLeases() {
		h.table.BreakDirLeases(c.key, leaseIDOf(m.Except), m.Except != nil)
	}
	return &peerv1.CallResponse{}, nil
}

func (h handlers) serveLock(c call, m *peerv1.LockOp) (*peerv1.CallResponse, error) {
	o, err := h.openOf(m.Open, c.key)
	if err != nil {
		return nil, err
	}
	return &peerv1.CallResponse{LocksPresent: true}, h.r.lockLocal(o, locksOf(m.Locks))
}

func (h handlers) serveUnlock(c call, m *peerv1.UnlockOp) (*peerv1.CallResponse, error) {
	o, err := h.openOf(m.Open, c.key)
	if err != nil {
		return nil, err
	}
	n, err := h.locks.Unlock(o, locksOf(m.Locks))
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_Unlock{Unlock: &peerv1.UnlockResult{Count: uint32(n)}}}, err
}

// serveReleaseLocks releases an open's locks; an open already gone has
// none.
func (h handlers) serveReleaseLocks(c call, m *peerv1.ReleaseLocksOp) (*peerv1.CallResponse, error) {
	if o := h.ow.lookup(m.Open); o != nil {
		h.locks.Release(o)
	}
	return &peerv1.CallResponse{}, nil
}

func (h handlers) serveCheckIO(c call, m *peerv1.CheckIOOp) (*peerv1.CallResponse, error) {
	o, err := h.openOf(m.Open, c.key)
	if err != nil {
		return nil, err
	}
	return &peerv1.CallResponse{}, h.locks.CheckIO(o, m.Offset, m.Length, m.Write)
}

func (h handlers) serveLockCount(c call, m *peerv1.LockCountOp) (*peerv1.CallResponse, error) {
	o, err := h.openOf(m.Open, c.key)
	if err != nil {
		return nil, err
	}
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_LockCount{LockCount: &peerv1.LockCountResult{Count: uint32(h.locks.LockCount(o))}}}, nil
}

func (h handlers) serveHandover(c call, m *peerv1.HandoverOp) (*peerv1.CallResponse, error) {
	o, err := h.openOf(m.From, c.key)
	if err != nil {
		return nil, err
	}
	return h.ow.handoverProxy(o, m.To)
}

// Wait implements peerv1.PeerServiceServer: BreakHandle and blocking locks.
func (sv *Service) Wait(req *peerv1.CallRequest, stream peerv1.PeerService_WaitServer) error {
	return sv.wait(req, stream)
}

// wait runs a Wait operation by its handler: WAITING, then the result.
func (sv *Service) wait(req *peerv1.CallRequest, stream events) error {
	r := sv.r
	c := call{stream.Context(), keyOf(req.Key)}
	if err := r.own.owns(req.Route, c.key); err != nil {
		return err
	}
	onWait := func() { stream.Send(&peerv1.AdmitEvent{Waiting: true}) }
	var err error
	switch op := req.Op.(type) {
	case *peerv1.CallRequest_BreakHandle:
		err = sv.h.waitBreakHandle(c, op.BreakHandle, onWait)
	case *peerv1.CallRequest_LockWait:
		err = sv.h.waitLock(c, op.LockWait, onWait)
	default:
		return status.Errorf(codes.InvalidArgument, "operation %v is not a Wait", opOf(req))
	}
	if _, ok := status.FromError(err); ok && err != nil {
		return err
	}
	if c.ctx.Err() != nil {
		return status.FromContextError(c.ctx.Err()).Err()
	}
	// A lock granted after a long wait by an owner that lost the shard
	// meanwhile is not the new owner's: the holder routes again
	// (Service.admit checks the same).
	if err := sv.r.own.owns(req.Route, c.key); err != nil {
		return err
	}
	code, msg := errCode(err)
	return stream.Send(&peerv1.AdmitEvent{Error: code, Message: msg, LocksPresent: opOf(req) == OpLockWait})
}

func (h handlers) waitBreakHandle(c call, m *peerv1.BreakHandleOp, onWait func()) error {
	return h.table.BreakHandle(c.ctx, c.key, h.exceptOf(m.Except, m.ExceptStream, c.key), onWait)
}

func (h handlers) waitLock(c call, m *peerv1.LockWaitOp, onWait func()) error {
	o := h.ow.lookup(m.Open)
	if o == nil || m.Lock == nil {
		return status.Error(codes.InvalidArgument, "a blocking lock needs its open and one range")
	}
	return h.r.lockWaitLocal(c.ctx, o, lockOf(m.Lock), onWait)
}
