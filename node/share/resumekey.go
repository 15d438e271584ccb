package share

import (
	"crypto/rand"
	"runtime"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/smbcluster/smbcluster/node/server"
)

// ResumeKeys maps the resume keys handed out by FSCTL_SRV_REQUEST_RESUME_KEY
// to their opens, and opens to their key ([MS-SMB2] 3.3.5.15.5). Entries
// hold the open weakly and go away when it is collected. A node's disk
// shares share one (SetResumeKeys), so that a server-side copy may take
// its source from another share of the session; a share that is given
// none has its own. It is safe for concurrent use.
type ResumeKeys struct {
	mu     sync.Mutex
	byKey  map[[24]byte]resumeEntry
	byOpen map[weak.Pointer[open]][24]byte
	live   atomic.Int64 // len(byKey), read without mu
}

type resumeEntry struct {
	open    weak.Pointer[open]
	session *server.Session
}

// NewResumeKeys returns an empty resume key table.
func NewResumeKeys() *ResumeKeys {
	return &ResumeKeys{byKey: map[[24]byte]resumeEntry{}, byOpen: map[weak.Pointer[open]][24]byte{}}
}

// SetResumeKeys makes the share use k, shared with the other shares of
// the node. Call it before serving.
func (d *Disk) SetResumeKeys(k *ResumeKeys) { d.resume.Store(k) }

// resumeKeys returns the share's table, made on first use if none was set.
func (d *Disk) resumeKeys() *ResumeKeys {
	if k := d.resume.Load(); k != nil {
		return k
	}
	d.resume.CompareAndSwap(nil, NewResumeKeys())
	return d.resume.Load()
}

// key returns the resume key of o, made on first use for session s.
func (k *ResumeKeys) key(o *open, s *server.Session) [24]byte {
	wp := weak.Make(o)
	k.mu.Lock()
	defer k.mu.Unlock()
	if key, ok := k.byOpen[wp]; ok {
		return key
	}
	var key [24]byte
	rand.Read(key[:])
	k.byKey[key] = resumeEntry{open: wp, session: s}
	k.byOpen[wp] = key
	k.live.Add(1)
	runtime.AddCleanup(o, k.forget, key)
	return key
}

// forgetOpen drops the resume key of an open being closed: a closed
// source is not found ([MS-SMB2] 3.3.5.15.6).
func (k *ResumeKeys) forgetOpen(o *open) {
	if k.live.Load() == 0 {
		return // the common case: no keys, no lock on the CLOSE path
	}
	k.mu.Lock()
	key, ok := k.byOpen[weak.Make(o)]
	k.mu.Unlock()
	if ok {
		k.forget(key)
	}
}

func (k *ResumeKeys) forget(key [24]byte) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if e, ok := k.byKey[key]; ok {
		delete(k.byOpen, e.open)
		delete(k.byKey, key)
		k.live.Add(-1)
	}
}

// lookup finds the open of a resume key handed to session s.
func (k *ResumeKeys) lookup(key [24]byte, s *server.Session) *open {
	k.mu.Lock()
	e, ok := k.byKey[key]
	k.mu.Unlock()
	if !ok || e.session != s {
		return nil
	}
	return e.open.Value()
}
