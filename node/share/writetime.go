package share

import (
	"sync"
	"time"

	"github.com/smbcluster/smbcluster/node/clock"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
	"github.com/smbcluster/smbcluster/node/vfs"
)

// writeTimeDelay is how long after the first WRITE of an open its file's
// LastWriteTime is updated (a variable for tests).
var writeTimeDelay = 2 * time.Second

// writeTimes keeps a file's LastWriteTime as Windows does for the WRITEs
// of one open, over a backend whose every write moves the time
// ([MS-FSA] 2.1.4.17, "noting that a file has been modified", and its
// note: the time is updated on the first modification through an open
// and the later ones are deferred):
//
//   - the first WRITE through the open leaves the time as it was, and
//     updates it writeTimeDelay later (or sooner: FLUSH, SET_INFO of the
//     end of file or of FILE_BASIC_INFORMATION, CLOSE);
//   - the later WRITEs leave it alone too, and the CLOSE of an open that
//     wrote since the last update sets it to the time of the close;
//   - a LastWriteTime set through the open (SET_INFO,
//     Open.UserSetModificationTime in [MS-FSA] 2.1.5.14.2), or -1, keeps
//     the time as set whatever the open writes, until -2 resumes the
//     updates.
//
// The backend's time is the one every node and query reads: after each
// WRITE it is put back to the time the file shows (shown).
type writeTimes struct {
	mu      sync.Mutex
	held    bool        // a WRITE went through: shown is what the file shows
	shown   time.Time   // the LastWriteTime the file keeps while held
	sticky  bool        // the client set the time (or -1): no update of ours
	onClose bool        // written since the last update: CLOSE updates
	timer   *time.Timer // the delayed update, while pending
	closed  bool
}

// beforeWrite is called before a WRITE of data through o: the first one
// notes the time the file shows and arms the delayed update.
func (o *open) beforeWrite() {
	wt := &o.wtimes
	wt.mu.Lock()
	defer wt.mu.Unlock()
	if wt.held || wt.closed {
		return
	}
	fi, err := o.f.Stat()
	if err != nil {
		return
	}
	wt.held, wt.shown = true, fi.LastWriteTime
	if !wt.sticky {
		wt.timer = time.AfterFunc(writeTimeDelay, o.flushWriteTime)
	}
}

// afterWrite is called after a WRITE of data through o: the file keeps
// the time it showed, and its update is left to the delayed update or
// the CLOSE.
func (o *open) afterWrite() {
	wt := &o.wtimes
	wt.mu.Lock()
	defer wt.mu.Unlock()
	if !wt.held || wt.closed {
		return
	}
	wt.onClose = !wt.sticky
	o.setWriteTime(wt.shown)
}

// setWriteTime sets the file's LastWriteTime alone, as cheaply as the
// backend can: it runs after every WRITE.
func (o *open) setWriteTime(t time.Time) error {
	if s, ok := o.f.(vfs.WriteTimeSetter); ok {
		return s.SetWriteTime(t)
	}
	return o.f.SetInfo(time.Time{}, time.Time{}, t, time.Time{}, nil)
}

// flushWriteTime makes a pending update of the file's LastWriteTime now:
// the delayed update, FLUSH, SET_INFO ([MS-FSA] 2.1.5.14.2: even one
// whose times are all 0 flushes it, as Windows does).
func (o *open) flushWriteTime() {
	wt := &o.wtimes
	wt.mu.Lock()
	defer wt.mu.Unlock()
	if wt.timer == nil || wt.closed {
		return
	}
	o.updateWriteTimeLocked(clock.Now())
}

// updateWriteTimeLocked sets the file's LastWriteTime to now, unless the
// client set it, and ends a pending update.
func (o *open) updateWriteTimeLocked(now time.Time) {
	wt := &o.wtimes
	if wt.timer != nil {
		wt.timer.Stop()
		wt.timer = nil
	}
	wt.onClose = false
	if wt.sticky {
		return
	}
	if o.setWriteTime(now) == nil {
		wt.shown = now
	}
}

// resized is called after SET_INFO changed the end of file or the
// allocation through o, which the backend notes as a modification at
// once: a pending update is done by it; a time the client set stays.
func (o *open) resized() {
	wt := &o.wtimes
	wt.mu.Lock()
	defer wt.mu.Unlock()
	if wt.closed {
		return
	}
	if wt.sticky && wt.held {
		o.setWriteTime(wt.shown)
		return
	}
	if wt.timer != nil {
		wt.timer.Stop()
		wt.timer = nil
	}
	wt.onClose = false
	if fi, err := o.f.Stat(); err == nil && wt.held {
		wt.shown = fi.LastWriteTime
	}
}

// setBasicWriteTime applies the LastWriteTime of a FILE_BASIC_INFORMATION set
// through o ([MS-FSA] 2.1.5.14.2): a pending update is done first; a
// time sets the file's and stops the open's updates, -1 stops them with
// the time as it is, -2 resumes them. It returns the time to store (zero:
// none).
func (o *open) setBasicWriteTime(ft uint64) time.Time {
	wt := &o.wtimes
	wt.mu.Lock()
	defer wt.mu.Unlock()
	if wt.timer != nil && !wt.closed {
		o.updateWriteTimeLocked(clock.Now())
	}
	switch ft {
	case 0:
		return time.Time{}
	case fscc.FiletimeStopUpdating:
		if fi, err := o.f.Stat(); err == nil {
			wt.sticky, wt.held, wt.shown = true, true, fi.LastWriteTime
		}
		return time.Time{}
	case fscc.FiletimeResumeUpdating:
		wt.sticky = false
		return time.Time{}
	}
	t := fscc.TimeOf(ft)
	wt.sticky, wt.held, wt.shown, wt.onClose = true, true, t, false
	return t
}

// closeWriteTime ends the open's part in its file's LastWriteTime: the
// CLOSE of an open that wrote since the last update sets it to now
// ([MS-FSA] 2.1.5.4).
func (o *open) closeWriteTime() {
	wt := &o.wtimes
	wt.mu.Lock()
	defer wt.mu.Unlock()
	if wt.closed {
		return
	}
	if wt.onClose || wt.timer != nil {
		o.updateWriteTimeLocked(clock.Now())
	}
	wt.closed = true
}
