package metrics

import (
	"slices"
	"sync"
	"sync/atomic"
)

// topCapacity is how many files and clients a node's tables keep.
const topCapacity = 256

// IOCount is a live open's or session's counters, kept by the engine
// (one atomic add per event) and folded into a TopN when it ends.
type IOCount struct {
	Requests, BytesRead, BytesWritten atomic.Uint64
}

// Entry is one key's counts.
type Entry struct {
	Key                               string
	Requests, BytesRead, BytesWritten uint64
}

// TopN keeps the counts of at most its capacity keys by the
// space-saving algorithm (Metwally et al.): a new key past capacity
// replaces the key with the fewest requests and inherits its counts, so
// a key's counts may be overestimated, never under, and every key
// heavier than total/capacity is kept.
type TopN struct {
	cap int
	mu  sync.Mutex
	m   map[string]*Entry
}

// NewTopN returns an empty table of capacity keys.
func NewTopN(capacity int) *TopN {
	return &TopN{cap: capacity, m: map[string]*Entry{}}
}

// Fold moves c's counts to key's: c is left at zero, so an open or
// session folded twice (two paths ending it) counts once.
func (t *TopN) Fold(key string, c *IOCount) {
	req, rd, wr := c.Requests.Swap(0), c.BytesRead.Swap(0), c.BytesWritten.Swap(0)
	if req == 0 && rd == 0 && wr == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.m[key]
	if e == nil {
		if len(t.m) >= t.cap {
			e = t.evictLocked()
		} else {
			e = &Entry{}
		}
		e.Key = key
		t.m[key] = e
	}
	e.Requests += req
	e.BytesRead += rd
	e.BytesWritten += wr
}

// evictLocked removes the key with the fewest requests and returns its
// entry, its counts kept for the key that replaces it.
func (t *TopN) evictLocked() *Entry {
	var min *Entry
	for _, e := range t.m {
		if min == nil || e.Requests < min.Requests {
			min = e
		}
	}
	delete(t.m, min.Key)
	return min
}

// merged returns t's entries with live counts added, by key.
func (t *TopN) merged(each func(fn func(key string, c *IOCount))) map[string]*Entry {
	out := map[string]*Entry{}
	t.mu.Lock()
	for k, e := range t.m {
		c := *e
		out[k] = &c
	}
	t.mu.Unlock()
	if each != nil {
		each(func(key string, c *IOCount) {
			e := out[key]
			if e == nil {
				e = &Entry{Key: key}
				out[key] = e
			}
			e.Requests += c.Requests.Load()
			e.BytesRead += c.BytesRead.Load()
			e.BytesWritten += c.BytesWritten.Load()
		})
	}
	return out
}

// topEntries returns the n entries of m with the most requests, then bytes.
func topEntries(m map[string]*Entry, n int) []Entry {
	out := make([]Entry, 0, len(m))
	for _, e := range m {
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b Entry) int {
		switch {
		case a.Requests != b.Requests:
			return cmpDesc(a.Requests, b.Requests)
		case a.BytesRead+a.BytesWritten != b.BytesRead+b.BytesWritten:
			return cmpDesc(a.BytesRead+a.BytesWritten, b.BytesRead+b.BytesWritten)
		}
		if a.Key < b.Key {
			return -1
		}
		return 1
	})
	return out[:min(n, len(out))]
}

func cmpDesc(a, b uint64) int {
	if a > b {
		return -1
	}
	return 1
}

// FileClosed and ClientGone fold an ended open's or session's counters
// into the node's tables.
func (n *Node) FileClosed(key string, c *IOCount) {
	if n != nil {
		n.files.Fold(key, c)
	}
}

func (n *Node) ClientGone(key string, c *IOCount) {
	if n != nil {
		n.clients.Fold(key, c)
	}
}
