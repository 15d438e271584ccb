package peer

import (
	"context"

	"github.com/smbcluster/smbcluster/node/state"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
)

// nameSide is a node's delete-pending, rename, stream and access checks
// as the holder of opens (state.Files' names half), each asked of the
// file's owner.
type nameSide struct {
	r *Router
}

// Sole implements state.Files.
func (nm *nameSide) Sole(o *state.Open) (sole, deletePending bool) {
	nm.r.dg.convert(o) // deleg.go: the owner must know it
	resp, _ := nm.r.call(o.Key, func() {
		nm.r.own.flushFor(o.Key, nm.r.routes.Self(), func() bool { sole, deletePending = nm.r.table.Sole(o); return !sole })
	},
		&peerv1.CallRequest{Key: keyPB(o.Key), Op: &peerv1.CallRequest_Sole{Sole: &peerv1.SoleOp{Open: nm.r.ref(o)}}})
	if resp != nil {
		return resp.GetSole().GetSole(), resp.GetSole().GetDeletePending()
	}
	return sole, deletePending
}

// MarkDeletePending implements state.Files.
func (nm *nameSide) MarkDeletePending(o *state.Open, on bool) {
	nm.r.dg.convert(o) // deleg.go: the owner must know it
	resp, _ := nm.r.call(o.Key, func() { nm.r.own.markPending(o.Key, on, func() { nm.r.table.MarkDeletePending(o, on) }) },
		&peerv1.CallRequest{Key: keyPB(o.Key), Op: &peerv1.CallRequest_MarkDeletePending{MarkDeletePending: &peerv1.MarkDeletePendingOp{Open: nm.r.ref(o), Pending: on}}})
	if resp != nil {
		nm.r.hs.noteCaching(o, func(h *heldState) { h.deletePending = on })
	}
}

// SetDeletePending implements state.Files.
func (nm *nameSide) SetDeletePending(key state.FileKey, on bool) {
	nm.r.call(key, func() { nm.r.own.markPending(key, on, func() { nm.r.table.SetDeletePending(key, on) }) },
		&peerv1.CallRequest{Key: keyPB(key), Op: &peerv1.CallRequest_SetDeletePending{SetDeletePending: &peerv1.SetDeletePendingOp{Pending: on}}})
}

// DeletePending implements state.Files.
func (nm *nameSide) DeletePending(key state.FileKey) (on bool) {
	resp, _ := nm.r.call(key, func() { on = nm.r.table.DeletePending(key) },
		&peerv1.CallRequest{Key: keyPB(key), Op: &peerv1.CallRequest_DeletePending{DeletePending: &peerv1.DeletePendingOp{}}})
	if resp != nil {
		return resp.GetDeletePending().GetPending()
	}
	return on
}

// CheckRename implements state.Files.
func (nm *nameSide) CheckRename(o *state.Open) (err error) {
	nm.r.dg.convert(o) // deleg.go: the owner must know it
	resp, cerr := nm.r.call(o.Key, func() {
		nm.r.own.flushFor(o.Key, nm.r.routes.Self(), func() bool { err = nm.r.table.CheckRename(o); return err != nil })
	},
		&peerv1.CallRequest{Key: keyPB(o.Key), Op: &peerv1.CallRequest_CheckRename{CheckRename: &peerv1.CheckRenameOp{Open: nm.r.ref(o)}}})
	if cerr != nil {
		return cerr
	}
	if resp != nil {
		return codeErr(resp.Error, resp.Message)
	}
	return err
}

// Renamed implements state.Files.
// At a remote owner, this node's copies of its opens' names follow too:
// a close names the file as renamed after its entry at the owner is gone.
func (nm *nameSide) Renamed(key state.FileKey, name string) {
	resp, _ := nm.r.call(key, func() { nm.r.dg.without(key, func(bool) { nm.r.table.Renamed(key, name) }) },
		&peerv1.CallRequest{Key: keyPB(key), Op: &peerv1.CallRequest_Renamed{Renamed: &peerv1.RenamedOp{Name: name}}})
	if resp == nil {
		return // local: the table renamed this node's opens itself
	}
	nm.r.hs.mu.Lock()
	for _, o := range nm.r.hs.held {
		if o.Key == key {
			o.Name = name
		}
	}
	nm.r.hs.mu.Unlock()
}

// NameOf implements state.Files.
func (nm *nameSide) NameOf(o *state.Open) (name string) {
	if nm.r.isDelegated(o) { // deleg.go: a rename recalls the delegation first
		nm.r.hs.mu.Lock()
		defer nm.r.hs.mu.Unlock()
		return o.Name
	}
	resp, _ := nm.r.call(o.Key, func() { name = nm.r.table.NameOf(o) },
		&peerv1.CallRequest{Key: keyPB(o.Key), Op: &peerv1.CallRequest_NameOf{NameOf: &peerv1.NameOfOp{Open: nm.r.ref(o)}}})
	if resp != nil {
		return resp.GetNameOf().GetName()
	}
	if name == "" { // gone at the owner (closing): this node's copy
		nm.r.hs.mu.Lock()
		name = o.Name
		nm.r.hs.mu.Unlock()
	}
	return name
}

// HasOpenBelow implements state.Files: every node owns some files, so
// every node is asked.
func (nm *nameSide) HasOpenBelow(dir string) bool {
	if nm.r.own.hasOpenBelow(dir) {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	req := &peerv1.CallRequest{Op: &peerv1.CallRequest_HasOpenBelow{HasOpenBelow: &peerv1.HasOpenBelowOp{Dir: dir}}}
	for a := range ask(ctx, nm.r, nil, 0, func(ctx context.Context, cli peerv1.PeerServiceClient) (*peerv1.CallResponse, error) {
		nm.r.stats.call(OpHasOpenBelow)
		return cli.Call(ctx, req)
	}) {
		if a.Err == nil && a.Resp.GetHasOpenBelow().GetFound() {
			return true
		}
	}
	return false
}

// CheckAccess implements state.Files.
func (nm *nameSide) CheckAccess(key state.FileKey, access, share uint32) (err error) {
	resp, cerr := nm.r.call(key, func() {
		nm.r.own.flushFor(key, nm.r.routes.Self(), func() bool { err = nm.r.table.CheckAccess(key, access, share); return err != nil })
	},
		&peerv1.CallRequest{Key: keyPB(key), Op: &peerv1.CallRequest_CheckAccess{CheckAccess: &peerv1.CheckAccessOp{Access: access, ShareAccess: share}}})
	if cerr != nil {
		return cerr
	}
	if resp != nil {
		return codeErr(resp.Error, resp.Message)
	}
	return err
}

// StreamOpen implements state.Files.
func (nm *nameSide) StreamOpen(key state.FileKey, stream string, except *state.Open) (on bool) {
	op := &peerv1.StreamOpenOp{Stream: stream}
	if except != nil {
		op.Except = nm.r.ref(except)
	}
	req := &peerv1.CallRequest{Key: keyPB(key), Op: &peerv1.CallRequest_StreamOpen{StreamOpen: op}}
	resp, _ := nm.r.call(key, func() {
		nm.r.own.flushFor(key, nm.r.routes.Self(), func() bool { on = nm.r.table.StreamOpen(key, stream, except); return on })
	}, req)
	if resp != nil {
		return resp.GetStreamOpen().GetOpen()
	}
	return on
}

// StreamOf implements state.Files. For an open of a remote file the
// answer is this node's copy: only a rename through the open itself
// changes its stream (a stream is renamed through an open of it), and
// RenamedStream keeps the copies of this node's opens current.
func (nm *nameSide) StreamOf(o *state.Open) (stream string) {
	nm.r.hs.mu.Lock()
	held := nm.r.hs.held[o.Ref] == o
	stream = o.Stream
	nm.r.hs.mu.Unlock()
	if held {
		if t, err := nm.r.at(context.Background(), o.Key); err == nil && !t.local {
			return stream
		}
	}
	resp, _ := nm.r.call(o.Key, func() { stream = nm.r.table.StreamOf(o) },
		&peerv1.CallRequest{Key: keyPB(o.Key), Op: &peerv1.CallRequest_StreamOf{StreamOf: &peerv1.StreamOfOp{Open: nm.r.ref(o)}}})
	if resp != nil {
		return resp.GetStreamOf().GetStream()
	}
	return stream
}

// RenamedStream implements state.Files.
func (nm *nameSide) RenamedStream(key state.FileKey, from, to string) {
	resp, _ := nm.r.call(key, func() { nm.r.dg.without(key, func(bool) { nm.r.table.RenamedStream(key, from, to) }) },
		&peerv1.CallRequest{Key: keyPB(key), Op: &peerv1.CallRequest_RenamedStream{RenamedStream: &peerv1.RenamedStreamOp{From: from, To: to}}})
	if resp == nil {
		return // local: the table renamed this node's opens itself
	}
	nm.r.hs.mu.Lock()
	for _, o := range nm.r.hs.held {
		if o.Key == key && o.Stream == from {
			o.Stream = to
		}
	}
	nm.r.hs.mu.Unlock()
}
