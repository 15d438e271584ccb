package peer

import (
	"errors"
	"time"

	"github.com/smbcluster/smbcluster/node/state"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
)

// The copies between node/state's types and their messages
// (proto/smbcluster/peer/v1), each way, in one place: ...PB makes a
// message, ...Of reads one.

// The state errors as they cross nodes.
var errCodes = []struct {
	err  error
	code peerv1.Error
}{
	{state.ErrSharingViolation, peerv1.Error_ERROR_SHARING_VIOLATION},
	{state.ErrDeletePending, peerv1.Error_ERROR_DELETE_PENDING},
	{state.ErrLeaseKeyInUse, peerv1.Error_ERROR_LEASE_KEY_IN_USE},
	{state.ErrDuplicateCreate, peerv1.Error_ERROR_DUPLICATE_CREATE},
	{state.ErrNoLease, peerv1.Error_ERROR_NO_LEASE},
	{state.ErrNotBreaking, peerv1.Error_ERROR_NOT_BREAKING},
	{state.ErrAckNotAccepted, peerv1.Error_ERROR_ACK_NOT_ACCEPTED},
	{state.ErrLockConflict, peerv1.Error_ERROR_LOCK_CONFLICT},
	{state.ErrLockNotGranted, peerv1.Error_ERROR_LOCK_NOT_GRANTED},
	{state.ErrRangeNotLocked, peerv1.Error_ERROR_RANGE_NOT_LOCKED},
	{state.ErrInvalidLockRange, peerv1.Error_ERROR_INVALID_RANGE},
}

// errCode is err as it crosses nodes, with its text for ERROR_OTHER.
func errCode(err error) (peerv1.Error, string) {
	if err == nil {
		return peerv1.Error_ERROR_UNSPECIFIED, ""
	}
	for _, e := range errCodes {
		if errors.Is(err, e.err) {
			return e.code, ""
		}
	}
	if errors.Is(err, errCancelled) {
		return peerv1.Error_ERROR_CANCELLED, ""
	}
	return peerv1.Error_ERROR_OTHER, err.Error()
}

// errCancelled is the owner's answer to a wait whose caller went away.
var errCancelled = errors.New("peer: cancelled")

// codeErr is the inverse of errCode.
func codeErr(c peerv1.Error, msg string) error {
	if c == peerv1.Error_ERROR_UNSPECIFIED {
		return nil
	}
	for _, e := range errCodes {
		if e.code == c {
			return e.err
		}
	}
	if c == peerv1.Error_ERROR_CANCELLED {
		return errCancelled
	}
	return errors.New("peer: owner: " + msg)
}

func keyPB(k state.FileKey) *peerv1.FileKey {
	return &peerv1.FileKey{Volume: k.Volume, FileId: k.FileID}
}

func keyOf(k *peerv1.FileKey) state.FileKey {
	return state.FileKey{Volume: k.GetVolume(), FileID: k.GetFileId()}
}

func guid(b []byte) (g [16]byte) {
	copy(g[:], b)
	return g
}

func leaseReqPB(l *state.LeaseRequest) *peerv1.LeaseRequest {
	if l == nil {
		return nil
	}
	return &peerv1.LeaseRequest{
		ClientGuid: l.ID.Client[:], Key: l.ID.Key[:], State: l.State, Version: int32(l.Version),
		Epoch: uint32(l.Epoch), ParentKey: l.ParentKey[:], HasParent: l.HasParent,
	}
}

func leaseReqOf(l *peerv1.LeaseRequest) *state.LeaseRequest {
	if l == nil {
		return nil
	}
	return &state.LeaseRequest{
		ID: state.LeaseID{Client: guid(l.ClientGuid), Key: guid(l.Key)}, State: l.State, Version: int(l.Version),
		Epoch: uint16(l.Epoch), ParentKey: guid(l.ParentKey), HasParent: l.HasParent,
	}
}

func cachingPB(c state.Caching) *peerv1.Caching {
	return &peerv1.Caching{
		State: c.State, Lease: c.Lease, ClientGuid: c.ID.Client[:], Key: c.ID.Key[:], Version: int32(c.Version),
		Epoch: uint32(c.Epoch), ParentKey: c.ParentKey[:], HasParent: c.HasParent, Breaking: c.Breaking,
	}
}

func cachingOf(c *peerv1.Caching) state.Caching {
	if c == nil {
		return state.Caching{}
	}
	return state.Caching{
		State: c.State, Lease: c.Lease, ID: state.LeaseID{Client: guid(c.ClientGuid), Key: guid(c.Key)},
		Version: int(c.Version), Epoch: uint16(c.Epoch), ParentKey: guid(c.ParentKey), HasParent: c.HasParent,
		Breaking: c.Breaking,
	}
}

func grantEvent(g state.Grant) *peerv1.AdmitEvent {
	ev := &peerv1.AdmitEvent{Oplock: uint32(g.Oplock)}
	if l := g.Lease; l != nil {
		ev.Lease = &peerv1.Caching{
			State: l.State, Lease: true, Key: l.Key[:], Version: int32(l.Version), Epoch: uint32(l.Epoch),
			ParentKey: l.ParentKey[:], HasParent: l.HasParent,
		}
		ev.BreakInProgress = l.BreakInProgress
	}
	return ev
}

// admittedEvent answers an Admit of an open already admitted with its
// caching now.
func admittedEvent(c state.Caching, locks bool) *peerv1.AdmitEvent {
	ev := &peerv1.AdmitEvent{LocksPresent: locks}
	if c.Lease {
		ev.Lease = &peerv1.Caching{State: c.State, Lease: true, Key: c.ID.Key[:], Version: int32(c.Version),
			Epoch: uint32(c.Epoch), ParentKey: c.ParentKey[:], HasParent: c.HasParent}
		ev.BreakInProgress = c.Breaking
	} else {
		ev.Oplock = uint32(c.Oplock())
	}
	return ev
}

func grantOf(ev *peerv1.AdmitEvent) state.Grant {
	g := state.Grant{Oplock: uint8(ev.Oplock)}
	if l := ev.Lease; l != nil {
		g.Lease = &state.LeaseGrant{
			Key: guid(l.Key), State: l.State, BreakInProgress: ev.BreakInProgress, Version: int(l.Version),
			Epoch: uint16(l.Epoch), ParentKey: guid(l.ParentKey), HasParent: l.HasParent,
		}
	}
	return g
}

func locksPB(ls []state.Lock) []*peerv1.Lock {
	out := make([]*peerv1.Lock, len(ls))
	for i, l := range ls {
		out[i] = lockPB(l)
	}
	return out
}

func lockPB(l state.Lock) *peerv1.Lock {
	return &peerv1.Lock{Offset: l.Offset, Length: l.Length, Exclusive: l.Exclusive}
}

func lockOf(l *peerv1.Lock) state.Lock {
	return state.Lock{Offset: l.GetOffset(), Length: l.GetLength(), Exclusive: l.GetExclusive()}
}

// leaseKeyPB names a lease on the wire.
func leaseKeyPB(id state.LeaseID) *peerv1.LeaseKey {
	return &peerv1.LeaseKey{ClientGuid: id.Client[:], Key: id.Key[:]}
}

func leaseIDOf(k *peerv1.LeaseKey) state.LeaseID {
	return state.LeaseID{Client: guid(k.GetClientGuid()), Key: guid(k.GetKey())}
}

func locksOf(ls []*peerv1.Lock) []state.Lock {
	out := make([]state.Lock, len(ls))
	for i, l := range ls {
		out[i] = lockOf(l)
	}
	return out
}

func openDesc(o *state.Open, ref *peerv1.OpenRef) *peerv1.OpenDesc {
	d := &peerv1.OpenDesc{Ref: ref, Key: keyPB(o.Key), Name: o.Name, Stream: o.Stream, Access: o.Access, ShareAccess: o.ShareAccess}
	if o.Create != (state.CreateID{}) {
		d.CreateId = append(append([]byte(nil), o.Create.Client[:]...), o.Create.Create[:]...)
	}
	return d
}

// createIDOf is an OpenDesc's create_id.
func createIDOf(b []byte) (c state.CreateID) {
	if len(b) == 32 {
		copy(c.Client[:], b[:16])
		copy(c.Create[:], b[16:])
	}
	return c
}

func leaseBreakPB(l state.LeaseBreak) *peerv1.LeaseBreak {
	return &peerv1.LeaseBreak{
		ClientGuid: l.ID.Client[:], Key: l.ID.Key[:], From: l.From, To: l.To, Epoch: uint32(l.Epoch),
		Version: int32(l.Version), AckRequired: l.AckRequired,
	}
}

func leaseBreakOf(l *peerv1.LeaseBreak) state.LeaseBreak {
	return state.LeaseBreak{
		ID: state.LeaseID{Client: guid(l.GetClientGuid()), Key: guid(l.GetKey())}, From: l.GetFrom(), To: l.GetTo(),
		Epoch: uint16(l.GetEpoch()), Version: int(l.GetVersion()), AckRequired: l.GetAckRequired(),
	}
}

// durableQueryPB is a reconnect's TakeDurable, for the open to.
func durableQueryPB(q state.DurableQuery, to state.HolderRef) *peerv1.TakeDurableRequest {
	return &peerv1.TakeDurableRequest{
		FileId: q.FileID, V2: q.V2, CreateGuid: q.CreateGUID[:], ClientGuid: q.ClientGUID[:],
		User: q.User, Domain: q.Domain, Share: q.Share, Name: q.Name,
		HasLease: q.HasLease, LeaseKey: q.LeaseKey[:], To: refPB(to),
	}
}

func durableQueryOf(req *peerv1.TakeDurableRequest) (state.DurableQuery, state.HolderRef) {
	q := state.DurableQuery{
		FileID: req.GetFileId(), V2: req.GetV2(), CreateGUID: guid(req.GetCreateGuid()), ClientGUID: guid(req.GetClientGuid()),
		User: req.GetUser(), Domain: req.GetDomain(), Share: req.GetShare(), Name: req.GetName(),
		HasLease: req.GetHasLease(), LeaseKey: guid(req.GetLeaseKey()),
	}
	to := req.GetTo()
	return q, state.HolderRef{Node: to.GetNode(), Epoch: to.GetEpoch(), ID: to.GetId()}
}

func handoverPB(h state.Handover) *peerv1.TakeDurableResponse {
	rec := h.Rec
	return &peerv1.TakeDurableResponse{
		Found: true, Key: keyPB(rec.Key), Name: h.Name, Stream: h.Stream, Access: h.Access, ShareAccess: h.ShareAccess,
		DeleteOnClose: h.DeleteOnClose, Position: h.Position, Caching: cachingPB(h.Caching), Locks: locksPB(h.Locks),
		Allocation: h.Allocation, Version: int32(rec.Version), CreateGuid: rec.CreateGUID[:], AppInstanceId: rec.AppInstanceID[:],
		TimeoutMs: uint64(rec.Timeout / time.Millisecond), User: rec.User, Domain: rec.Domain, Share: rec.Share,
		Persistent: rec.Persistent,
	}
}

func handoverOf(p *peerv1.TakeDurableResponse) state.Handover {
	h := state.Handover{
		Name: p.Name, Stream: p.Stream, Access: p.Access, ShareAccess: p.ShareAccess,
		DeleteOnClose: p.DeleteOnClose, Position: p.Position, Caching: cachingOf(p.Caching), Locks: locksOf(p.Locks),
		Allocation: p.Allocation,
	}
	h.Rec = state.DurableRecord{
		Key: keyOf(p.Key), Share: p.Share, Name: p.Name, Version: int(p.Version), CreateGUID: guid(p.CreateGuid),
		AppInstanceID: guid(p.AppInstanceId), User: p.User, Domain: p.Domain,
		Timeout:  time.Duration(p.TimeoutMs) * time.Millisecond,
		LeaseKey: h.Caching.ID.Key, HasLease: h.Caching.Lease, Persistent: p.Persistent,
	}
	return h
}

func refPB(to state.HolderRef) *peerv1.OpenRef {
	return &peerv1.OpenRef{Node: to.Node, Epoch: to.Epoch, Id: to.ID}
}

// orphanDesc is the open a dead holder's durable open record describes.
func orphanDesc(rec Orphan) *peerv1.OpenDesc {
	return &peerv1.OpenDesc{
		Ref: &peerv1.OpenRef{Node: rec.Node, Epoch: rec.Epoch, Id: rec.Ref}, Key: keyPB(rec.Key),
		Name: rec.Path, Stream: rec.Stream, Access: rec.Access, ShareAccess: rec.Share,
	}
}

// watchSpecPB is watch id of share, made at since.
func watchSpecPB(id uint64, share string, w state.Watch, since time.Time) *peerv1.WatchSpec {
	return &peerv1.WatchSpec{Id: id, Share: share, Dir: w.Dir, Filter: w.Filter, TreeFilter: w.TreeFilter, Since: since.UnixNano()}
}

func watchOf(s *peerv1.WatchSpec) state.Watch {
	return state.Watch{Dir: s.GetDir(), Filter: s.GetFilter(), TreeFilter: s.GetTreeFilter()}
}
