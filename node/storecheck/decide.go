package storecheck

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
)

// States of a node's view of a share (statev1.ShareViewRecord.State).
const (
	Serving   = "serving"   // checked coherent (or the only node): served
	Checking  = "checking"  // the check is under way: tree connects wait
	Refused   = "refused"   // the check failed: not served
	Unchecked = "unchecked" // served without a check (skip_storage_check)
)

// View is how the node serves a share.
type View struct {
	State  string
	Reason string
	// ZeroCopy: READs may come from the page cache alone (sendfile,
	// RWF_NOWAIT); false when the check found those stale here.
	ZeroCopy bool
}

// RoundsToDecide is how many consecutive rounds of a prober a checker
// must see right for the pair to be coherent. Three: every other round
// rewrites the probe file at the size it had (prober.next), and only such
// a round read after the checker cached the one before shows a page cache
// that another node's writes leave stale — two rounds seen from an even
// one on (same size, nothing cached yet; then a resize, which drops the
// cached pages) would pass on ceph-fuse with its defaults.
const RoundsToDecide = 3

// pendingBound is how long a node not yet serving a share waits for a
// pair check that does not complete before deciding without it.
const pendingBound = 15 * time.Second

// Pair is what the two nodes of a pair saw of each other's probe rounds:
// Mine is this node's verdict on the other's probe, Theirs the other's
// on this node's; nil while not given. Since is when the other node's
// probe appeared.
type Pair struct {
	Mine, Theirs *statev1.StorageVerdictRecord
	Since        time.Time
}

// Decide is how the node serves a share given its pair checks with the
// other nodes probing it (by node name) at now; serving is whether it
// serves the share now, probeErr why it could not probe the share itself
// (nil when it could).
func Decide(pairs map[string]Pair, serving bool, probeErr error, now time.Time) View {
	zeroCopy := true
	for _, p := range pairs {
		if p.Mine != nil && p.Mine.CacheStale {
			zeroCopy = false
		}
	}
	if probeErr != nil {
		return View{State: Refused, Reason: "cannot probe the share's storage through this node's mount: " + probeErr.Error(), ZeroCopy: zeroCopy}
	}
	var ok int
	var failed, pending []string
	for _, node := range slices.Sorted(maps.Keys(pairs)) {
		p := pairs[node]
		switch {
		case p.Mine != nil && !p.Mine.Ok:
			failed = append(failed, fmt.Sprintf("%s's writes seen through this node's mount: %s", node, p.Mine.Reason))
		case p.Theirs != nil && !p.Theirs.Ok:
			failed = append(failed, fmt.Sprintf("this node's writes seen through %s's mount: %s", node, p.Theirs.Reason))
		case p.Mine != nil && p.Theirs != nil && p.Mine.RoundsOk >= RoundsToDecide && p.Theirs.RoundsOk >= RoundsToDecide:
			ok++
		case serving:
			ok++ // nothing wrong seen yet: a serving node goes on while it checks a newcomer
		case now.Sub(p.Since) < pendingBound:
			pending = append(pending, node)
		}
	}
	if len(pending) > 0 {
		return View{State: Checking, Reason: "checking the storage with " + strings.Join(pending, ", "), ZeroCopy: zeroCopy}
	}
	if decided := ok + len(failed); 2*(ok+1) <= decided+1 {
		return View{State: Refused, Reason: "storage not coherent between nodes: " + strings.Join(failed, "; "), ZeroCopy: zeroCopy}
	}
	return View{State: Serving, ZeroCopy: zeroCopy}
}
