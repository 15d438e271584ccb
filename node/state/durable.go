package state

import (
	"sort"
	"sync"
	"time"
)

// DurableRecord describes a durable open ([MS-SMB2] 3.3.1.10: Open.IsDurable,
// CreateGuid, ClientGuid, DurableOwner, DurableOpenTimeout and
// DurableOpenScavengerTimeout): what a node needs to know to reconnect the
// open to a client, or, later, to take it over from a node that went away.
// It holds no connection, session or file handle.
type DurableRecord struct {
	FileID        uint64 // FileId.Persistent
	Key           FileKey
	Share         string
	Name          string // share-relative path when it was opened
	Version       int    // 1 for DHnQ, 2 for DH2Q
	CreateGUID    [16]byte
	ClientGUID    [16]byte
	AppInstanceID [16]byte // zero when none was given
	User, Domain  string   // the DurableOwner
	Timeout       time.Duration
	// DisconnectedAt is when the open lost its connection; zero while it
	// is connected.
	DisconnectedAt time.Time
	LeaseKey       [16]byte
	HasLease       bool
	Persistent     bool // [MS-SMB2] Open.IsPersistent: on a CA share, written through
}

// Disconnected reports whether the open is waiting for its client.
func (r *DurableRecord) Disconnected() bool { return !r.DisconnectedAt.IsZero() }

// Expires is when a disconnected open is scavenged ([MS-SMB2] 3.3.2.2,
// the durable open scavenger timer); zero while it is connected.
func (r *DurableRecord) Expires() time.Time {
	if !r.Disconnected() {
		return time.Time{}
	}
	return r.DisconnectedAt.Add(r.Timeout)
}

// DurableStore holds the records of a node's durable opens. Today it
// lives in memory; a cluster keeps it in etcd so that another node can
// reconnect or scavenge the opens of a node that left. Implementations
// are safe for concurrent use and return copies.
type DurableStore interface {
	// Put creates or replaces the record of rec.FileID.
	Put(rec DurableRecord)
	// Get returns the record of a persistent FileId.
	Get(fileID uint64) (DurableRecord, bool)
	// ByCreateGUID finds the record a client's CreateGuid names
	// ([MS-SMB2] 3.3.5.9.10, replay detection).
	ByCreateGUID(client, create [16]byte) (DurableRecord, bool)
	// ByAppInstance lists the records with an AppInstanceId ([MS-SMB2]
	// 3.3.5.9.13).
	ByAppInstance(id [16]byte) []DurableRecord
	// Expired lists the disconnected records whose timeout passed at now,
	// oldest first.
	Expired(now time.Time) []DurableRecord
	// Delete forgets a record; deleting a missing one does nothing.
	Delete(fileID uint64)
	// Len is the number of records.
	Len() int
}

// MemDurableStore is the in-memory DurableStore of a single node.
type MemDurableStore struct {
	mu   sync.Mutex
	recs map[uint64]DurableRecord
}

// NewMemDurableStore returns an empty store.
func NewMemDurableStore() *MemDurableStore {
	return &MemDurableStore{recs: map[uint64]DurableRecord{}}
}

func (s *MemDurableStore) Put(rec DurableRecord) {
	s.mu.Lock()
	s.recs[rec.FileID] = rec
	s.mu.Unlock()
}

func (s *MemDurableStore) Get(fileID uint64) (DurableRecord, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.recs[fileID]
	return r, ok
}

func (s *MemDurableStore) ByCreateGUID(client, create [16]byte) (DurableRecord, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.recs {
		if r.Version == 2 && r.ClientGUID == client && r.CreateGUID == create {
			return r, true
		}
	}
	return DurableRecord{}, false
}

func (s *MemDurableStore) ByAppInstance(id [16]byte) []DurableRecord {
	if id == ([16]byte{}) {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []DurableRecord
	for _, r := range s.recs {
		if r.AppInstanceID == id {
			out = append(out, r)
		}
	}
	return out
}

func (s *MemDurableStore) Expired(now time.Time) []DurableRecord {
	s.mu.Lock()
	var out []DurableRecord
	for _, r := range s.recs {
		if r.Disconnected() && !now.Before(r.Expires()) {
			out = append(out, r)
		}
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Expires().Before(out[j].Expires()) })
	return out
}

func (s *MemDurableStore) Delete(fileID uint64) {
	s.mu.Lock()
	delete(s.recs, fileID)
	s.mu.Unlock()
}

func (s *MemDurableStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.recs)
}

// Caching is what an open caches: its oplock or lease.
type Caching struct {
	State     uint32 // lease state, or the lease state an oplock amounts to
	Lease     bool
	ID        LeaseID // the lease, when Lease
	Version   int
	Epoch     uint16
	ParentKey [16]byte
	HasParent bool
	Breaking  bool // a break awaits its acknowledgment
}

// Oplock is the oplock level of an oplock (none for a lease).
func (c Caching) Oplock() uint8 {
	if c.Lease {
		return OplockNone
	}
	return levelOf(c.State)
}

// CachingOf reports o's oplock or lease.
func (t *Table) CachingOf(o *Open) Caching {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := o.h
	if h == nil {
		return Caching{}
	}
	return Caching{State: h.state, Lease: h.isLease, ID: h.id, Version: h.version, Epoch: h.epoch,
		ParentKey: h.parentKey, HasParent: h.hasParent, Breaking: h.breaking}
}

// Detach hands o's breaks to b while its client is away (a durable open
// that lost its connection, [MS-SMB2] 3.3.7.1). It refuses, reporting
// false, when a break of o's oplock or lease is already waiting for an
// acknowledgment that cannot come any more.
func (t *Table) Detach(o *Open, b Breaker) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if o.h != nil && o.h.breaking {
		return false
	}
	o.Breaker = b
	return true
}

// Reattach gives o's breaks to b again, once its client reconnected
// ([MS-SMB2] 3.3.5.9.7, 3.3.5.9.12).
func (t *Table) Reattach(o *Open, b Breaker) {
	t.mu.Lock()
	o.Breaker = b
	t.mu.Unlock()
}

// Sole reports whether o is the only open of its file, and whether the
// file has a delete pending.
func (t *Table) Sole(o *Open) (sole, deletePending bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.files[o.Key]
	if f == nil {
		return false, false
	}
	return len(f.opens) == 1 && f.opens[0] == o, f.deletePending
}
