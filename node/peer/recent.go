package peer

import (
	"time"

	peerv1 "github.com/smbcluster/smbcluster/proto/smbcluster/peer/v1"
)

// A client may send its first CHANGE_NOTIFY on one node and, without
// waiting for its interim response, change the directory through another
// (smbtorture smb2.notify.basedir does): the change can be made before the
// other node hears of the watch. So each node keeps the changes of the
// last moments (recentKeep), and a watch told to it names when its first
// request was handled; the node sends it the changes it made since then.
// No slack: a change the client completed before it sent the request must
// not be replayed (smbtorture smb2.notify.mask cancels a first request and
// expects no change in it), and a change it makes after sending the
// request, through another node, reaches that node a round trip later at
// least. This assumes the nodes' clocks agree to well within a round
// trip, as on one machine or under NTP on a LAN. Changes from writes
// (MODIFIED of size or last-write time) are not kept: they are the most
// frequent by far, and a watch that misses one of a run of writes sees the
// next.

const (
	recentKeep = 2 * time.Second
	recentMax  = 4096
)

// recentChange is a change this node made, as it was posted.
type recentChange struct {
	at     time.Time
	change *peerv1.Change
}

// rememberLocked keeps c among the recent changes. The caller holds
// n.mu.
func (n *notifier) rememberLocked(c *peerv1.Change, now time.Time) {
	rc := n.recent
	drop := 0
	for drop < len(rc) && (now.Sub(rc[drop].at) > recentKeep || len(rc)-drop >= recentMax) {
		drop++
	}
	if drop > 0 {
		rc = append(rc[:0], rc[drop:]...)
	}
	n.recent = append(rc, recentChange{now, c})
}

// replayLocked queues to node the recent changes that spec covers and
// that were made since spec.Since. The caller holds n.mu.
func (n *notifier) replayLocked(node string, spec *peerv1.WatchSpec) {
	if spec.Since == 0 {
		return
	}
	since := time.Unix(0, spec.Since)
	w := watchOf(spec)
	for _, rc := range n.recent {
		c := rc.change
		if rc.at.Before(since) || c.Share != spec.Share {
			continue
		}
		if c.DeletePending && c.Name == spec.Dir {
			n.queueLocked(node, c)
		} else if _, ok := w.Covers(c.Name, c.Filter); ok && !c.DeletePending {
			n.queueLocked(node, c)
		}
	}
}
