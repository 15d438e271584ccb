package share

import (
	"path"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/utf16le"
)

// FILE_NOTIFY_INFORMATION actions ([MS-FSCC] 2.7.1).
const (
	actionAdded       = 1
	actionRemoved     = 2
	actionModified    = 3
	actionRenamedOld  = 4
	actionRenamedNew  = 5
	maxPendingChanges = 1024 // beyond this a watcher reports STATUS_NOTIFY_ENUM_DIR
)

// change is one change of a name in a watched directory.
type change struct {
	action uint32
	name   string // relative to the watched directory, slash-separated
}

// watcher collects the changes below one directory open between
// CHANGE_NOTIFY requests, as Windows buffers them on the handle.
type watcher struct {
	dir    string
	tree   bool
	filter uint32

	mu       sync.Mutex
	changes  []change
	overflow bool
	signal   chan struct{} // receives a value when changes arrive
}

// notifier routes the share's changes to its watchers.
type notifier struct {
	n        atomic.Int32 // number of watchers: changes are dropped cheaply when zero
	mu       sync.Mutex
	watchers map[*watcher]struct{}
}

func (n *notifier) add(w *watcher) {
	n.mu.Lock()
	if n.watchers == nil {
		n.watchers = map[*watcher]struct{}{}
	}
	n.watchers[w] = struct{}{}
	n.n.Store(int32(len(n.watchers)))
	n.mu.Unlock()
}

func (n *notifier) remove(w *watcher) {
	n.mu.Lock()
	delete(n.watchers, w)
	n.n.Store(int32(len(n.watchers)))
	n.mu.Unlock()
}

// post reports a change of the file at share-relative name to every
// watcher whose directory and filter cover it.
func (n *notifier) post(action uint32, name string, filter uint32) {
	if n.n.Load() == 0 {
		return
	}
	dir := path.Dir(name)
	if dir == "." {
		dir = ""
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for w := range n.watchers {
		if w.filter&filter == 0 {
			continue
		}
		var rel string
		switch {
		case dir == w.dir:
			rel = path.Base(name)
		case w.tree && (w.dir == "" || strings.HasPrefix(name, w.dir+"/")):
			rel = strings.TrimPrefix(name, w.dir+"/")
		default:
			continue
		}
		w.add(change{action: action, name: rel})
	}
}

func (w *watcher) add(c change) {
	w.mu.Lock()
	if len(w.changes) >= maxPendingChanges {
		w.overflow = true
	} else {
		w.changes = append(w.changes, c)
	}
	w.mu.Unlock()
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

// take returns and clears the buffered changes.
func (w *watcher) take() ([]change, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c, o := w.changes, w.overflow
	w.changes, w.overflow = nil, false
	return c, o
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
	for {
		if changes, overflow := w.take(); overflow || len(changes) > 0 {
			return notifyResponse(changes, overflow, req.OutputBufferLength)
		}
		if !r.GoAsync() && r.Interior() {
			// Windows fails a wait inside a compound ([MS-SMB2] 3.3.5.19 <footnote>).
			return nil, smb2.StatusInternalError
		}
		select {
		case <-w.signal:
		case <-r.Ctx.Done():
			return nil, smb2.StatusCancelled
		case <-r.Open.Closing():
			return nil, smb2.StatusNotifyCleanup
		}
	}
}

// watcherFor returns the open's watcher, made by its first CHANGE_NOTIFY.
func (o *open) watcherFor(req *smb2.ChangeNotifyRequest) *watcher {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.watch == nil {
		o.watch = &watcher{
			dir: o.name, tree: req.Flags&smb2.WatchTree != 0, filter: req.CompletionFilter,
			signal: make(chan struct{}, 1),
		}
		o.d.notify.add(o.watch)
	}
	return o.watch
}

// notifyResponse encodes FILE_NOTIFY_INFORMATION entries ([MS-FSCC]
// 2.7.1); when they do not fit, the client is told to re-read the
// directory (STATUS_NOTIFY_ENUM_DIR).
func notifyResponse(changes []change, overflow bool, max uint32) (server.Response, error) {
	if overflow {
		return nil, smb2.StatusNotifyEnumDir
	}
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
	if uint32(len(b)) > max {
		return nil, smb2.StatusNotifyEnumDir
	}
	return &smb2.ChangeNotifyResponse{Buffer: b}, nil
}

func le32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}
