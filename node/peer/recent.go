package peer

import (
	"time"

	"github.com/smbcluster/smbcluster/node/state"
	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
)

// A client may send its first CHANGE_NOTIFY on one node and, without
// waiting for its interim response, change the directory through another
// (smbtorture smb2.notify.basedir does): the change can be made before the
// other node hears of the watch. So each node keeps the changes of the
// last moments (recentKeep), and a watch told to it names the time its
// request arrived (less recentSlack, for the nodes' clocks and the order
// the two connections were read in); the node sends it the changes it made
// since then. Changes from writes (MODIFIED of size or last-write time)
// are not kept: they are the most frequent by far and a watch that misses
// one of a run of writes sees the next.

const (
	recentKeep  = 2 * time.Second
	recentSlack = 50 * time.Millisecond
	recentMax   = 4096
)

// recentChange is a change this node made, as it was posted.
type recentChange struct {
	at     time.Time
	change *peerv1.Change
}

// remember keeps c among the recent changes. The caller holds r.mu.
func (r *Router) rememberLocked(c *peerv1.Change, now time.Time) {
	rc := r.ntf.recent
	drop := 0
	for drop < len(rc) && (now.Sub(rc[drop].at) > recentKeep || len(rc)-drop >= recentMax) {
		drop++
	}
	if drop > 0 {
		rc = append(rc[:0], rc[drop:]...)
	}
	r.ntf.recent = append(rc, recentChange{now, c})
}

// replayLocked queues to node the recent changes that spec covers and
// that were made since spec.Since. The caller holds r.mu.
func (r *Router) replayLocked(node string, spec *peerv1.WatchSpec) {
	if spec.Since == 0 {
		return
	}
	since := time.Unix(0, spec.Since)
	w := state.Watch{Dir: spec.Dir, Filter: spec.Filter, TreeFilter: spec.TreeFilter}
	for _, rc := range r.ntf.recent {
		c := rc.change
		if rc.at.Before(since) || c.Share != spec.Share {
			continue
		}
		if c.DeletePending && c.Name == spec.Dir {
			r.queueLocked(node, c)
		} else if _, ok := w.Covers(c.Name, c.Filter); ok && !c.DeletePending {
			r.queueLocked(node, c)
		}
	}
}
