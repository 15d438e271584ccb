package peer

import (
	"errors"

	"github.com/smbcluster/smbcluster/node/state"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
)

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
		out[i] = &peerv1.Lock{Offset: l.Offset, Length: l.Length, Exclusive: l.Exclusive}
	}
	return out
}

func locksOf(ls []*peerv1.Lock) []state.Lock {
	out := make([]state.Lock, len(ls))
	for i, l := range ls {
		out[i] = state.Lock{Offset: l.Offset, Length: l.Length, Exclusive: l.Exclusive}
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
