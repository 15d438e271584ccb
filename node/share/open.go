package share

import (
	"sync"
	"sync/atomic"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
	"github.com/smbcluster/smbcluster/node/state"
	"github.com/smbcluster/smbcluster/node/vfs"
)

// open is one open of a file or directory on a disk share.
type open struct {
	// Immutable.
	d      *Disk
	f      vfs.File
	name   string
	access uint32
	isDir  bool

	so    *state.Open // the open's entry in the open table; set once admitted
	watch *watcher    // CHANGE_NOTIFY state of a directory open
	owner fscc.SID    // the user who opened it, owner of a file without a stored descriptor (access.go); set by CREATE

	allocation int64 // allocation set through this open (alloc.go); under mu

	wtimes writeTimes // the file's LastWriteTime as this open's WRITEs move it (writetime.go)

	written atomic.Bool // data was written through it: its close breaks the parent's leases (dirlease.go)
	// writeThrough: a persistent open's WRITEs reach stable storage
	// before they are answered (durable_cluster.go).
	writeThrough atomic.Bool

	mu            sync.Mutex
	stream        string // named stream (stream.go), "" for the file itself; rename changes it
	deleteOnClose bool
	renamed       bool // a file renamed through it: its close reports a change of attributes (notify.go)
	position      int64
	mode          uint32     // FILE_MODE_INFORMATION flags set by SET_INFO
	dir           *dirCursor // QUERY_DIRECTORY state
}

// StateOpen returns the entry in the open table of h, an open of a disk
// share, or nil for any other handle: what a cluster listing asks the
// state tables about (its file's key, its byte-range locks).
func StateOpen(h server.Handle) *state.Open {
	if o, ok := h.(*open); ok && o != nil {
		return o.so
	}
	return nil
}

// setDeleteOnClose marks or unmarks the open's file for deletion
// ([MS-FSA] 2.1.5.15.3): a directory must be empty.
func (o *open) setDeleteOnClose(on bool) error {
	return o.markDeleteOnClose(on, true)
}

// requestDeleteOnClose applies the CREATE option FILE_DELETE_ON_CLOSE
// ([MS-FSA] 2.1.5.1.2.1). A directory need not be empty yet: its close
// deletes it only if it is empty by then (deletesOnClose).
func (o *open) requestDeleteOnClose() error {
	return o.markDeleteOnClose(true, false)
}

// markDeleteOnClose sets or clears the open's delete on close; a file
// with FILE_ATTRIBUTE_READONLY and the share root cannot be deleted, nor
// a directory with entries when mustBeEmpty.
func (o *open) markDeleteOnClose(on, mustBeEmpty bool) error {
	if on {
		fi, err := o.f.Stat()
		if err != nil {
			return err
		}
		if fi.Attributes&vfs.AttrReadOnly != 0 {
			return smb2.StatusCannotDelete
		}
		if o.name == "" {
			return smb2.StatusCannotDelete
		}
		if fi.IsDir && mustBeEmpty {
			entries, err := o.f.ReadDir()
			if err != nil {
				return err
			}
			if len(entries) > 0 {
				return smb2.StatusDirectoryNotEmpty
			}
		}
	}
	o.mu.Lock()
	o.deleteOnClose = on
	o.mu.Unlock()
	return nil
}

// deletesOnClose reports whether an open to be deleted on close marks
// its file deleted when it closes ([MS-FSA] 2.1.5.5, Phase 1): a
// directory only if it has no entries then, counting those with a delete
// pending that other opens keep. Otherwise the close succeeds and the
// directory stays.
func (o *open) deletesOnClose() bool {
	if !o.isDir || o.currentStream() != "" {
		return true
	}
	entries, err := o.f.ReadDir()
	if err != nil || len(entries) > 0 {
		o.d.log.Debug("delete on close of a directory not empty", "share", o.d.name, "file", o.currentName(), "err", err)
		return false
	}
	return true
}

// Close implements server.Handle ([MS-SMB2] 3.3.5.10).
func (o *open) Close(postQuery bool) (*smb2.CloseResponse, error) {
	o.mu.Lock()
	del, name, renamed := o.deleteOnClose, o.name, o.renamed // SET_INFO rename changes them under mu
	o.mu.Unlock()
	del = del && o.deletesOnClose()
	if !del {
		o.closeWriteTime() // writetime.go
	}
	var resp *smb2.CloseResponse
	if postQuery && !del {
		resp = o.closeAttributes()
	}
	if k := o.d.resume.Load(); k != nil {
		k.forgetOpen(o)
	}
	o.mu.Lock()
	if o.watch != nil {
		o.d.notify.remove(o.watch)
	}
	o.mu.Unlock()
	if del && o.so != nil {
		o.d.table.MarkDeletePending(o.so, true)
		o.d.table.BreakHandle(nil, o.so.Key, o.so, nil) // others' cached handles keep the file
		if o.isDir {
			o.d.notify.deletePending(name) // notify.go: waits on it end
		}
	}
	o.releaseLocks() // byte-range locks go with the open ([MS-FSA] 2.1.5.4)
	stream := o.currentStream()
	parent := o.parentLease() // dirlease.go: taken before drop ends the lease
	delStream, delFile := o.drop(del)
	err := o.f.Close()
	defer o.closedEntry(name, parent, delFile)
	deleted := o.deleteClosed(name, stream, delStream, delFile)
	o.postClosed(renamed, deleted) // notify.go
	return resp, err
}

// closeAttributes is the CLOSE response with the file's attributes
// (SMB2_CLOSE_FLAG_POSTQUERY_ATTRIB), nil if they cannot be read.
func (o *open) closeAttributes() *smb2.CloseResponse {
	fi, err := o.f.Stat()
	if err != nil {
		return nil
	}
	return &smb2.CloseResponse{
		Flags:          smb2.ClosePostQueryAttrib,
		CreationTime:   fscc.Filetime(fi.CreationTime),
		LastAccessTime: fscc.Filetime(fi.LastAccessTime),
		LastWriteTime:  fscc.Filetime(fi.LastWriteTime),
		ChangeTime:     fscc.Filetime(fi.ChangeTime),
		AllocationSize: uint64(fi.AllocationSize),
		EndOfFile:      uint64(fi.Size),
		FileAttributes: fi.Attributes,
	}
}

// deleteClosed deletes what a close leaves to delete: the last open of a
// stream or file with a delete pending deletes it ([MS-FSA] 2.1.5.5); the
// file goes with all its streams. It reports whether the file is gone.
func (o *open) deleteClosed(name, stream string, delStream, delFile bool) bool {
	var err error
	switch {
	case delFile:
		err = o.d.fs.Remove(name)
	case delStream:
		err = o.remove(name) // stream.go
	default:
		return false
	}
	switch {
	case err != nil:
		o.d.log.Debug("delete on close failed", "share", o.d.name, "file", name, "err", err)
		return false
	case delFile:
		o.d.notify.post(actionRemoved, name, nameFilter(o.isDir))
		return true
	}
	o.d.notify.post(actionRemovedStream, name+":"+stream, smb2.FileNotifyChangeStreamName) // stream.go
	return false
}

// drop takes the open out of the open table and reports whether its
// close deletes its stream or its whole file; an open never admitted
// deletes what it names if del.
func (o *open) drop(del bool) (deleteStream, deleteFile bool) {
	if o.so == nil {
		named := o.currentStream() != ""
		return del && named, del && !named
	}
	return o.d.table.Drop(o.so)
}

// release takes the open out of the open table; it reports whether it was
// the file's last open and whether a delete is pending.
func (o *open) release() (last, deletePending bool) {
	if o.so == nil {
		return true, false
	}
	return o.d.table.Remove(o.so)
}

// AckOplock takes the client's acknowledgment of an oplock break
// ([MS-SMB2] 3.3.5.22.1).
func (o *open) AckOplock(level uint8) (uint8, error) {
	if o.so == nil || !o.d.table.Ack(o.so, level) {
		return 0, smb2.StatusInvalidOplockProtocol
	}
	return o.d.table.Oplock(o.so), nil
}

func (o *open) need(mask uint32) error {
	if o.access&mask == 0 {
		return smb2.StatusAccessDenied
	}
	return nil
}

// setPosition records the current byte offset, as FilePositionInformation
// reports it after a READ or WRITE.
func (o *open) setPosition(p int64) {
	o.mu.Lock()
	o.position = p
	o.mu.Unlock()
}

// Flush handles SMB2 FLUSH ([MS-SMB2] 3.3.5.11): it flushes this node's
// descriptor; the engine has the other nodes that wrote through the open
// flush theirs (server/remotefile.go). A persistent open's WRITEs were
// written through where they were written (write.go), which is why the
// spec lets its FLUSH succeed at once; flushing again costs little. CLOSE
// ([MS-SMB2] 3.3.5.10) promises no flush, persistent or not.
func (o *open) Flush(r *server.Request) error {
	if err := o.need(smb2.FileWriteData | smb2.FileAppendData); err != nil {
		return err
	}
	if err := o.f.Sync(); err != nil {
		return err
	}
	o.flushWriteTime() // writetime.go: a pending LastWriteTime update is done
	return nil
}

// nameFilter is the CHANGE_NOTIFY filter bit for adding or removing a name.
func nameFilter(isDir bool) uint32 {
	if isDir {
		return smb2.FileNotifyChangeDirName
	}
	return smb2.FileNotifyChangeFileName
}
