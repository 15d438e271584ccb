package share

import (
	"context"
	"errors"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
	"github.com/smbcluster/smbcluster/node/state"
)

// leaseRequest reads the lease a CREATE asks for ([MS-SMB2] 3.3.5.9.8,
// 3.3.5.9.11): the RqLs context, honoured only with the lease oplock level
// on a 2.1 or later connection. Version 2 needs a 3.x dialect.
func leaseRequest(r *server.Request, req *smb2.CreateRequest) (*state.LeaseRequest, bool) {
	if req.RequestedOplockLevel != smb2.OplockLevelLease || r.Session == nil || r.Session.Dialect < smb2.Dialect210 {
		return nil, false
	}
	k := req.Known()
	if !k.Valid(smb2.CtxRequestLease) {
		return nil, false
	}
	lr := k.Lease
	if lr.Version == 2 && r.Session.Dialect < smb2.Dialect300 {
		lr.Version = 1
	}
	out := &state.LeaseRequest{
		ID:      state.LeaseID{Client: r.Session.ClientGUID, Key: lr.Key},
		State:   lr.State,
		Version: lr.Version,
	}
	if lr.Version == 2 {
		out.Epoch = lr.Epoch
		out.ParentKey, out.HasParent = lr.ParentKey, lr.Flags&smb2.LeaseFlagParentLeaseKeySet != 0
	}
	return out, true
}

// leaseContext is the lease response context of a granted lease
// ([MS-SMB2] 2.2.14.2.10, 2.2.14.2.11).
func leaseContext(g *state.LeaseGrant) smb2.CreateContext {
	resp := smb2.LeaseResponse{Key: g.Key, State: g.State, Version: g.Version}
	if g.BreakInProgress {
		resp.Flags |= smb2.LeaseFlagBreakInProgress
	}
	if g.Version >= 2 {
		resp.Epoch = g.Epoch
		if g.HasParent {
			resp.Flags |= smb2.LeaseFlagParentLeaseKeySet
			resp.ParentKey = g.ParentKey
		}
	}
	return smb2.CreateContext{Name: "RqLs", Data: resp.Append(nil)}
}

// AckLease implements server.LeaseAcker ([MS-SMB2] 3.3.5.22.2).
func (d *Disk) AckLease(clientGUID, key [16]byte, st uint32) (uint32, error) {
	got, err := d.table.AckLease(state.LeaseID{Client: clientGUID, Key: key}, st)
	switch {
	case errors.Is(err, state.ErrNoLease):
		return 0, smb2.StatusObjectNameNotFound
	case errors.Is(err, state.ErrNotBreaking):
		return 0, smb2.StatusUnsuccessful
	case errors.Is(err, state.ErrAckNotAccepted):
		return 0, smb2.StatusRequestNotAccepted
	}
	return got, err
}

// breakHandlesFor breaks the handle caching of the file's other leases
// before a rename, waiting for the acknowledgments (the SET_INFO goes
// async meanwhile), as Windows does before renaming a file whose cached
// handles would pin the old name ([MS-SMB2] 3.3.4.7).
func (o *open) breakHandlesFor(r *server.Request, class uint8) error {
	if o.so == nil || class != fscc.FileRenameInformation && class != fscc.FileRenameInformationEx {
		return nil
	}
	ctx := r.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	return o.d.table.BreakHandle(ctx, o.so.Key, o.so, func() { r.GoAsync() })
}
