package peer

import peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"

// Op names an operation on a file's state at its owner, for counting and
// metrics (Stats.ByOp, Router.Observe): a CallRequest's operation, or
// Admit.
type Op uint8

// The operations, one per CallRequest op message (peer_service.proto).
const (
	OpAdmit Op = iota
	OpRemove
	OpDrop
	OpAck
	OpAckLease
	OpBreakRead
	OpBreakHandle
	OpMarkDeletePending
	OpSetDeletePending
	OpDeletePending
	OpCheckRename
	OpRenamed
	OpNameOf
	OpHasOpenBelow
	OpCheckAccess
	OpStreamOpen
	OpStreamOf
	OpRenamedStream
	OpCachingOf
	OpOplock
	OpSole
	OpDetach
	OpParentLeaseOf
	OpBreakDirLeases
	OpLock
	OpLockWait
	OpUnlock
	OpReleaseLocks
	OpCheckIO
	OpLockCount
	OpHandover
	OpFlush
	OpReturn
	numOps
)

// opNames are the metrics' names of the operations (Call/OP_…, Wait/OP_…).
var opNames = [numOps]string{
	OpAdmit: "ADMIT", OpRemove: "OP_REMOVE", OpDrop: "OP_DROP", OpAck: "OP_ACK", OpAckLease: "OP_ACK_LEASE",
	OpBreakRead: "OP_BREAK_READ", OpBreakHandle: "OP_BREAK_HANDLE", OpMarkDeletePending: "OP_MARK_DELETE_PENDING",
	OpSetDeletePending: "OP_SET_DELETE_PENDING", OpDeletePending: "OP_DELETE_PENDING", OpCheckRename: "OP_CHECK_RENAME",
	OpRenamed: "OP_RENAMED", OpNameOf: "OP_NAME_OF", OpHasOpenBelow: "OP_HAS_OPEN_BELOW", OpCheckAccess: "OP_CHECK_ACCESS",
	OpStreamOpen: "OP_STREAM_OPEN", OpStreamOf: "OP_STREAM_OF", OpRenamedStream: "OP_RENAMED_STREAM",
	OpCachingOf: "OP_CACHING_OF", OpOplock: "OP_OPLOCK", OpSole: "OP_SOLE", OpDetach: "OP_DETACH",
	OpParentLeaseOf: "OP_PARENT_LEASE_OF", OpBreakDirLeases: "OP_BREAK_DIR_LEASES", OpLock: "OP_LOCK",
	OpLockWait: "OP_LOCK_WAIT", OpUnlock: "OP_UNLOCK", OpReleaseLocks: "OP_RELEASE_LOCKS", OpCheckIO: "OP_CHECK_IO",
	OpLockCount: "OP_LOCK_COUNT", OpHandover: "OP_HANDOVER", OpFlush: "OP_FLUSH", OpReturn: "OP_RETURN",
}

func (op Op) String() string {
	if op < numOps {
		return opNames[op]
	}
	return "OP_UNKNOWN"
}

// opOf is req's operation.
func opOf(req *peerv1.CallRequest) Op {
	switch req.Op.(type) {
	case *peerv1.CallRequest_Remove:
		return OpRemove
	case *peerv1.CallRequest_Drop:
		return OpDrop
	case *peerv1.CallRequest_Ack:
		return OpAck
	case *peerv1.CallRequest_AckLease:
		return OpAckLease
	case *peerv1.CallRequest_BreakRead:
		return OpBreakRead
	case *peerv1.CallRequest_BreakHandle:
		return OpBreakHandle
	case *peerv1.CallRequest_MarkDeletePending:
		return OpMarkDeletePending
	case *peerv1.CallRequest_SetDeletePending:
		return OpSetDeletePending
	case *peerv1.CallRequest_DeletePending:
		return OpDeletePending
	case *peerv1.CallRequest_CheckRename:
		return OpCheckRename
	case *peerv1.CallRequest_Renamed:
		return OpRenamed
	case *peerv1.CallRequest_NameOf:
		return OpNameOf
	case *peerv1.CallRequest_HasOpenBelow:
		return OpHasOpenBelow
	case *peerv1.CallRequest_CheckAccess:
		return OpCheckAccess
	case *peerv1.CallRequest_StreamOpen:
		return OpStreamOpen
	case *peerv1.CallRequest_StreamOf:
		return OpStreamOf
	case *peerv1.CallRequest_RenamedStream:
		return OpRenamedStream
	case *peerv1.CallRequest_CachingOf:
		return OpCachingOf
	case *peerv1.CallRequest_Oplock:
		return OpOplock
	case *peerv1.CallRequest_Sole:
		return OpSole
	case *peerv1.CallRequest_Detach:
		return OpDetach
	case *peerv1.CallRequest_ParentLeaseOf:
		return OpParentLeaseOf
	case *peerv1.CallRequest_BreakDirLeases:
		return OpBreakDirLeases
	case *peerv1.CallRequest_Lock:
		return OpLock
	case *peerv1.CallRequest_LockWait:
		return OpLockWait
	case *peerv1.CallRequest_Unlock:
		return OpUnlock
	case *peerv1.CallRequest_ReleaseLocks:
		return OpReleaseLocks
	case *peerv1.CallRequest_CheckIo:
		return OpCheckIO
	case *peerv1.CallRequest_LockCount:
		return OpLockCount
	case *peerv1.CallRequest_Handover:
		return OpHandover
	case *peerv1.CallRequest_Flush:
		return OpFlush
	case *peerv1.CallRequest_ReturnDelegation:
		return OpReturn
	}
	return numOps
}
