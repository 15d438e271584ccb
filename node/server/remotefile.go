package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// The files of a handed-over channel's large READs and WRITEs, as the
// home node names them for the node the client is connected to, and
// their durability.
//
// Each node has its own mount of a share's storage, at a path of its
// own. The arrival node (node/handoff) therefore never opens a file by
// the home node's host path: it asks the home node to name the open's
// file (Adopted.RemoteFile: the share, the path under the share's root
// and the FileID), opens that name through its own share (PeerOpener: the
// share's vfs) and checks that the FileID is the one the home node has
// open.
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

// RemoteFileName is the home node's answer to the arrival node's question
// (Adopted.RemoteFile).
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
	// with everything it wrote for it flushed.
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
