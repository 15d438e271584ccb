package share

import (
	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
)

// WriteRange makes the checks of an SMB2 WRITE ([MS-SMB2] 3.3.5.13): the
// open's access, the offset (the end of file for an append-only open) and
// the byte-range locks of the range; it breaks the read caching of the
// file's other opens. The engine writes the data where it says
// (server.FileWriter).
func (o *open) WriteRange(r *server.Request, req *smb2.WriteRequest) (server.WriteRange, error) {
	if o.isDir {
		return server.WriteRange{}, smb2.StatusInvalidDeviceRequest
	}
	if err := o.need(smb2.FileWriteData | smb2.FileAppendData); err != nil {
		return server.WriteRange{}, err
	}
	off := int64(req.Offset)
	if o.access&smb2.FileWriteData == 0 {
		// FILE_APPEND_DATA alone: every write goes to the end of file.
		fi, err := o.f.Stat()
		if err != nil {
			return server.WriteRange{}, err
		}
		off = fi.Size
	} else if off < 0 {
		return server.WriteRange{}, smb2.StatusInvalidParameter
	}
	if req.Length == 0 {
		return server.WriteRange{}, nil
	}
	if err := o.checkLocks(uint64(off), uint64(req.Length), true); err != nil {
		return server.WriteRange{}, err
	}
	if o.so != nil {
		o.d.table.BreakRead(o.so.Key, o.so)
	}
	o.beforeWrite() // writetime.go
	return server.WriteRange{File: o.f, Off: off, N: int(req.Length), Sync: o.writesThrough(req)}, nil
}

// writesThrough reports whether the WRITE req reaches stable storage
// before it is answered ([MS-SMB2] 3.3.5.13): it asks for it
// (SMB2_WRITEFLAG_WRITE_THROUGH), or the open was made with
// FILE_WRITE_THROUGH (or has it in its mode), or is persistent. The
// engine flushes the descriptor that wrote it (server.WriteRange.Sync).
func (o *open) writesThrough(req *smb2.WriteRequest) bool {
	return req.Flags&smb2.WriteFlagWriteThrough != 0 || o.writeThrough.Load() || o.currentMode()&fscc.FileWriteThrough != 0
}

// WriteDone finishes a WRITE that wrote n bytes at off (and flushed
// them, when write-through): it records the position and reports the
// change.
func (o *open) WriteDone(req *smb2.WriteRequest, off int64, n int) error {
	o.setPosition(off + int64(n))
	if n > 0 {
		o.afterWrite() // writetime.go: the file keeps the LastWriteTime it showed
	}
	if !o.written.Load() { // one store per open, not per WRITE
		o.written.Store(true)
	}
	o.d.notify.post(actionModified, o.currentName(), smb2.FileNotifyChangeLastWrite|smb2.FileNotifyChangeSize)
	return nil
}
