package nodemain

import (
	"strings"
	"sync"
	"time"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/storecheck"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
)

// checkWait bounds how long a TREE_CONNECT waits for the storage check of
// a share the node is still checking (a node that just joined) before it
// is answered STATUS_BAD_NETWORK_NAME.
const checkWait = 10 * time.Second

// storageGate is how the node serves one cluster share while its storage
// check runs (node/storecheck): trees connect while the view is serving
// or unchecked, wait while it is checking, and are refused otherwise.
type storageGate struct {
	// Immutable.
	path     string
	volume   uint64
	stop     func() // ends the check; nil when unchecked
	unsafeOK bool   // skip_storage_check

	mu      sync.Mutex
	view    storecheck.View
	changed chan struct{} // closed at the next change of view
}

func newStorageGate(rec *statev1.ShareRecord) *storageGate {
	g := &storageGate{path: rec.Path, volume: statev1.VolumeID(rec), unsafeOK: rec.SkipStorageCheck, changed: make(chan struct{})}
	g.view = storecheck.View{State: storecheck.Checking, ZeroCopy: true}
	if g.unsafeOK {
		g.view = storecheck.View{State: storecheck.Unchecked, ZeroCopy: true}
	}
	return g
}

// same reports whether the gate checks what rec asks for.
func (g *storageGate) same(rec *statev1.ShareRecord) bool {
	return g.path == rec.Path && g.volume == statev1.VolumeID(rec) && g.unsafeOK == rec.SkipStorageCheck
}

// get returns the current view and a channel closed at its next change.
func (g *storageGate) get() (storecheck.View, <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.view, g.changed
}

func (g *storageGate) set(v storecheck.View) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.view = v
	close(g.changed)
	g.changed = make(chan struct{})
}

// served reports whether a view lets clients in.
func served(v storecheck.View) bool {
	return v.State == storecheck.Serving || v.State == storecheck.Unchecked
}

// Lookup implements server.Shares: a cluster share whose storage check is
// under way is waited for (checkWait at most), one the check refused is
// not found.
func (t *shareTable) Lookup(name string) (*server.Share, bool) {
	deadline := time.Now().Add(checkWait)
	for {
		sh, g := t.lookup(name)
		if sh == nil {
			return nil, false
		}
		if g == nil {
			return sh, true
		}
		v, changed := g.get()
		switch {
		case served(v):
			return sh, true
		case v.State != storecheck.Checking:
			return nil, false
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return nil, false
		}
		timer := time.NewTimer(wait)
		select {
		case <-changed:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// lookup finds share name and its storage gate (nil for a share the node
// serves unchecked: its own, or IPC$).
func (t *shareTable) lookup(name string) (*server.Share, *storageGate) {
	key := strings.ToLower(name)
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.shares[key], t.gates[key]
}

// startCheck gates share sh of record rec on its storage check: an
// unchanged check goes on, a changed one starts anew. Called by Put with
// the share not yet in the table.
func (t *shareTable) startCheck(rec *statev1.ShareRecord, sh *server.Share) {
	key := strings.ToLower(rec.Name)
	t.mu.Lock()
	g := t.gates[key]
	t.mu.Unlock()
	if g != nil && g.same(rec) {
		v, _ := g.get()
		sh.SetPageCacheReads(v.ZeroCopy)
		return
	}
	t.stopCheck(rec.Name)
	g = newStorageGate(rec)
	t.mu.Lock()
	t.gates[key] = g
	t.mu.Unlock()
	if g.unsafeOK {
		t.log.Warn("serving a share without its storage check (skip_storage_check): nodes may serve stale data", "share", rec.Name)
		return
	}
	g.stop = t.checks.Watch(rec.Name, rec.Path, g.volume, func(v storecheck.View) {
		was, _ := g.get()
		g.set(v)
		t.applyView(rec.Name, was, v)
	})
}

// applyView makes the share follow its storage check's view (was before):
// reads without the page cache where it is stale, trees ended as it turns
// refused.
func (t *shareTable) applyView(name string, was, v storecheck.View) {
	sh, _ := t.lookup(name)
	if sh == nil {
		return
	}
	sh.SetPageCacheReads(v.ZeroCopy)
	if v.State == storecheck.Refused && was.State != storecheck.Refused && t.endTrees != nil {
		n := t.endTrees(sh)
		t.log.Error("share refused: its storage is not coherent between nodes", "share", name, "reason", v.Reason, "trees_ended", n)
	}
	if t.viewChanged != nil {
		t.viewChanged(name, v)
	}
}

// stopCheck ends share name's storage check.
func (t *shareTable) stopCheck(name string) {
	key := strings.ToLower(name)
	t.mu.Lock()
	g := t.gates[key]
	delete(t.gates, key)
	t.mu.Unlock()
	if g != nil && g.stop != nil {
		g.stop()
	}
}

// stopChecks ends every storage check (shutdown).
func (t *shareTable) stopChecks() {
	t.mu.Lock()
	names := make([]string, 0, len(t.gates))
	for k := range t.gates {
		names = append(names, k)
	}
	t.mu.Unlock()
	for _, n := range names {
		t.stopCheck(n)
	}
}
