package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/signing"
)

// The files of a handed-over channel's large READs and WRITEs, as the
// node its client is connected to opens them, and their durability.
//
// Each node has its own mount of a share's storage, at a path of its
// own. The arrival node therefore never opens a file by the home node's
// host path: it asks the home node to name the open's file
// (Relay.RemoteFile: the share, the path under the share's root and the
// FileID), opens that name through its own share (PeerOpener: the share's
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
// own (RemoteSyncer), and succeeds only when all did ([MS-SMB2]
// 3.3.5.11). An arrival node flushes what it wrote for a channel when the
// channel ends, and says so as it ends the relay; a channel that ended
// otherwise (its node died) before its writes were flushed fails that
// FLUSH, once: nothing can tell whether they reached stable storage.

// PeerFile names a regular file for another node of the cluster.
type PeerFile struct {
	Path string // the vfs name, under the share's root
	ID   uint64 // the FileID (inode), the same through every node's mount
	Size int64
	// Mount names the mount the file is on (vfs.FSInfo.Mount): the
	// arrival node writes a WRITE's payload itself only through the
	// same mount.
	Mount string
}

// PeerFiler is a Handle of a file that another node may open by name,
// through its own share of the same name.
type PeerFiler interface {
	// PeerFile names the open's file as of now; false when another node
	// cannot open it by name (a directory, a named stream).
	PeerFile() (PeerFile, bool)
}

// PeerOpener is a Backend that opens its files for the handed-over
// channels whose clients are connected to this node.
type PeerOpener interface {
	// OpenPeer opens the existing regular file path (a vfs name) to read
	// or to write, and returns it with its FileID.
	OpenPeer(path string, write bool) (PeerIO, uint64, error)
	// Mount names the mount the share is on (vfs.FSInfo.Mount; empty:
	// unknown).
	Mount() string
}

// PeerIO is a file OpenPeer opened. It is an FdFile when it has a
// descriptor that READs may send with sendfile(2).
type PeerIO interface {
	io.ReaderAt
	io.WriterAt
	Sync() error
	Close() error
}

// RemoteFileName is the home node's answer to Relay.RemoteFile.
type RemoteFileName struct {
	OK    bool // false: the open's file cannot be opened by name
	Share string
	Path  string
	ID    uint64
	Mount string // PeerFile.Mount
}

// RemoteSyncer is implemented by the net.Conn of a connection another
// node handed over (Adopt): through it the home node has the arrival
// node flush its descriptor of an open to stable storage.
type RemoteSyncer interface {
	SyncRemote(ctx context.Context, fid uint64) error
	// Flushed reports whether the arrival node ended the connection
	// with everything it wrote for it flushed (Relay.CloseSend).
	Flushed() bool
}

// RemoteFile names the file of open fid of session sid, tree tid, for the
// node the connection's client is connected to: only an open of a session
// the connection is a channel of.
func (a *Adopted) RemoteFile(sid uint64, tid uint32, fid uint64) RemoteFileName {
	s := a.c.srv.lookupSession(sid)
	if s == nil || !s.valid() || s.channelFor(a.c) == nil {
		return RemoteFileName{}
	}
	srv := a.c.srv
	srv.mu.Lock()
	o := srv.opens[fid]
	mine := o != nil && o.ID == fid && o.Session == s && o.Tree != nil && o.Tree.ID == tid
	srv.mu.Unlock()
	if !mine {
		return RemoteFileName{}
	}
	pf, ok := o.Handle.(PeerFiler)
	if !ok {
		return RemoteFileName{}
	}
	p, ok := pf.PeerFile()
	if !ok || p.ID == 0 {
		return RemoteFileName{}
	}
	return RemoteFileName{OK: true, Share: o.Tree.Share.Name, Path: p.Path, ID: p.ID, Mount: p.Mount}
}

// remoteFiles are the arrival node's descriptors of the files its
// handed-over channel reads and writes, by FileId.Persistent, and the
// keys of the sessions it is a channel of.
type remoteFiles struct {
	mu     sync.Mutex
	keys   map[uint64]*sessionKeys // by session id; nil: the connection is no channel of it
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
	f     PeerIO
	id    uint64
	share *Share // this node's share the file was opened through
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
func (c *conn) remoteFile(rl Relay, rf *remoteFiles, h *smb2.Header, fid uint64, write bool) *peerFile {
	key := remoteFile{fid, write}
	rf.mu.Lock()
	if pf := rf.files[key]; pf != nil {
		pf.refs++
		rf.mu.Unlock()
		return pf
	}
	rf.mu.Unlock()
	ctx, cancel := context.WithTimeout(c.ctx, handoffWait)
	name, err := rl.RemoteFile(ctx, h.SessionID, h.TreeID, fid)
	cancel()
	if err != nil {
		return nil // asked again next time
	}
	pf := &peerFile{refs: 2}
	if name.OK {
		if pf.f, pf.share, err = c.openPeer(name, write); err != nil {
			c.srv.log.Debug("a handed-over channel's file takes the relay", "remote", c.remote, "share", name.Share,
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
func (c *conn) openPeer(name RemoteFileName, write bool) (PeerIO, *Share, error) {
	sh, ok := c.srv.cfg.Shares.Lookup(name.Share)
	if !ok {
		return nil, nil, errors.New("the share is not served here")
	}
	po, ok := sh.Backend.(PeerOpener)
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

// remoteWriters are the channels of other nodes whose WRITEs to an open
// were written there and not flushed since, with how many each wrote
// (Open.remote).
type remoteWriters map[*conn]uint64

// wroteRemotely records that the arrival node of c, a handed-over
// channel, wrote to the open without flushing.
func (o *Open) wroteRemotely(c *conn) {
	o.mu.Lock()
	if o.remote == nil {
		o.remote = remoteWriters{}
	}
	o.remote[c]++
	o.mu.Unlock()
}

// flushRemote has every node that wrote to the open since its last flush
// flush its descriptor ([MS-SMB2] 3.3.5.11: the FLUSH covers what was
// written through the open on any channel). It fails when one of them
// cannot: its channel ended, or its node cannot be reached or failed.
func (o *Open) flushRemote(ctx context.Context) error {
	o.mu.Lock()
	pending := make(remoteWriters, len(o.remote))
	for c, n := range o.remote {
		pending[c] = n
	}
	o.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	type answer struct {
		c   *conn
		err error
	}
	answers := make(chan answer, len(pending))
	for c := range pending {
		go func() { answers <- answer{c, c.syncRemote(ctx, o.ID)} }()
	}
	var errs []error
	for range pending {
		a := <-answers
		if a.err != nil {
			errs = append(errs, fmt.Errorf("%s via %s: %w", a.c.remote, a.c.via, a.err))
			if a.c.ctx.Err() == nil {
				continue // asked again by the next FLUSH
			}
			// Its channel ended: this FLUSH reports it, the next does not.
		}
		o.mu.Lock()
		if o.remote[a.c] == pending[a.c] {
			delete(o.remote, a.c)
		}
		o.mu.Unlock()
	}
	return errors.Join(errs...)
}

// remoteSyncWait bounds how long a FLUSH waits for another node's flush.
const remoteSyncWait = 30 * time.Second

// syncRemote has the node that c, a handed-over connection, came through
// flush its descriptor of open fid.
func (c *conn) syncRemote(ctx context.Context, fid uint64) error {
	rs, ok := c.nc.(RemoteSyncer)
	switch {
	case !ok:
		return errors.New("the channel that wrote it cannot reach its node")
	case c.ctx.Err() != nil && rs.Flushed():
		return nil
	case c.ctx.Err() != nil:
		return errors.New("the channel that wrote it ended, its writes not known to be flushed")
	}
	ctx, cancel := context.WithTimeout(ctx, remoteSyncWait)
	defer cancel()
	return rs.SyncRemote(ctx, fid)
}
