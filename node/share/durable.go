package share

import (
	"strings"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/state"
	"github.com/smbcluster/smbcluster/node/vfs"
)

// The disk share's side of durable handles (server.DurableHandle): an open
// is durable with a batch oplock or a handle lease; while detached from
// its connection it keeps its vfs file, its open-table entry (share
// modes, oplock or lease) and its byte-range locks, and a break of its
// oplock or lease closes it instead of reaching a client.

var _ server.DurableHandle = (*open)(nil)

// CanBeDurable implements server.DurableHandle ([MS-SMB2] 3.3.5.9.6,
// 3.3.5.9.10): a file open with a batch oplock or a lease with handle
// caching. Directories are never durable.
func (o *open) CanBeDurable() bool {
	if o.isDir || o.so == nil {
		return false
	}
	c := o.d.table.CachingOf(o.so)
	if c.Lease {
		return c.State&state.LeaseHandle != 0
	}
	return c.Oplock() == state.OplockBatch
}

// DurableKey implements server.DurableHandle.
func (o *open) DurableKey() (state.FileKey, [16]byte, bool) {
	if o.so == nil {
		return state.FileKey{}, [16]byte{}, false
	}
	c := o.d.table.CachingOf(o.so)
	return o.so.Key, c.ID.Key, c.Lease
}

// detachedBreaker takes the breaks of a detached durable open: nobody can
// acknowledge them, so the open is closed (scavenged) instead, which ends
// the break.
type detachedBreaker func()

func (b detachedBreaker) BreakOplock(uint8) error           { go b(); return nil }
func (b detachedBreaker) BreakLease(state.LeaseBreak) error { go b(); return nil }

// Detach implements server.DurableHandle.
func (o *open) Detach(scavenge func()) bool {
	return o.so != nil && o.d.table.Detach(o.so, detachedBreaker(scavenge))
}

// Reattach implements server.DurableHandle: the checks of [MS-SMB2]
// 3.3.5.9.7 and 3.3.5.9.12 that concern the file. An open with a lease
// is reconnected only by a CREATE naming the same lease key from the
// lease's client (else STATUS_OBJECT_NAME_NOT_FOUND) and, unless it is
// to be deleted on close, the same file name (else
// STATUS_INVALID_PARAMETER); an oplock's open by a CREATE without a lease.
func (o *open) Reattach(r *server.Request, req *smb2.CreateRequest) (*smb2.CreateResponse, error) {
	if o.so == nil {
		return nil, smb2.StatusObjectNameNotFound
	}
	c := o.d.table.CachingOf(o.so)
	key, hasLease := reconnectLeaseKey(req)
	switch {
	case c.Lease && (!hasLease || key != c.ID.Key || c.ID.Client != r.Session.ClientGUID):
		return nil, smb2.StatusObjectNameNotFound
	case !c.Lease && hasLease:
		return nil, smb2.StatusObjectNameNotFound
	case c.Lease && !o.reconnectNameMatches(req.Name):
		return nil, smb2.StatusInvalidParameter
	}
	fi, err := o.f.Stat()
	if err != nil {
		return nil, err
	}
	o.d.table.Reattach(o.so, r.Open)
	return reattachResponse(o, fi, c), nil
}

// reconnectLeaseKey reads the lease key of a reconnect's RqLs context,
// whatever its RequestedOplockLevel says (Windows looks only at the key).
func reconnectLeaseKey(req *smb2.CreateRequest) ([16]byte, bool) {
	k := req.Known()
	if !k.Valid(smb2.CtxRequestLease) {
		return [16]byte{}, false
	}
	return k.Lease.Key, true
}

// reconnectNameMatches reports whether a reconnect names the open's file,
// or the open's file is to be deleted on close (its name then does not
// matter).
func (o *open) reconnectNameMatches(name string) bool {
	o.mu.Lock()
	del, cur, stream := o.deleteOnClose, o.name, o.stream
	o.mu.Unlock()
	if del {
		return true
	}
	pn, err := parseName(name)
	if err != nil {
		return false
	}
	return strings.EqualFold(pn.name, cur) && strings.EqualFold(pn.stream, stream)
}

// goneWhileWaiting reports whether name no longer is the file fi that a
// CREATE opened before it waited for a break: the open whose break it
// waited for was closed with delete-on-close (a scavenged durable open),
// and the CREATE must start again on what the name is now.
func (d *Disk) goneWhileWaiting(name string, fi vfs.FileInfo) bool {
	cur, err := d.fs.Stat(name)
	return err != nil || cur.FileID != fi.FileID
}

// BeforeScavenge implements server.DurableHandle: the file of a detached
// open being scavenged is deleted now if it is to be deleted on close and
// has no other open, before the open leaves the open table, so that a
// CREATE waiting for the open's break is not admitted to a file about to
// go. Close then does not delete it again (the name may be a new file by
// then).
func (o *open) BeforeScavenge() {
	if o.so == nil {
		return
	}
	o.mu.Lock()
	del, name := o.deleteOnClose, o.name
	o.mu.Unlock()
	sole, pending := o.d.table.Sole(o.so)
	if !sole || !(del || pending) || o.remove(name) != nil {
		return
	}
	o.mu.Lock()
	o.deleteOnClose = false
	o.mu.Unlock()
	o.d.table.MarkDeletePending(o.so, false)
	o.d.notify.post(actionRemoved, name, nameFilter(o.isDir))
}

// LeaseNow implements server.LeaseHolder: the open's lease as it is now,
// for the answer to a replayed CREATE ([MS-SMB2] 3.3.5.9.10).
func (o *open) LeaseNow() (key [16]byte, st uint32, epoch uint16, ok bool) {
	if o.so == nil {
		return key, 0, 0, false
	}
	c := o.d.table.CachingOf(o.so)
	return c.ID.Key, c.State, c.Epoch, c.Lease
}
