package share

import (
	"context"
	"errors"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
	"github.com/smbcluster/smbcluster/node/state"
	"github.com/smbcluster/smbcluster/node/vfs"
)

// Durable opens handed between nodes (server.DurableGiver on the node
// that held the open, server.DurableAdopter on the node its client
// reconnects through). The open's state at its file's owner changes
// hands without a gap (state.DurableFiles); the vfs file is closed on
// the old node and opened again on the new one.

var (
	_ server.DurableGiver      = (*open)(nil)
	_ server.DurableAbandoner  = (*open)(nil)
	_ server.DurableAdopter    = (*Disk)(nil)
	_ server.PersistentHandle  = (*open)(nil)
	_ server.AppInstanceCloser = (*Disk)(nil)
)

// GiveUp implements server.DurableGiver.
func (o *open) GiveUp(q state.DurableQuery, to state.HolderRef) (state.Handover, error) {
	tbl, ok := o.d.table.(state.DurableFiles)
	if !ok || o.so == nil {
		return state.Handover{}, smb2.StatusObjectNameNotFound
	}
	c := o.d.table.CachingOf(o.so)
	switch {
	case c.Lease && (!q.HasLease || q.LeaseKey != c.ID.Key || c.ID.Client != q.ClientGUID):
		return state.Handover{}, smb2.StatusObjectNameNotFound
	case !c.Lease && q.HasLease:
		return state.Handover{}, smb2.StatusObjectNameNotFound
	case c.Lease && !o.reconnectNameMatches(q.Name):
		return state.Handover{}, smb2.StatusInvalidParameter
	}
	c, locks, err := tbl.GiveUp(o.so, to)
	if err != nil {
		return state.Handover{}, err
	}
	if k := o.d.resume.Load(); k != nil {
		k.forgetOpen(o)
	}
	o.f.Close()
	o.mu.Lock()
	defer o.mu.Unlock()
	return state.Handover{
		Name: o.name, Stream: o.stream, Access: o.access, ShareAccess: o.so.ShareAccess,
		DeleteOnClose: o.deleteOnClose, Position: o.position, Allocation: o.allocation, Caching: c, Locks: locks,
	}, nil
}

// AdoptDurable implements server.DurableAdopter.
func (d *Disk) AdoptDurable(r *server.Request, req *smb2.CreateRequest, q state.DurableQuery) (server.Handle, state.Handover, *smb2.CreateResponse, error) {
	tbl, ok := d.table.(state.DurableFiles)
	if !ok {
		return nil, state.Handover{}, nil, state.ErrNoDurable
	}
	ctx := r.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	so, h, err := tbl.TakeDurable(ctx, q)
	var refused interface{ Status() uint32 }
	switch {
	case errors.As(err, &refused):
		return nil, h, nil, smb2.Status(refused.Status())
	case err != nil:
		return nil, h, nil, err
	}
	if h.WirePath { // a dead node's record names the open as its CREATE did
		pn, perr := parseName(h.Name)
		if perr == nil {
			h.Name, h.Stream = d.caseName(pn.name), pn.stream
		}
	}
	o, fi, err := d.reopen(so, h)
	if err != nil {
		// The open is this node's now and cannot be served: it closes.
		d.locks.Release(so)
		d.table.Remove(so)
		return nil, h, nil, err
	}
	o.owner = tokenOf(r.Session).user
	if h.Rec.Persistent {
		o.writeThrough.Store(true)
	}
	d.table.Reattach(so, r.Open)
	return o, h, reattachResponse(o, fi, h.Caching), nil
}

// reopen opens the file of a handed-over open again on this node; it
// must still be the file the open's state is keyed by.
func (d *Disk) reopen(so *state.Open, h state.Handover) (*open, vfs.FileInfo, error) {
	opts := vfs.OpenOptions{Read: true, Write: h.Access&(smb2.FileWriteData|smb2.FileAppendData) != 0, Create: vfs.OpenExisting}
	var f vfs.File
	var err error
	if h.Stream != "" {
		sop := d.streamOpener()
		if sop == nil {
			return nil, vfs.FileInfo{}, smb2.StatusObjectNameNotFound
		}
		f, _, err = sop.OpenStream(h.Name, h.Stream, opts)
	} else {
		f, _, err = d.fs.Open(h.Name, opts)
	}
	if err != nil {
		return nil, vfs.FileInfo{}, d.openError(h.Name, err)
	}
	fi, err := d.fs.Stat(h.Name)
	if err == nil && fi.FileID != so.Key.FileID {
		err = smb2.StatusObjectNameNotFound // renamed over meanwhile
	}
	if err == nil && h.Stream != "" {
		fi, err = f.Stat()
	}
	if err != nil {
		f.Close()
		return nil, vfs.FileInfo{}, err
	}
	o := &open{d: d, f: f, name: h.Name, access: h.Access, so: so,
		stream: h.Stream, deleteOnClose: h.DeleteOnClose, position: h.Position, allocation: h.Allocation}
	return o, fi, nil
}

// reattachResponse is the answer to a durable reconnect of o, whether
// the open was this node's own (Reattach) or handed over by another node.
func reattachResponse(o *open, fi vfs.FileInfo, c state.Caching) *smb2.CreateResponse {
	resp := &smb2.CreateResponse{
		OplockLevel:    c.Oplock(),
		CreateAction:   smb2.FileOpened,
		CreationTime:   fscc.Filetime(fi.CreationTime),
		LastAccessTime: fscc.Filetime(fi.LastAccessTime),
		LastWriteTime:  fscc.Filetime(fi.LastWriteTime),
		ChangeTime:     fscc.Filetime(fi.ChangeTime),
		AllocationSize: uint64(o.allocationSize(fi)),
		EndOfFile:      uint64(fi.Size),
		FileAttributes: fi.Attributes,
	}
	if c.Lease {
		resp.OplockLevel = smb2.OplockLevelLease
		resp.Contexts = append(resp.Contexts, leaseContext(&state.LeaseGrant{
			Key: c.ID.Key, State: c.State, BreakInProgress: c.Breaking,
			Version: c.Version, Epoch: c.Epoch, ParentKey: c.ParentKey, HasParent: c.HasParent,
		}))
	}
	return resp
}

// Abandon implements server.DurableAbandoner.
func (o *open) Abandon() {
	if tbl, ok := o.d.table.(state.DurableFiles); ok && o.so != nil {
		tbl.Forget(o.so)
	}
	if k := o.d.resume.Load(); k != nil {
		k.forgetOpen(o)
	}
	o.f.Close()
}

// CanBePersistent implements server.PersistentHandle: files only.
func (o *open) CanBePersistent() bool { return !o.isDir && o.so != nil }

// WriteThrough implements server.PersistentHandle.
func (o *open) WriteThrough() { o.writeThrough.Store(true) }

// CloseAppInstance implements server.AppInstanceCloser.
func (d *Disk) CloseAppInstance(r *server.Request, id [16]byte) {
	if tbl, ok := d.table.(state.DurableFiles); ok {
		ctx := r.Ctx
		if ctx == nil {
			ctx = context.Background()
		}
		tbl.CloseAppInstance(ctx, id, d.name, r.Session.User)
	}
}
