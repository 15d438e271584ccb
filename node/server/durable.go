package server

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/state"
)

// Durable handles ([MS-SMB2] 3.3.5.9.6, 3.3.5.9.7, 3.3.5.9.10, 3.3.5.9.12):
// a durable open outlives the loss of its connection (or the end of its
// session by a reconnect naming it in PreviousSessionId). It is then
// detached: kept in Server.opens with its handle, share modes, oplock or
// lease and byte-range locks, but in no tree, until its client reconnects
// it on a new session or its timeout scavenges it. A break of its oplock
// or lease while it is detached closes it, as nobody could acknowledge
// the break (Windows does the same). On a share with continuous
// availability a DH2Q asking for it is granted persistent (with or
// without a lease): its WRITEs are written through, and in a cluster it,
// like any durable open, outlives its node (durable_cluster.go).

const (
	// durableV1Timeout is how long a disconnected DHnQ open waits.
	durableV1Timeout = 60 * time.Second
	// durableDefaultTimeout is granted for a DH2Q asking for 0.
	durableDefaultTimeout = 60 * time.Second
	// durableMaxTimeout caps a DH2Q's timeout (300 s, as Samba grants).
	durableMaxTimeout = 300 * time.Second
)

// DurableHandle is implemented by handles that can outlive their
// connection.
type DurableHandle interface {
	Handle
	// CanBeDurable reports whether the open holds what durability needs:
	// a batch oplock or a lease with handle caching, on a file
	// ([MS-SMB2] 3.3.5.9.6, 3.3.5.9.10).
	CanBeDurable() bool
	// DurableKey returns the file's key and the open's lease key, if any.
	DurableKey() (key state.FileKey, leaseKey [16]byte, hasLease bool)
	// Detach is called when the open loses its connection and is kept:
	// from now on a break of its oplock or lease calls scavenge instead
	// of going to the client. It reports false if the open cannot be
	// kept (a break already waits for an acknowledgment); the engine
	// then closes it.
	Detach(scavenge func()) bool
	// Reattach checks a durable reconnect of the open (r.Open) on r's
	// session ([MS-SMB2] 3.3.5.9.7, 3.3.5.9.12): lease key, client and
	// name, and returns the CREATE response. Breaks go to r.Open again.
	// On error the open stays detached.
	Reattach(r *Request, req *smb2.CreateRequest) (*smb2.CreateResponse, error)
	// BeforeScavenge is called before a detached open is closed for
	// good, by its timeout or a break.
	BeforeScavenge()
}

// PersistentHandle is implemented by handles that can be persistent
// ([MS-SMB2] 3.3.5.9.10: a durable v2 open asking for it on a share with
// continuous availability, whatever its oplock or lease).
type PersistentHandle interface {
	// CanBePersistent reports whether the open can be persistent: an
	// open of a file, not a directory.
	CanBePersistent() bool
	// WriteThrough makes every later WRITE through the open reach stable
	// storage before it is answered.
	WriteThrough()
}

// durable is the durable state of an open, guarded by Server.mu.
type durable struct {
	rec      state.DurableRecord
	detached bool
	busy     bool        // a reconnect is checking it
	gone     bool        // scavenged
	stop     func() bool // stops the scavenger timer of a detached open
}

// durables is the server's durable bookkeeping.
type durables struct {
	once    sync.Once
	store   state.DurableStore
	timer   atomic.Pointer[DurableTimer]    // nil: time.AfterFunc
	persist func(ctx context.Context) error // OnPersistentGrant
	// changed is called when a durable open is granted or taken over
	// (a cluster agent publishes its record at once).
	changed func()
	// detached is closed (and replaced) under Server.mu whenever a durable
	// open is detached or gone: a reconnect waiting for the teardown of
	// its open's dead connection watches it (durable_reconnect.go).
	detached chan struct{}
}

// detachedChanged wakes the reconnects waiting for a detach; s.mu is held.
func (s *Server) detachedChanged() {
	if s.dur.detached != nil {
		close(s.dur.detached)
		s.dur.detached = nil
	}
}

// DurableTimer starts the scavenger timer of a detached durable open
// ([MS-SMB2] 3.3.2.2): fire runs once d has passed, unless stop is called
// first. Tests replace it to run the timeout without waiting for it.
type DurableTimer func(d time.Duration, fire func()) (stop func() bool)

// SetDurableTimer replaces the scavenger timer (tests); safe while the
// server runs.
func (s *Server) SetDurableTimer(t DurableTimer) { s.dur.timer.Store(&t) }

func (s *Server) startTimer(d time.Duration, fire func()) func() bool {
	if t := s.dur.timer.Load(); t != nil {
		return (*t)(d, fire)
	}
	return time.AfterFunc(d, fire).Stop
}

// OnDurableChange sets f to be called whenever a durable open is granted,
// taken over from another node or closed (a cluster agent publishes or
// deletes its record at once: a node that dies a moment after must not
// leave the record of a closed open for other nodes to keep in force).
// Call it before serving.
func (s *Server) OnDurableChange(f func()) { s.dur.changed = f }

// OnPersistentGrant sets f to be called when a persistent handle is
// granted, before its CREATE is answered: a cluster agent writes the
// open's record to etcd (waiting at most until the context ends), so that
// no node's death after the answer loses the handle. Call it before
// serving.
func (s *Server) OnPersistentGrant(f func(ctx context.Context) error) { s.dur.persist = f }

// persistentWait bounds how long a persistent grant waits for its record.
const persistentWait = 5 * time.Second

// durableChanged calls the OnDurableChange function.
func (s *Server) durableChanged() {
	if f := s.dur.changed; f != nil {
		f()
	}
}

// SetDurableStore sets where durable open records are kept (in memory by
// default). Call it before serving.
func (s *Server) SetDurableStore(st state.DurableStore) {
	s.dur.once.Do(func() {})
	s.dur.store = st
}

// DurableStore returns the store of durable open records.
func (s *Server) DurableStore() state.DurableStore {
	s.dur.once.Do(func() {
		if s.dur.store == nil {
			s.dur.store = state.NewMemDurableStore()
		}
	})
	return s.dur.store
}

// Durable reports whether the open is durable.
func (o *Open) Durable() bool {
	s := o.server()
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return o.dur != nil
}

func (o *Open) server() *Server {
	if o.conn == nil {
		return nil
	}
	return o.conn.srv
}

// durableCtx is what a CREATE asks about durability.
type durableCtx struct {
	v1, v2         bool // DHnQ, DH2Q
	rc1, rc2       bool // DHnC, DH2C
	req2           smb2.DurableRequestV2
	fid            smb2.FileID // the open a reconnect names
	createGUID     [16]byte    // of a DH2C
	appInstance    [16]byte
	hasAppInstance bool
}

func (d *durableCtx) reconnect() bool { return d.rc1 || d.rc2 }

// parseDurable reads the durable handle contexts of a CREATE and refuses
// the combinations [MS-SMB2] 3.3.5.9.6, 3.3.5.9.7, 3.3.5.9.10 and
// 3.3.5.9.12 forbid. The v2 contexts and the AppInstanceId exist only for
// the 3.x dialects; older ones ignore them.
func parseDurable(dialect uint16, req *smb2.CreateRequest) (durableCtx, error) {
	var d durableCtx
	k := req.Known()
	if k.Present(smb2.CtxDurableRequest) {
		if !k.Valid(smb2.CtxDurableRequest) {
			return d, smb2.StatusInvalidParameter
		}
		d.v1 = true
	}
	if k.Present(smb2.CtxDurableReconnect) {
		if !k.Valid(smb2.CtxDurableReconnect) {
			return d, smb2.StatusInvalidParameter
		}
		d.rc1, d.fid = true, k.DurableReconnect.FileID
	}
	if dialect >= smb2.Dialect300 && dialect != smb2.DialectWildcard {
		if err := d.parseV2(k); err != nil {
			return d, err
		}
	}
	switch {
	case d.rc1 && (d.v2 || d.rc2):
		return d, smb2.StatusInvalidParameter // 3.3.5.9.7
	case d.rc2 && (d.v1 || d.v2):
		return d, smb2.StatusInvalidParameter // 3.3.5.9.12
	case d.v2 && d.v1:
		return d, smb2.StatusInvalidParameter // 3.3.5.9.10
	case d.rc1:
		d.v1 = false // a DHnQ beside a DHnC is ignored
	}
	return d, nil
}

// parseV2 reads the DH2Q, DH2C and AppInstanceId contexts.
func (d *durableCtx) parseV2(k *smb2.CreateContexts) error {
	for _, c := range [...]smb2.CreateContextSet{smb2.CtxDurableRequestV2, smb2.CtxDurableReconnectV2, smb2.CtxAppInstanceID} {
		if k.Present(c) && !k.Valid(c) {
			return smb2.StatusInvalidParameter
		}
	}
	if k.Present(smb2.CtxDurableRequestV2) {
		d.req2, d.v2 = k.DurableV2, true
	}
	if k.Present(smb2.CtxDurableReconnectV2) {
		d.rc2, d.fid, d.createGUID = true, k.DurableReconnectV2.FileID, k.DurableReconnectV2.CreateGUID
	}
	d.appInstance = k.AppInstanceID
	d.hasAppInstance = d.appInstance != [16]byte{}
	return nil
}

// grantDurable makes o durable if the CREATE asked for it and the open
// holds a batch oplock or a handle lease, and answers the DHnQ or DH2Q
// context ([MS-SMB2] 3.3.5.9.6, 3.3.5.9.10); persistent on a share with
// continuous availability when the DH2Q asks for it.
func (c *conn) grantDurable(r *Request, o *Open, d *durableCtx, resp *smb2.CreateResponse) {
	if !d.v1 && !d.v2 {
		return
	}
	dh, ok := o.Handle.(DurableHandle)
	persistent := d.v2 && d.req2.Flags&smb2.DurableHandleFlagPersistent != 0 && r.Tree.Share.CA &&
		c.serverCaps&smb2.CapPersistentHandles != 0
	if ph, isP := o.Handle.(PersistentHandle); !isP || !ph.CanBePersistent() {
		persistent = false
	}
	if !ok || !persistent && !dh.CanBeDurable() {
		return
	}
	key, lk, hasLease := dh.DurableKey()
	rec := state.DurableRecord{
		FileID: o.ID, Key: key, Share: r.Tree.Share.Name, Name: o.Name, Version: 1,
		ClientGUID: c.clientGUID, User: r.Session.User, Domain: r.Session.Domain,
		Timeout: durableV1Timeout, LeaseKey: lk, HasLease: hasLease,
	}
	if d.v2 {
		rec.Version, rec.CreateGUID = 2, d.req2.CreateGUID
		rec.Timeout = durableDefaultTimeout
		if d.req2.Timeout != 0 {
			rec.Timeout = min(time.Duration(d.req2.Timeout)*time.Millisecond, durableMaxTimeout)
		}
		if d.hasAppInstance {
			rec.AppInstanceID = d.appInstance
		}
		v2 := smb2.DurableResponseV2{Timeout: uint32(rec.Timeout / time.Millisecond)}
		if persistent {
			rec.Persistent, v2.Flags = true, smb2.DurableHandleFlagPersistent
			o.Handle.(PersistentHandle).WriteThrough()
		}
		resp.Contexts = append(resp.Contexts, smb2.CreateContext{Name: smb2.CreateCtxDurableHandleRequestV2, Data: v2.Append(nil)})
	} else {
		resp.Contexts = append(resp.Contexts, smb2.CreateContext{Name: smb2.CreateCtxDurableHandleRequest, Data: (&smb2.DurableResponse{}).Append(nil)})
	}
	s := c.srv
	s.mu.Lock()
	if _, live := s.opens[o.ID]; live {
		o.dur = &durable{rec: rec}
		s.DurableStore().Put(rec)
	}
	s.mu.Unlock()
	s.durableChanged()
	if f := s.dur.persist; rec.Persistent && f != nil {
		ctx, cancel := context.WithTimeout(r.Ctx, persistentWait)
		defer cancel()
		if err := f(ctx); err != nil {
			s.log.Warn("a persistent handle's record is not in the cluster yet", "remote", c.remote, "file", o.Name, "err", err)
		}
	}
}

// forgetDurable drops o's durable record as it closes. The caller holds s.mu.
func (s *Server) forgetDurable(o *Open) {
	if d := o.dur; d != nil {
		d.gone = true
		s.detachedChanged()
		if d.stop != nil {
			d.stop()
		}
		s.DurableStore().Delete(o.ID)
	}
}

// detachTree ends tree t for a lost connection: durable opens are
// detached, the others closed.
func (s *Server) detachTree(t *Tree) {
	t.mu.Lock()
	opens := make([]*Open, 0, len(t.opens))
	for _, o := range t.opens {
		opens = append(opens, o)
	}
	t.mu.Unlock()
	for _, o := range opens {
		if !s.detachOpen(o) {
			s.closeOpen(o)
		}
	}
}

// detachOpen keeps durable open o for its client to reconnect
// ([MS-SMB2] 3.3.7.1) and starts its scavenger timer (3.3.2.2). It
// reports false if o must be closed instead.
func (s *Server) detachOpen(o *Open) bool {
	if o.gen < s.fenceGen.Load() && s.abandon(o) { // durable_cluster.go
		return true
	}
	dh, ok := o.Handle.(DurableHandle)
	s.mu.Lock()
	d := o.dur
	if !ok || d == nil || d.gone || s.closed {
		s.mu.Unlock()
		return false
	}
	if d.detached {
		s.mu.Unlock()
		return true
	}
	d.detached = true // before Detach: a break may scavenge it at once
	s.mu.Unlock()
	if !dh.Detach(func() { s.scavenge(o) }) {
		s.mu.Lock()
		d.detached = false
		s.mu.Unlock()
		return false
	}
	t := o.Tree
	t.mu.Lock()
	delete(t.opens, o.ID)
	t.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if d.gone {
		return true // a break scavenged it meanwhile
	}
	d.rec.DisconnectedAt = time.Now()
	s.detachedChanged()
	d.stop = s.startTimer(d.rec.Timeout, func() { s.scavenge(o) })
	s.DurableStore().Put(d.rec)
	s.log.Debug("durable open detached", "file", o.Name, "id", o.ID, "timeout", d.rec.Timeout)
	return true
}

// scavenge closes a detached durable open whose timeout passed or whose
// oplock or lease must break, as a CLOSE would (delete-on-close included).
func (s *Server) scavenge(o *Open) {
	s.mu.Lock()
	d := o.dur
	if d == nil || !d.detached || d.busy || d.gone {
		s.mu.Unlock()
		return
	}
	d.busy = true // no reconnect from now on
	s.mu.Unlock()
	s.log.Debug("durable open scavenged", "file", o.Name, "id", o.ID)
	o.Handle.(DurableHandle).BeforeScavenge()
	s.closeOpen(o)
}

// closeDetached closes every detached open (at shutdown).
func (s *Server) closeDetached() {
	s.mu.Lock()
	var opens []*Open
	for _, o := range s.opens {
		if o.dur != nil && o.dur.detached {
			opens = append(opens, o)
		}
	}
	s.mu.Unlock()
	for _, o := range opens {
		s.scavenge(o)
	}
}

// Async reports whether the request went async (GoAsync): a CREATE that
// waited for a break may find its file deleted meanwhile.
func (r *Request) Async() bool { return r.asyncID != 0 }
