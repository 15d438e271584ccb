package peer

import (
	"log/slog"
	"sync"

	"github.com/smbcluster/smbcluster/node/state"
)

// owner is a node's owner side: the other nodes' opens of the files
// whose shards the node owns, each a proxy open in its tables (service.go);
// the proxies leaving them and the flushes before a refusal (closing.go);
// the deletes made pending on them; the dead holders' durable opens kept
// in force (orphans.go); and the stand-ins of the delegations it granted
// (deleg.go). Its mu guards its own maps alone; the tables it fills are
// safe for concurrent use.
type owner struct {
	// Immutable after newOwner.
	r      *Router // the node's holder side, to reach the other nodes
	table  *state.Table
	locks  *state.LockTable
	routes Routes
	dg     *delegations
	stats  *Stats
	log    *slog.Logger

	mu        sync.Mutex
	proxies   map[refKey]*state.Open // other nodes' opens of files this node owns
	proxyRef  map[*state.Open]refKey // the inverse of proxies
	in        map[*state.Open]bool   // proxies whose admission completed
	byKey     map[state.FileKey]map[refKey]bool
	perShard  [NumShards]int              // proxies, by shard (busy)
	closingAt map[state.FileKey]*closings // proxies leaving the table (closing.go)
	left      [NumShards]uint64           // proxies that left the table, by shard (closing.go)
	pendings  map[state.FileKey]pending   // owned files a delete is made pending on (closing.go)
	records   DurableRecords              // durable open records in etcd (orphans.go)
	orphans   map[*state.Open]orphan      // proxies kept for dead holders' durable opens (orphans.go)
}

func newOwner(r *Router) *owner {
	return &owner{
		r: r, table: r.table, locks: r.locks, routes: r.routes, dg: r.dg, stats: &r.stats, log: r.log,
		proxies: map[refKey]*state.Open{}, proxyRef: map[*state.Open]refKey{}, in: map[*state.Open]bool{},
		byKey: map[state.FileKey]map[refKey]bool{}, closingAt: map[state.FileKey]*closings{},
		pendings: map[state.FileKey]pending{}, orphans: map[*state.Open]orphan{},
	}
}

// busy reports whether the node keeps other nodes' opens of shard's
// files (ShardBusy).
func (ow *owner) busy(shard uint32) bool {
	ow.mu.Lock()
	defer ow.mu.Unlock()
	return ow.perShard[shard] > 0
}

// addProxyLocked records o as the proxy of another node's open k,
// admitted already when in. The caller holds ow.mu.
func (ow *owner) addProxyLocked(k refKey, o *state.Open, in bool) {
	ow.proxies[k] = o
	ow.proxyRef[o] = k
	if in {
		ow.in[o] = true
	}
	ow.perShard[ShardOf(o.Key)]++
	if ow.byKey[o.Key] == nil {
		ow.byKey[o.Key] = map[refKey]bool{}
	}
	ow.byKey[o.Key][k] = true
}
