package share

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/utf16le"
	"github.com/smbcluster/smbcluster/node/state"
)

// CHANGE_NOTIFY ([MS-SMB2] 3.3.5.19, [MS-FSA] 2.1.5.10). The first
// CHANGE_NOTIFY on a directory open fixes its watch: the completion
// filter, WATCH_TREE and the size of the buffer that holds changes
// between requests (its OutputBufferLength), as Windows does; later
// requests only collect. A change completes the oldest waiting request at
// once; with none waiting it is buffered, and when the buffer would
// exceed its size the watch overflows and the next request answers
// STATUS_NOTIFY_ENUM_DIR.

// FILE_NOTIFY_INFORMATION actions ([MS-FSCC] 2.7.1).
const (
	actionAdded      = 1
	actionRemoved    = 2
	actionModified   = 3
	actionRenamedOld = 4
	actionRenamedNew = 5
)

// change is one change of a name in a watched directory.
type change struct {
	action uint32
	name   string // relative to the watched directory, slash-separated
}

// entrySize is the change's FILE_NOTIFY_INFORMATION size, padded to 4.
func (c change) entrySize() int {
	return (12 + utf16le.Len(c.name) + 3) &^ 3
}

// notifyResult completes a waiting CHANGE_NOTIFY.
type notifyResult struct {
	changes  []change
	overflow bool
	err      error // STATUS_DELETE_PENDING: the directory is being deleted
}

// watcher is the watch of one directory open.
type watcher struct {
	state.Watch        // the directory and the filters
	max         int    // buffer size from the first request
	id          uint64 // its name in the cluster (ClusterNotify), 0 on one node

	mu       sync.Mutex
	changes  []change
	size     int // encoded size of changes
	overflow bool
	waiters  []chan notifyResult // oldest first; each has room for one result
	closed   bool
	deleting bool // a delete is pending on the directory
}

// ClusterNotify carries a share's watches and changes to the other nodes
// of a cluster (node/peer), so that a change made through any node
// reaches the watches of every node: those made from the moment Watch is
// called on, even before the other nodes have heard of the watch.
type ClusterNotify interface {
	Watch(share string, w state.Watch) (id uint64)
	Unwatch(id uint64)
	// Post reports a change; frequent marks a write's (MODIFIED of the
	// size or last-write time), which need not be kept for watches still
	// on their way.
	Post(share string, action uint32, name string, filter uint32, frequent bool)
	PostDeletePending(share, dir string)
}

// notifier routes the share's changes to its watchers.
type notifier struct {
	n        atomic.Int32 // number of watchers: changes are dropped cheaply when zero
	mu       sync.Mutex
	watchers map[*watcher]struct{}

	// Set before serving (SetClusterNotify).
	cluster ClusterNotify
	share   string
}

// add makes w see this node's changes, then the other nodes': a change
// another node sends as soon as it hears of the watch finds it here.
func (n *notifier) add(w *watcher) {
	n.mu.Lock()
	if n.watchers == nil {
		n.watchers = map[*watcher]struct{}{}
	}
	n.watchers[w] = struct{}{}
	n.n.Store(int32(len(n.watchers)))
	n.mu.Unlock()
	if n.cluster == nil {
		return
	}
	id := n.cluster.Watch(n.share, w.Watch)
	w.mu.Lock()
	closed := w.closed
	w.id = id
	w.mu.Unlock()
	if closed { // the open closed meanwhile (remove ran first)
		n.cluster.Unwatch(id)
	}
}

func (n *notifier) remove(w *watcher) {
	n.mu.Lock()
	delete(n.watchers, w)
	n.n.Store(int32(len(n.watchers)))
	n.mu.Unlock()
	w.mu.Lock()
	w.closed = true
	id := w.id
	w.mu.Unlock()
	if n.cluster != nil && id != 0 {
		n.cluster.Unwatch(id)
	}
}

// wanted reports whether a change is worth reporting: a watcher here, or
// a cluster, where the other nodes' watchers decide (and a change is kept
// a moment for watches on their way).
func (n *notifier) wanted() bool { return n.n.Load() > 0 || n.cluster != nil }

// post reports a change of the file at share-relative name to every
// watcher whose directory and filter cover it, on this node and on the
// others.
func (n *notifier) post(action uint32, name string, filter uint32) {
	if n.cluster != nil {
		n.cluster.Post(n.share, action, name, filter,
			action == actionModified && filter&^(smb2.FileNotifyChangeLastWrite|smb2.FileNotifyChangeSize) == 0)
	}
	n.deliver(action, name, filter)
}

// deliver reports a change to this node's watchers.
func (n *notifier) deliver(action uint32, name string, filter uint32) {
	if n.n.Load() == 0 {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for w := range n.watchers {
		if rel, ok := w.Covers(name, filter); ok {
			w.add(change{action: action, name: rel})
		}
	}
}

// postRename reports a rename as Windows does: old and new names within
// one directory, removed and added across directories.
func (n *notifier) postRename(old, new string, isDir bool) {
	f := nameFilter(isDir)
	if parentOf(old) == parentOf(new) {
		n.post(actionRenamedOld, old, f)
		n.post(actionRenamedNew, new, f)
	} else {
		n.post(actionRemoved, old, f)
		n.post(actionAdded, new, f)
	}
}

// postRenameLocked reports a rename through o; called under o.mu. The
// change of attributes and creation time that Windows also reports for a
// renamed file comes when the open closes, under the name the file has
// then (postClosed): smbtorture smb2.notify.mask-change sees it after
// the close, smb2.notify.rec, whose renaming opens stay open, does not.
func (o *open) postRenameLocked(old, new string) {
	o.d.notify.postRename(old, new, o.isDir)
	if !o.isDir {
		o.renamed = true
	}
}

// postClosed reports what the close of an open leaves to report: the
// attribute change of a file it renamed (postRenameLocked), under the
// file's name now, which another open may have renamed since, unless the
// close deleted the file.
func (o *open) postClosed(renamed, deleted bool) {
	if !renamed || deleted || !o.d.notify.wanted() {
		return
	}
	name := o.currentName()
	if o.so != nil {
		name = o.d.table.NameOf(o.so)
	}
	o.d.notify.post(actionModified, name, smb2.FileNotifyChangeAttributes|smb2.FileNotifyChangeCreation)
}

// deletePending ends the waits on the directory name, which another open
// has set to be deleted: they, and later requests, complete with
// STATUS_DELETE_PENDING (smbtorture smb2.notify.rmdir1-4).
func (n *notifier) deletePending(name string) {
	if n.cluster != nil {
		n.cluster.PostDeletePending(n.share, name)
	}
	n.deliverDeletePending(name)
}

// deliverDeletePending ends this node's waits on the directory name.
func (n *notifier) deliverDeletePending(name string) {
	if n.n.Load() == 0 {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for w := range n.watchers {
		if w.Dir != name {
			continue
		}
		w.mu.Lock()
		w.deleting = true
		for _, ch := range w.waiters {
			ch <- notifyResult{err: smb2.StatusDeletePending}
		}
		w.waiters = nil
		w.mu.Unlock()
	}
}

// add delivers c to the oldest waiting request, or buffers it.
func (w *watcher) add(c change) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	if len(w.waiters) > 0 {
		ch := w.waiters[0]
		w.waiters = w.waiters[1:]
		ch <- notifyResult{changes: []change{c}}
		return
	}
	if w.overflow {
		return
	}
	if n := len(w.changes); n > 0 && c.action == actionModified && w.changes[n-1] == c {
		return // one MODIFIED for a run of writes
	}
	if w.size+c.entrySize() > w.max {
		w.changes, w.size, w.overflow = nil, 0, true
		return
	}
	w.changes = append(w.changes, c)
	w.size += c.entrySize()
}

// wait returns the buffered changes, or, with none, a channel that
// receives the next one; the request is queued behind earlier ones.
func (w *watcher) wait() (notifyResult, chan notifyResult) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.deleting {
		return notifyResult{err: smb2.StatusDeletePending}, nil
	}
	if w.overflow || len(w.changes) > 0 {
		res := notifyResult{changes: w.changes, overflow: w.overflow}
		w.changes, w.size, w.overflow = nil, 0, false
		return res, nil
	}
	ch := make(chan notifyResult, 1)
	w.waiters = append(w.waiters, ch)
	return notifyResult{}, ch
}

// leave takes a cancelled request out of the queue; it reports false if a
// change was already delivered to it.
func (w *watcher) leave(ch chan notifyResult) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, c := range w.waiters {
		if c == ch {
			w.waiters = append(w.waiters[:i], w.waiters[i+1:]...)
			return true
		}
	}
	return false
}

// ChangeNotify handles SMB2 CHANGE_NOTIFY ([MS-SMB2] 3.3.5.19): it answers
// with the changes buffered since the last request, or goes async and
// waits for one, for CANCEL (STATUS_CANCELLED) or for the handle to close
// (STATUS_NOTIFY_CLEANUP).
func (o *open) ChangeNotify(r *server.Request, req *smb2.ChangeNotifyRequest) (server.Response, error) {
	if !o.isDir {
		return nil, smb2.StatusInvalidParameter
	}
	if err := o.need(smb2.FileListDirectory); err != nil {
		return nil, err
	}
	w := o.watcherFor(req)
	res, ch := w.wait()
	if ch == nil {
		return notifyResponse(res, req.OutputBufferLength)
	}
	if !r.GoAsync() && r.Interior() {
		// Windows fails a wait inside a compound ([MS-SMB2] 3.3.5.19 <footnote>).
		if w.leave(ch) {
			return nil, smb2.StatusInternalError
		}
		return notifyResponse(<-ch, req.OutputBufferLength)
	}
	select {
	case res = <-ch:
		return notifyResponse(res, req.OutputBufferLength)
	case <-r.Ctx.Done():
		if w.leave(ch) {
			return nil, smb2.StatusCancelled
		}
	case <-r.Open.Closing():
		if w.leave(ch) {
			return nil, smb2.StatusNotifyCleanup
		}
	}
	return notifyResponse(<-ch, req.OutputBufferLength) // delivered meanwhile
}

// watcherFor returns the open's watcher, made by its first CHANGE_NOTIFY.
func (o *open) watcherFor(req *smb2.ChangeNotifyRequest) *watcher {
	o.mu.Lock()
	w := o.watch
	if w != nil {
		o.mu.Unlock()
		return w
	}
	w = &watcher{Watch: state.Watch{Dir: o.name, Filter: req.CompletionFilter}, max: int(req.OutputBufferLength)}
	if req.Flags&smb2.WatchTree != 0 {
		w.TreeFilter = req.CompletionFilter
	}
	o.watch = w
	o.mu.Unlock()
	// Outside o.mu: in a cluster both steps may call other nodes.
	o.d.notify.add(w)
	// A delete set pending before this first request (by another open's
	// close) ends it at once, as it ends the waits already queued
	// (deletePending). Added first, checked second: a close that marks
	// the directory after the check finds the watcher.
	if o.so != nil && o.d.table.DeletePending(o.so.Key) {
		w.mu.Lock()
		w.deleting = true
		w.mu.Unlock()
	}
	return w
}

// notifyResponse encodes FILE_NOTIFY_INFORMATION entries ([MS-FSCC]
// 2.7.1); when they do not fit, the client is told to re-read the
// directory (STATUS_NOTIFY_ENUM_DIR).
func notifyResponse(res notifyResult, max uint32) (server.Response, error) {
	if res.err != nil {
		return nil, res.err
	}
	if res.overflow {
		return nil, smb2.StatusNotifyEnumDir
	}
	b := encodeChanges(res.changes)
	if uint32(len(b)) > max {
		return nil, smb2.StatusNotifyEnumDir
	}
	return &smb2.ChangeNotifyResponse{Buffer: b}, nil
}

// encodeChanges lays out FILE_NOTIFY_INFORMATION entries, each aligned
// to 4 bytes, the last with NextEntryOffset 0.
func encodeChanges(changes []change) []byte {
	var b []byte
	last := -1
	for _, c := range changes {
		if len(b)%4 != 0 {
			b = append(b, make([]byte, 4-len(b)%4)...)
		}
		if last >= 0 {
			le32(b[last:], uint32(len(b)-last))
		}
		last = len(b)
		name := strings.ReplaceAll(c.name, "/", `\`)
		b = append(b, make([]byte, 12)...)
		le32(b[last+4:], c.action)
		le32(b[last+8:], uint32(utf16le.Len(name)))
		b = utf16le.Append(b, name)
	}
	return b
}

func le32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

// basicFilter is the CHANGE_NOTIFY filter of a FILE_BASIC_INFORMATION
// change: the attributes and each time set.
func basicFilter(attrs bool, creation, access, write, change bool) uint32 {
	var f uint32
	if attrs {
		f |= smb2.FileNotifyChangeAttributes
	}
	if creation {
		f |= smb2.FileNotifyChangeCreation
	}
	if access {
		f |= smb2.FileNotifyChangeLastAccess
	}
	if write || change {
		f |= smb2.FileNotifyChangeLastWrite
	}
	return f
}

// postModified reports a change of the open's file (or stream) that the
// filter bits describe.
func (o *open) postModified(filter uint32) {
	if filter == 0 || !o.d.notify.wanted() {
		return
	}
	o.d.notify.post(actionModified, o.currentName(), filter)
}

// SetClusterNotify makes the share's watches and changes known to the
// other nodes of a cluster. Call it before serving.
func (d *Disk) SetClusterNotify(c ClusterNotify) {
	d.notify.cluster, d.notify.share = c, strings.ToLower(d.name)
}

// DeliverChange reports a change made through another node to this
// node's watchers of the share.
func (d *Disk) DeliverChange(action uint32, name string, filter uint32) {
	d.notify.deliver(action, name, filter)
}

// DeliverDeletePending ends this node's waits on directory dir, whose
// delete another node set pending.
func (d *Disk) DeliverDeletePending(dir string) { d.notify.deliverDeletePending(dir) }
