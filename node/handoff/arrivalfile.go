package handoff

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/signing"
)

// The files of a handed-over channel's large READs and WRITEs, as the
// node its client is connected to opens them, and their durability.
//
// Each node has its own mount of a share's storage, at a path of its
// own. The arrival node therefore never opens a file by the home node's
// host path: it asks the home node to name the open's file
// (SessionService.RemoteFile: the share, the path under the share's root and the
// FileID), opens that name through its own share (server.PeerOpener: the share's
// vfs) and checks that the FileID is the one the home node has open. A
// file it cannot open so — a share not served here, a file not found, a
// different FileID, a directory or a named stream — takes the relay, as a
// small request does; the answer is kept per open, so that it is asked
// once.
//
// The bytes a node writes are made durable where they were written. A
// write-through WRITE (SMB2_WRITEFLAG_WRITE_THROUGH, an open made with
// FILE_WRITE_THROUGH, a persistent open: [MS-SMB2] 3.3.5.13) is flushed
// by the arrival node on its own descriptor before it confirms the write,
// and the home node answers only after that. Any other WRITE the arrival
// node wrote is remembered by the home node, per open, with the channel
// it came through; a FLUSH of the open, on any channel, flushes the home
// node's descriptor and has every such channel's arrival node flush its
// own (a sync message on the Relay stream), and succeeds only when all
// did ([MS-SMB2] 3.3.5.11). An arrival node flushes what it wrote for a channel when the
// channel ends, and says so as it ends the relay; a channel that ended
// otherwise (its node died) before its writes were flushed fails that
// FLUSH, once: nothing can tell whether they reached stable storage.

// handoffWait bounds how long the arrival node waits for the home node to
// answer a question (a file's name, a session's keys): a stopped home
// node does not hold the client's requests.
const handoffWait = 5 * time.Second

// remoteFiles are the arrival node's descriptors of the files its
// handed-over channel reads and writes, by FileId.Persistent.
type remoteFiles struct {
	mu     sync.Mutex
	files  map[remoteFile]*peerFile
	signer signing.Signer
	key    []byte

	// closing counts the written descriptors being flushed and closed
	// (closeFile): a FLUSH that finds no descriptor waits for them.
	closing sync.WaitGroup
}

// remoteFile names a descriptor remoteFiles keeps: one to read and one to
// write each open.
type remoteFile struct {
	fid   uint64
	write bool
}

// remoteFilesMax bounds the descriptors one channel keeps.
const remoteFilesMax = 256

// peerFile is an open's file as this node opened it; f is nil when this
// node cannot open it (its requests take the relay).
type peerFile struct {
	f     server.PeerIO
	id    uint64
	share *server.Share // this node's share the file was opened through
	// Under remoteFiles.mu: I/O under way, plus one while kept; written
	// since the last flush.
	refs  int
	dirty bool
}

// unref drops a reference to pf, under rf.mu; it reports whether that was
// the last (the caller then closes it with closeFile).
func (rf *remoteFiles) unref(pf *peerFile) bool {
	if pf.refs--; pf.refs > 0 {
		return false
	}
	if pf.dirty {
		rf.closing.Add(1)
	}
	return true
}

// remoteFile returns the descriptor of open fid, the first time opened
// through this node's share of the name the home node gives; nil when
// the home node cannot be asked now. The caller releases it.
func (a *arrival) remoteFile(h *smb2.Header, fid uint64, write bool) *peerFile {
	rf := a.files
	key := remoteFile{fid, write}
	rf.mu.Lock()
	if pf := rf.files[key]; pf != nil {
		pf.refs++
		rf.mu.Unlock()
		return pf
	}
	rf.mu.Unlock()
	ctx, cancel := context.WithTimeout(a.h.Context(), handoffWait)
	name, err := a.rl.RemoteFile(ctx, h.SessionID, h.TreeID, fid)
	cancel()
	if err != nil {
		return nil // asked again next time
	}
	pf := &peerFile{refs: 2}
	if name.OK {
		if pf.f, pf.share, err = a.openPeer(name, write); err != nil {
			a.rl.log.Debug("a handed-over channel's file takes the relay", "remote", a.h.Remote, "share", name.Share,
				"file", name.Path, "err", err)
		}
		pf.id = name.ID
	}
	rf.mu.Lock()
	if old := rf.files[key]; old != nil {
		old.refs++
		rf.mu.Unlock()
		if pf.f != nil {
			pf.f.Close() // unused, unwritten
		}
		return old
	}
	var evicted *peerFile
	if len(rf.files) >= remoteFilesMax {
		for k, g := range rf.files {
			// An open closed without this node seeing its CLOSE.
			delete(rf.files, k)
			if rf.unref(g) {
				evicted = g
			}
			break
		}
	}
	rf.files[key] = pf
	rf.mu.Unlock()
	rf.closeFile(evicted)
	return pf
}

// openPeer opens name through this node's share of that name and checks
// that it is the file the home node has open.
func (a *arrival) openPeer(name server.RemoteFileName, write bool) (server.PeerIO, *server.Share, error) {
	sh, ok := a.h.Share(name.Share)
	if !ok {
		return nil, nil, errors.New("the share is not served here")
	}
	po, ok := sh.Backend.(server.PeerOpener)
	if !ok {
		return nil, nil, errors.New("the share's files cannot be opened by name")
	}
	if write && (name.Mount == "" || po.Mount() != name.Mount) {
		// Two mounts writing one file contend for it (GlusterFS hands
		// the file's lock from mount to mount on every write: 2–9 MiB/s
		// against 38–51 through one mount, bench/README.md): the home
		// node's mount writes every byte of its opens.
		return nil, nil, errors.New("another mount than the home node's: the home node writes")
	}
	f, id, err := po.OpenPeer(name.Path, write)
	if err != nil {
		return nil, nil, err
	}
	if id != name.ID {
		f.Close()
		return nil, nil, fmt.Errorf("FileID %d here, %d at the home node: not the same file", id, name.ID)
	}
	return f, sh, nil
}

// release drops a reference remoteFile returned.
func (rf *remoteFiles) release(pf *peerFile) {
	if pf == nil {
		return
	}
	rf.mu.Lock()
	last := rf.unref(pf)
	rf.mu.Unlock()
	if last {
		rf.closeFile(pf)
	}
}

// closeFile closes a descriptor no one uses any more (unref), flushing
// what was written through it first: a FLUSH can no longer reach it.
func (rf *remoteFiles) closeFile(pf *peerFile) {
	if pf == nil || pf.f == nil {
		return
	}
	if pf.dirty {
		defer rf.closing.Done()
		pf.f.Sync()
	}
	pf.f.Close()
}

// wrote records a write through pf not flushed yet.
func (rf *remoteFiles) wrote(pf *peerFile) {
	rf.mu.Lock()
	pf.dirty = true
	rf.mu.Unlock()
}

// sync flushes this node's descriptor of open fid, as its home node asks
// for a FLUSH of the open.
func (rf *remoteFiles) sync(fid uint64) error {
	rf.mu.Lock()
	pf := rf.files[remoteFile{fid, true}]
	if pf == nil || pf.f == nil {
		rf.mu.Unlock()
		rf.closing.Wait() // what was written here is flushed as it is closed
		return nil
	}
	pf.refs++
	pf.dirty = false
	rf.mu.Unlock()
	defer rf.release(pf)
	if err := pf.f.Sync(); err != nil {
		rf.mu.Lock()
		pf.dirty = true
		rf.mu.Unlock()
		return err
	}
	return nil
}

// flushAll flushes every descriptor written through and not flushed
// since, and waits for those being closed; it reports whether all were.
func (rf *remoteFiles) flushAll() bool {
	rf.mu.Lock()
	var dirty []*peerFile
	for _, pf := range rf.files {
		if pf.dirty {
			pf.refs++
			pf.dirty = false
			dirty = append(dirty, pf)
		}
	}
	rf.mu.Unlock()
	ok := true
	for _, pf := range dirty {
		if err := pf.f.Sync(); err != nil {
			ok = false
			rf.wrote(pf)
		}
		rf.release(pf)
	}
	rf.closing.Wait()
	return ok
}

// drop closes the descriptors of open fid, which the client closed.
func (rf *remoteFiles) drop(fid uint64) {
	rf.mu.Lock()
	var fs []*peerFile
	for _, write := range []bool{false, true} {
		k := remoteFile{fid, write}
		if pf := rf.files[k]; pf != nil {
			delete(rf.files, k)
			if rf.unref(pf) {
				fs = append(fs, pf)
			}
		}
	}
	rf.mu.Unlock()
	for _, pf := range fs {
		rf.closeFile(pf)
	}
}

// close closes every descriptor, as the connection ends.
func (rf *remoteFiles) close() {
	rf.mu.Lock()
	var fs []*peerFile
	for k, pf := range rf.files {
		delete(rf.files, k)
		if rf.unref(pf) {
			fs = append(fs, pf)
		}
	}
	rf.mu.Unlock()
	for _, pf := range fs {
		rf.closeFile(pf)
	}
}
