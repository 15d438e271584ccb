package peer

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/smbcluster/smbcluster/node/state"
)

// holdings are a node's books of the opens it holds, as their holder:
// which, of which files and shards, their leases, what their owners
// granted them, which asked for byte-range locks, and the hints that
// make their closes wait. Its mu guards them alone.
type holdings struct {
	ids *atomic.Uint64 // the node's ids of its opens (Router.next)

	mu          sync.Mutex
	held        map[uint64]*state.Open            // opens this node holds, by Ref
	nheld       map[state.FileKey]int             // how many of them are of each file
	perShard    [NumShards]int                    // held opens, and opens handed over to be adopted, by shard
	rebuilt     [NumShards]bool                   // shards asked for their held opens: closes wait (closing.go)
	hint        map[state.FileKey]bool            // remote files known to have byte-range locks
	leaseOf     map[uint64]state.LeaseID          // the lease of each held open that has one
	leaseFiles  map[state.LeaseID]leaseFile       // the file of each lease of a held open
	locked      map[uint64]bool                   // held opens that asked for a byte-range lock
	done        map[uint64]bool                   // held opens whose admission completed (recover.go)
	mirrorCache map[uint64]heldState              // what the owner granted held opens of remote files
	readClear   map[state.FileKey]map[uint64]bool // held opens whose writes need break no read caching (files.go)
	adopted     map[uint64]*state.Open            // durable opens handed over to this node's ids, not yet taken (durable.go)
	durHolder   DurableHolder                     // the holder side of TakeDurable (durable.go)
	durStatus   func(error) (uint32, bool)
	appClose    AppInstances
	delHint     map[state.FileKey]bool // remote files with a delete pending: closes wait (closing.go)
	detaching   map[uint64]bool        // detached held opens whose owner has not answered the detach yet (caching.go)
}

func newHoldings(ids *atomic.Uint64) *holdings {
	return &holdings{
		ids:         ids,
		mirrorCache: map[uint64]heldState{}, locked: map[uint64]bool{}, done: map[uint64]bool{},
		held: map[uint64]*state.Open{}, nheld: map[state.FileKey]int{}, hint: map[state.FileKey]bool{},
		delHint: map[state.FileKey]bool{}, leaseOf: map[uint64]state.LeaseID{}, leaseFiles: map[state.LeaseID]leaseFile{},
		readClear: map[state.FileKey]map[uint64]bool{}, adopted: map[uint64]*state.Open{}, detaching: map[uint64]bool{},
	}
}

// hold registers o as held by this node and gives it its Ref.
func (hd *holdings) hold(o *state.Open) {
	if o.Ref == 0 {
		o.Ref = hd.ids.Add(1)
	}
	hd.mu.Lock()
	if hd.held[o.Ref] == nil {
		hd.held[o.Ref] = o
		hd.nheld[o.Key]++
		hd.perShard[ShardOf(o.Key)]++
	}
	hd.mu.Unlock()
}

// unhold forgets o.
func (hd *holdings) unhold(o *state.Open) {
	hd.mu.Lock()
	hd.unholdLocked(o)
	hd.mu.Unlock()
}

// unholdLocked is unhold; the caller holds hd.mu.
func (hd *holdings) unholdLocked(o *state.Open) {
	if hd.held[o.Ref] == o {
		delete(hd.held, o.Ref)
		delete(hd.mirrorCache, o.Ref)
		delete(hd.readClear[o.Key], o.Ref)
		delete(hd.done, o.Ref)
		delete(hd.locked, o.Ref)
		delete(hd.detaching, o.Ref)
		hd.perShard[ShardOf(o.Key)]--
		if id, ok := hd.leaseOf[o.Ref]; ok {
			delete(hd.leaseOf, o.Ref)
			hd.dropLeaseFile(id)
		}
		if hd.nheld[o.Key]--; hd.nheld[o.Key] <= 0 {
			delete(hd.nheld, o.Key)
			delete(hd.hint, o.Key)
			delete(hd.delHint, o.Key)
			delete(hd.readClear, o.Key)
		}
	}
}

// dropLeaseFile forgets the file of lease id unless another held open
// still has the lease. The caller holds hd.mu.
func (hd *holdings) dropLeaseFile(id state.LeaseID) {
	for _, other := range hd.leaseOf {
		if other == id {
			return
		}
	}
	delete(hd.leaseFiles, id)
}

// noteCaching records what the owner granted or broke o to.
func (hd *holdings) noteCaching(o *state.Open, f func(*heldState)) {
	hd.mu.Lock()
	defer hd.mu.Unlock()
	if hd.held[o.Ref] != o {
		return
	}
	hs := hd.mirrorCache[o.Ref]
	f(&hs)
	hd.mirrorCache[o.Ref] = hs
}

// admitted marks o's admission done: from now on it counts among the
// opens a new owner rebuilds (Held). An Admit still on its way is not
// reported: it is retried at the new owner once the shard is rebuilt.
func (hd *holdings) admitted(o *state.Open) {
	hd.mu.Lock()
	if hd.held[o.Ref] == o {
		hd.done[o.Ref] = true
	}
	hd.mu.Unlock()
}

// noteLease applies f to the copy of every held open of lease id.
func (hd *holdings) noteLease(id state.LeaseID, f func(*heldState)) {
	hd.mu.Lock()
	defer hd.mu.Unlock()
	for ref, l := range hd.leaseOf {
		if l == id {
			hs := hd.mirrorCache[ref]
			f(&hs)
			hd.mirrorCache[ref] = hs
		}
	}
}

// heldIn lists the held opens of files in shards.
func (hd *holdings) heldIn(shards []uint32) []heldOpen {
	hd.mu.Lock()
	defer hd.mu.Unlock()
	var out []heldOpen
	for ref, o := range hd.held {
		if hd.done[ref] && slices.Contains(shards, ShardOf(o.Key)) {
			out = append(out, heldOpen{o, hd.mirrorCache[ref]})
		}
	}
	return out
}

// leaseFile finds the file of a lease among the held opens' cachings.
func (hd *holdings) leaseFile(id state.LeaseID) (state.FileKey, bool) {
	hd.mu.Lock()
	defer hd.mu.Unlock()
	lf, ok := hd.leaseFiles[id]
	return lf.key, ok
}

// readAgain records that an open of key caches reads again: this node's
// writers of it must ask the owner to break it.
func (hd *holdings) readAgain(key state.FileKey) {
	hd.mu.Lock()
	delete(hd.readClear, key)
	hd.mu.Unlock()
}

// setHint records that a file has byte-range locks.
func (hd *holdings) setHint(key state.FileKey) {
	hd.mu.Lock()
	if hd.nheld[key] > 0 {
		hd.hint[key] = true
	}
	hd.mu.Unlock()
}

// asked records that o asked for a lock (Release must then reach the
// owner).
func (hd *holdings) asked(o *state.Open) {
	hd.mu.Lock()
	hd.locked[o.Ref] = true
	hd.mu.Unlock()
}

// dropped records that a close waited for its answer: it reached the
// shard's current owner.
func (hd *holdings) dropped(key state.FileKey) {
	hd.mu.Lock()
	hd.rebuilt[ShardOf(key)] = false
	hd.mu.Unlock()
}

// has reports whether o is held.
func (hd *holdings) has(o *state.Open) bool {
	hd.mu.Lock()
	defer hd.mu.Unlock()
	return hd.held[o.Ref] == o
}

// markDetaching records that held open o stays detached without its
// owner's answer; false if o is not held here.
func (hd *holdings) markDetaching(o *state.Open) bool {
	hd.mu.Lock()
	defer hd.mu.Unlock()
	if hd.held[o.Ref] != o {
		return false
	}
	hd.detaching[o.Ref] = true
	return true
}

// isDetaching reports whether o is still held here, detached without its
// owner's answer.
func (hd *holdings) isDetaching(o *state.Open) bool {
	hd.mu.Lock()
	defer hd.mu.Unlock()
	return hd.held[o.Ref] == o && hd.detaching[o.Ref]
}

// endDetaching forgets that o waits for its owner's answer to a detach,
// reporting whether it did.
func (hd *holdings) endDetaching(o *state.Open) bool {
	hd.mu.Lock()
	defer hd.mu.Unlock()
	was := hd.held[o.Ref] == o && hd.detaching[o.Ref]
	delete(hd.detaching, o.Ref)
	return was
}
