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
		return r.serveHasOpenBelow(op.HasOpenBelow), nil
	case *peerv1.CallRequest_AckLease:
		if req.Route == nil {
			// An acknowledgment looking for its lease (ackAnywhere): only
			// the table that knows the lease takes it, whatever shard.
			return answer(r.serveAckLease(call{ctx, state.FileKey{}}, op.AckLease))
		}
	}
	c := call{ctx, keyOf(req.Key)}
	if err := r.own.owns(req.Route, c.key); err != nil {
		return nil, err
	}
	return answer(r.serveCall(c, req))
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
func (r *Router) serveCall(c call, req *peerv1.CallRequest) (*peerv1.CallResponse, error) {
	switch op := req.Op.(type) {
	case *peerv1.CallRequest_Remove:
		return r.serveRemove(c, op.Remove)
	case *peerv1.CallRequest_Drop:
		return r.serveDrop(c, op.Drop)
	case *peerv1.CallRequest_Ack:
		return r.serveAck(c, op.Ack)
	case *peerv1.CallRequest_AckLease:
		return r.serveAckLease(c, op.AckLease)
	case *peerv1.CallRequest_BreakRead:
		return r.serveBreakRead(c, op.BreakRead)
	case *peerv1.CallRequest_MarkDeletePending:
		return r.serveMarkDeletePending(c, op.MarkDeletePending)
	case *peerv1.CallRequest_SetDeletePending:
		return r.serveSetDeletePending(c, op.SetDeletePending)
	case *peerv1.CallRequest_DeletePending:
		return r.serveDeletePending(c, op.DeletePending)
	case *peerv1.CallRequest_CheckRename:
		return r.serveCheckRename(c, op.CheckRename)
	case *peerv1.CallRequest_Renamed:
		return r.serveRenamed(c, op.Renamed)
	case *peerv1.CallRequest_NameOf:
		return r.serveNameOf(c, op.NameOf)
	case *peerv1.CallRequest_CheckAccess:
		return r.serveCheckAccess(c, op.CheckAccess)
	case *peerv1.CallRequest_StreamOpen:
		return r.serveStreamOpen(c, op.StreamOpen)
	case *peerv1.CallRequest_StreamOf:
		return r.serveStreamOf(c, op.StreamOf)
	case *peerv1.CallRequest_RenamedStream:
		return r.serveRenamedStream(c, op.RenamedStream)
	case *peerv1.CallRequest_CachingOf:
		return r.serveCachingOf(c, op.CachingOf)
	case *peerv1.CallRequest_Oplock:
		return r.serveOplock(c, op.Oplock)
	case *peerv1.CallRequest_Sole:
		return r.serveSole(c, op.Sole)
	case *peerv1.CallRequest_Detach:
		return r.serveDetach(c, op.Detach)
	case *peerv1.CallRequest_ParentLeaseOf:
		return r.serveParentLeaseOf(c, op.ParentLeaseOf)
	case *peerv1.CallRequest_BreakDirLeases:
		return r.serveBreakDirLeases(c, op.BreakDirLeases)
	case *peerv1.CallRequest_Lock:
		return r.serveLock(c, op.Lock)
	case *peerv1.CallRequest_Unlock:
		return r.serveUnlock(c, op.Unlock)
	case *peerv1.CallRequest_ReleaseLocks:
		return r.serveReleaseLocks(c, op.ReleaseLocks)
	case *peerv1.CallRequest_CheckIo:
		return r.serveCheckIO(c, op.CheckIo)
	case *peerv1.CallRequest_LockCount:
		return r.serveLockCount(c, op.LockCount)
	case *peerv1.CallRequest_Handover:
		return r.serveHandover(c, op.Handover) // durable.go
	case *peerv1.CallRequest_ReturnDelegation:
		r.dg.takeBack(c.key, op.ReturnDelegation) // deleg.go
		return &peerv1.CallResponse{}, nil
	}
	return nil, status.Errorf(codes.InvalidArgument, "operation %v is not a Call", opOf(req))
}

// openOf is the open ref names, which the owner must have.
func (r *Router) openOf(ref *peerv1.OpenRef, key state.FileKey) (*state.Open, error) {
	if o := r.own.lookup(ref); o != nil {
		return o, nil
	}
	return nil, status.Errorf(codes.NotFound, "no open %v of %v", ref, key)
}

// exceptOf is the open a break spares: ref's open, or — when it closed
// meanwhile — a stand-in of its stream that spares no one.
func (r *Router) exceptOf(ref *peerv1.OpenRef, stream string, key state.FileKey) *state.Open {
	if o := r.own.lookup(ref); o != nil {
		return o
	}
	return &state.Open{Key: key, Stream: stream}
}

// serveRemove closes an open; one already gone is closed.
func (r *Router) serveRemove(c call, m *peerv1.RemoveOp) (*peerv1.CallResponse, error) {
	o := r.own.lookup(m.Open)
	if o == nil {
		return &peerv1.CallResponse{}, nil // removing is idempotent
	}
	last, deletePending := r.own.closeProxy(o)
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_Remove{Remove: &peerv1.RemoveResult{Last: last, DeletePending: deletePending}}}, nil
}

// serveDrop closes an open as a CLOSE does; one already gone is closed.
func (r *Router) serveDrop(c call, m *peerv1.DropOp) (*peerv1.CallResponse, error) {
	o := r.own.lookup(m.Open)
	if o == nil {
		return &peerv1.CallResponse{}, nil
	}
	ok, done := r.own.leaving(o)
	if !ok {
		return &peerv1.CallResponse{}, nil
	}
	r.locks.Release(o)
	stream, file := r.table.Drop(o)
	done()
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_Drop{Drop: &peerv1.DropResult{DeleteStream: stream, DeleteFile: file}}}, nil
}

func (r *Router) serveAck(c call, m *peerv1.AckOp) (*peerv1.CallResponse, error) {
	o, err := r.openOf(m.Open, c.key)
	if err != nil {
		return nil, err
	}
	acked := r.table.Ack(o, uint8(m.Level))
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_Ack{Ack: &peerv1.AckResult{Acked: acked, Level: uint32(r.table.Oplock(o))}}}, nil
}

func (r *Router) serveAckLease(c call, m *peerv1.AckLeaseOp) (*peerv1.CallResponse, error) {
	st, err := r.table.AckLease(leaseIDOf(m.Lease), m.State)
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_AckLease{AckLease: &peerv1.AckLeaseResult{State: st}}}, err
}

func (r *Router) serveBreakRead(c call, m *peerv1.BreakReadOp) (*peerv1.CallResponse, error) {
	r.table.BreakRead(c.key, r.exceptOf(m.Except, m.ExceptStream, c.key))
	return &peerv1.CallResponse{}, nil
}

func (r *Router) serveMarkDeletePending(c call, m *peerv1.MarkDeletePendingOp) (*peerv1.CallResponse, error) {
	o, err := r.openOf(m.Open, c.key)
	if err != nil {
		return nil, err
	}
	r.own.markPending(c.key, m.Pending, func() { r.table.MarkDeletePending(o, m.Pending) })
	return &peerv1.CallResponse{}, nil
}

func (r *Router) serveSetDeletePending(c call, m *peerv1.SetDeletePendingOp) (*peerv1.CallResponse, error) {
	r.own.markPending(c.key, m.Pending, func() { r.table.SetDeletePending(c.key, m.Pending) })
	return &peerv1.CallResponse{}, nil
}

func (r *Router) serveDeletePending(c call, m *peerv1.DeletePendingOp) (*peerv1.CallResponse, error) {
	pending := r.table.DeletePending(c.key)
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_DeletePending{DeletePending: &peerv1.DeletePendingResult{Pending: pending}}}, nil
}

// serveCheckRename, serveCheckAccess, serveStreamOpen and serveSole
// refuse only after the nodes holding opens of the file flushed their
// closes (closing.go) — but the caller's, which came before on its stream.
func (r *Router) serveCheckRename(c call, m *peerv1.CheckRenameOp) (resp *peerv1.CallResponse, err error) {
	o, err := r.openOf(m.Open, c.key)
	if err != nil {
		return nil, err
	}
	r.own.flushFor(c.key, m.Open.GetNode(), func() bool { err = r.table.CheckRename(o); return err != nil })
	return &peerv1.CallResponse{}, err
}

func (r *Router) serveRenamed(c call, m *peerv1.RenamedOp) (*peerv1.CallResponse, error) {
	r.dg.without(c.key, func(bool) { r.table.Renamed(c.key, m.Name) })
	return &peerv1.CallResponse{}, nil
}

func (r *Router) serveNameOf(c call, m *peerv1.NameOfOp) (*peerv1.CallResponse, error) {
	o, err := r.openOf(m.Open, c.key)
	if err != nil {
		return nil, err
	}
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_NameOf{NameOf: &peerv1.NameOfResult{Name: r.table.NameOf(o)}}}, nil
}

func (r *Router) serveHasOpenBelow(m *peerv1.HasOpenBelowOp) *peerv1.CallResponse {
	found := r.own.hasOpenBelow(m.Dir)
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_HasOpenBelow{HasOpenBelow: &peerv1.HasOpenBelowResult{Found: found}}}
}

func (r *Router) serveCheckAccess(c call, m *peerv1.CheckAccessOp) (resp *peerv1.CallResponse, err error) {
	r.own.flushFor(c.key, "", func() bool { err = r.table.CheckAccess(c.key, m.Access, m.ShareAccess); return err != nil })
	return &peerv1.CallResponse{}, err
}

func (r *Router) serveStreamOpen(c call, m *peerv1.StreamOpenOp) (*peerv1.CallResponse, error) {
	var open bool
	r.own.flushFor(c.key, m.Except.GetNode(), func() bool { open = r.table.StreamOpen(c.key, m.Stream, r.own.lookup(m.Except)); return open })
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_StreamOpen{StreamOpen: &peerv1.StreamOpenResult{Open: open}}}, nil
}

func (r *Router) serveStreamOf(c call, m *peerv1.StreamOfOp) (*peerv1.CallResponse, error) {
	o, err := r.openOf(m.Open, c.key)
	if err != nil {
		return nil, err
	}
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_StreamOf{StreamOf: &peerv1.StreamOfResult{Stream: r.table.StreamOf(o)}}}, nil
}

func (r *Router) serveRenamedStream(c call, m *peerv1.RenamedStreamOp) (*peerv1.CallResponse, error) {
	r.dg.without(c.key, func(bool) { r.table.RenamedStream(c.key, m.From, m.To) })
	return &peerv1.CallResponse{}, nil
}

func (r *Router) serveCachingOf(c call, m *peerv1.CachingOfOp) (*peerv1.CallResponse, error) {
	o, err := r.openOf(m.Open, c.key)
	if err != nil {
		return nil, err
	}
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_CachingOf{CachingOf: &peerv1.CachingOfResult{Caching: cachingPB(r.table.CachingOf(o))}}}, nil
}

func (r *Router) serveOplock(c call, m *peerv1.OplockOp) (*peerv1.CallResponse, error) {
	o, err := r.openOf(m.Open, c.key)
	if err != nil {
		return nil, err
	}
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_Oplock{Oplock: &peerv1.OplockResult{Level: uint32(r.table.Oplock(o))}}}, nil
}

func (r *Router) serveSole(c call, m *peerv1.SoleOp) (*peerv1.CallResponse, error) {
	o, err := r.openOf(m.Open, c.key)
	if err != nil {
		return nil, err
	}
	res := &peerv1.SoleResult{}
	r.own.flushFor(c.key, m.Open.GetNode(), func() bool { res.Sole, res.DeletePending = r.table.Sole(o); return !res.Sole })
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_Sole{Sole: res}}, nil
}

// serveDetach: the holder delivers the breaks of a detached open itself;
// the owner only refuses while a break waits for an acknowledgment.
func (r *Router) serveDetach(c call, m *peerv1.DetachOp) (*peerv1.CallResponse, error) {
	o, err := r.openOf(m.Open, c.key)
	if err != nil {
		return nil, err
	}
	accepted := r.table.Detach(o, o.Breaker)
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_Detach{Detach: &peerv1.DetachResult{Accepted: accepted}}}, nil
}

func (r *Router) serveParentLeaseOf(c call, m *peerv1.ParentLeaseOfOp) (*peerv1.CallResponse, error) {
	o, err := r.openOf(m.Open, c.key)
	if err != nil {
		return nil, err
	}
	id, found := r.table.ParentLeaseOf(o)
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_ParentLeaseOf{ParentLeaseOf: &peerv1.ParentLeaseOfResult{Found: found, Lease: leaseKeyPB(id)}}}, nil
}

func (r *Router) serveBreakDirLeases(c call, m *peerv1.BreakDirLeasesOp) (*peerv1.CallResponse, error) {
	if r.table.DirLeases() {
		r.table.BreakDirLeases(c.key, leaseIDOf(m.Except), m.Except != nil)
	}
	return &peerv1.CallResponse{}, nil
}

func (r *Router) serveLock(c call, m *peerv1.LockOp) (*peerv1.CallResponse, error) {
	o, err := r.openOf(m.Open, c.key)
	if err != nil {
		return nil, err
	}
	return &peerv1.CallResponse{LocksPresent: true}, r.lockLocal(o, locksOf(m.Locks))
}

func (r *Router) serveUnlock(c call, m *peerv1.UnlockOp) (*peerv1.CallResponse, error) {
	o, err := r.openOf(m.Open, c.key)
	if err != nil {
		return nil, err
	}
	n, err := r.locks.Unlock(o, locksOf(m.Locks))
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_Unlock{Unlock: &peerv1.UnlockResult{Count: uint32(n)}}}, err
}

// serveReleaseLocks releases an open's locks; an open already gone has
// none.
func (r *Router) serveReleaseLocks(c call, m *peerv1.ReleaseLocksOp) (*peerv1.CallResponse, error) {
	if o := r.own.lookup(m.Open); o != nil {
		r.locks.Release(o)
	}
	return &peerv1.CallResponse{}, nil
}

func (r *Router) serveCheckIO(c call, m *peerv1.CheckIOOp) (*peerv1.CallResponse, error) {
	o, err := r.openOf(m.Open, c.key)
	if err != nil {
		return nil, err
	}
	return &peerv1.CallResponse{}, r.locks.CheckIO(o, m.Offset, m.Length, m.Write)
}

func (r *Router) serveLockCount(c call, m *peerv1.LockCountOp) (*peerv1.CallResponse, error) {
	o, err := r.openOf(m.Open, c.key)
	if err != nil {
		return nil, err
	}
	return &peerv1.CallResponse{Result: &peerv1.CallResponse_LockCount{LockCount: &peerv1.LockCountResult{Count: uint32(r.locks.LockCount(o))}}}, nil
}

func (r *Router) serveHandover(c call, m *peerv1.HandoverOp) (*peerv1.CallResponse, error) {
	o, err := r.openOf(m.From, c.key)
	if err != nil {
		return nil, err
	}
	return r.own.handoverProxy(o, m.To)
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
		err = r.waitBreakHandle(c, op.BreakHandle, onWait)
	case *peerv1.CallRequest_LockWait:
		err = r.waitLock(c, op.LockWait, onWait)
	default:
		return status.Errorf(codes.InvalidArgument, "operation %v is not a Wait", opOf(req))
	}
	if _, ok := status.FromError(err); ok && err != nil {
		return err
	}
	if c.ctx.Err() != nil {
		return status.FromContextError(c.ctx.Err()).Err()
	}
	code, msg := errCode(err)
	return stream.Send(&peerv1.AdmitEvent{Error: code, Message: msg, LocksPresent: opOf(req) == OpLockWait})
}

func (r *Router) waitBreakHandle(c call, m *peerv1.BreakHandleOp, onWait func()) error {
	return r.table.BreakHandle(c.ctx, c.key, r.exceptOf(m.Except, m.ExceptStream, c.key), onWait)
}

func (r *Router) waitLock(c call, m *peerv1.LockWaitOp, onWait func()) error {
	o := r.own.lookup(m.Open)
	if o == nil || m.Lock == nil {
		return status.Error(codes.InvalidArgument, "a blocking lock needs its open and one range")
	}
	return r.lockWaitLocal(c.ctx, o, lockOf(m.Lock), onWait)
}
