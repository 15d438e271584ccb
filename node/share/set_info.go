package share

import (
	"errors"
	"io/fs"
	"strings"
	"syscall"
	"time"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
	"github.com/smbcluster/smbcluster/node/state"
	"github.com/smbcluster/smbcluster/node/vfs"
)

// SetInfo handles SMB2 SET_INFO on a disk share ([MS-SMB2] 3.3.5.21).
func (o *open) SetInfo(r *server.Request, req *smb2.SetInfoRequest) error {
	switch req.InfoType {
	case smb2.InfoFile:
		if err := o.breakHandlesFor(r, req.FileInfoClass); err != nil { // lease.go
			return err
		}
		return o.setFile(req.FileInfoClass, req.Buffer)
	case smb2.InfoFilesystem:
		// Labels, quotas and object ids cannot be changed ([MS-FSA] 2.1.5.16).
		return smb2.StatusNotSupported
	case smb2.InfoSecurity:
		return o.setSecurity(tokenOf(r.Session), req)
	case smb2.InfoQuota:
		return smb2.StatusNotSupported
	}
	return smb2.StatusInvalidParameter
}

// setFile applies one file information class ([MS-SMB2] 3.3.5.21.1,
// [MS-FSA] 2.1.5.15).
func (o *open) setFile(class uint8, b []byte) error {
	switch class {
	case fscc.FileBasicInformation:
		return o.setBasic(b)
	case fscc.FileRenameInformation:
		var ri fscc.RenameInformation
		if err := ri.Decode(b); err != nil {
			return infoError(err)
		}
		return o.rename(ri.FileName, ri.RootDirectory, ri.ReplaceIfExists)
	case fscc.FileRenameInformationEx:
		var ri fscc.RenameInformationEx
		if err := ri.Decode(b); err != nil {
			return infoError(err)
		}
		return o.rename(ri.FileName, ri.RootDirectory, ri.Flags&fscc.FileRenameReplaceIfExists != 0)
	case fscc.FileLinkInformation, fscc.FileLinkInformationEx:
		return smb2.StatusNotSupported // hard links are not offered
	case fscc.FileDispositionInformation:
		var di fscc.DispositionInformation
		if err := di.Decode(b); err != nil {
			return infoError(err)
		}
		return o.setDisposition(di.DeletePending)
	case fscc.FileDispositionInformationEx:
		var di fscc.DispositionInformationEx
		if err := di.Decode(b); err != nil {
			return infoError(err)
		}
		return o.setDisposition(di.Flags&fscc.FileDispositionDelete != 0)
	case fscc.FileEndOfFileInformation:
		var ei fscc.EndOfFileInformation
		if err := ei.Decode(b); err != nil {
			return infoError(err)
		}
		return o.setEndOfFile(ei.EndOfFile)
	case fscc.FileAllocationInformation:
		var ai fscc.AllocationInformation
		if err := ai.Decode(b); err != nil {
			return infoError(err)
		}
		return o.setAllocation(ai.AllocationSize)
	}
	return o.setFileMisc(class, b)
}

// setFileMisc applies the classes that change no file data.
func (o *open) setFileMisc(class uint8, b []byte) error {
	switch class {
	case fscc.FilePositionInformation:
		var pi fscc.PositionInformation
		if err := pi.Decode(b); err != nil {
			return infoError(err)
		}
		o.mu.Lock()
		o.position = pi.CurrentByteOffset
		o.mu.Unlock()
		return nil
	case fscc.FileModeInformation:
		// Kept for queries; the I/O path ignores it ([MS-FSA] 2.1.5.15.9:
		// only FILE_WRITE_THROUGH and FILE_SEQUENTIAL_ONLY change).
		var mi fscc.ModeInformation
		if err := mi.Decode(b); err != nil {
			return infoError(err)
		}
		const settable = fscc.FileWriteThrough | fscc.FileSequentialOnly
		o.mu.Lock()
		o.mode = o.mode&^settable | mi.Mode&settable
		o.mu.Unlock()
		return nil
	case fscc.FileValidDataLengthInformation:
		var vi fscc.ValidDataLengthInformation
		if err := vi.Decode(b); err != nil {
			return infoError(err)
		}
		return o.setValidDataLength(vi.ValidDataLength)
	case fscc.FileFullEaInformation:
		return o.setEAs(b) // ea.go
	case fscc.FileShortNameInformation:
		return smb2.StatusNotSupported
	}
	return smb2.StatusInvalidInfoClass
}

// setBasic applies FILE_BASIC_INFORMATION ([MS-FSA] 2.1.5.15.1): a time
// of 0, -1 or -2 leaves the time alone; attributes 0 leave them alone.
func (o *open) setBasic(b []byte) error {
	if err := o.need(smb2.FileWriteAttributes); err != nil {
		return err
	}
	var bi fscc.BasicInformation
	if err := bi.Decode(b); err != nil {
		return infoError(err)
	}
	var set *uint32
	if bi.FileAttributes != 0 {
		a := bi.FileAttributes
		if a&vfs.AttrDirectory != 0 && !o.isDir || a&fscc.FileAttributeTemporary != 0 && o.isDir {
			return smb2.StatusInvalidParameter
		}
		fi, err := o.f.Stat()
		if err != nil {
			return err
		}
		// FILE_ATTRIBUTE_SPARSE_FILE changes only by FSCTL_SET_SPARSE.
		a = a&vfs.StoredAttrs&^vfs.AttrSparse | fi.Attributes&vfs.AttrSparse
		set = &a
	}
	w := o.setBasicWriteTime(bi.LastWriteTime) // writetime.go: also flushes a pending update
	c, a, ch := setTime(bi.CreationTime), setTime(bi.LastAccessTime), setTime(bi.ChangeTime)
	if set == nil && c.IsZero() && a.IsZero() && w.IsZero() && ch.IsZero() {
		return nil
	}
	if err := o.f.SetInfo(c, a, w, ch, set); err != nil {
		return err
	}
	o.postModified(basicFilter(set != nil, !c.IsZero(), !a.IsZero(), !w.IsZero(), !ch.IsZero())) // notify.go
	o.changedEntry()
	return nil
}

// setTime converts a FILETIME of SET_INFO; the special values give the
// zero time (unchanged).
func setTime(ft uint64) time.Time {
	switch ft {
	case fscc.FiletimeUnchanged, fscc.FiletimeStopUpdating, fscc.FiletimeResumeUpdating:
		return time.Time{}
	}
	return fscc.TimeOf(ft)
}

// setDisposition marks or unmarks the file for deletion on close
// ([MS-FSA] 2.1.5.15.3).
func (o *open) setDisposition(del bool) error {
	if err := o.need(smb2.Delete); err != nil {
		return err
	}
	if err := o.setDeleteOnClose(del); err != nil {
		return err
	}
	if o.so != nil {
		o.d.table.MarkDeletePending(o.so, del)
		if del {
			o.d.table.BreakHandle(nil, o.so.Key, o.so, nil) // lease.go
		}
	}
	return nil
}

// setEndOfFile applies FILE_END_OF_FILE_INFORMATION ([MS-FSA] 2.1.5.15.4).
func (o *open) setEndOfFile(size int64) error {
	if o.isDir {
		return smb2.StatusInvalidParameter
	}
	if err := o.need(smb2.FileWriteData); err != nil {
		return err
	}
	if o.so != nil {
		o.d.table.BreakRead(o.so.Key, o.so) // lease.go: truncation breaks read caching
	}
	if err := o.f.Truncate(size); err != nil {
		return truncErr(err)
	}
	o.resized()                                                                // writetime.go
	o.postModified(smb2.FileNotifyChangeSize | smb2.FileNotifyChangeLastWrite) // notify.go
	return nil
}

// setAllocation applies FILE_ALLOCATION_INFORMATION ([MS-FSA]
// 2.1.5.15.2): an allocation below the end of file truncates the file.
func (o *open) setAllocation(size int64) error {
	if o.isDir {
		return smb2.StatusInvalidParameter
	}
	if err := o.need(smb2.FileWriteData); err != nil {
		return err
	}
	fi, err := o.f.Stat()
	if err != nil {
		return err
	}
	if o.so != nil {
		o.d.table.BreakRead(o.so.Key, o.so) // lease.go: any allocation change breaks read caching
	}
	if size < fi.Size {
		err = o.f.Truncate(size)
	} else {
		err = o.f.Allocate(size)
	}
	if err != nil {
		return truncErr(err)
	}
	o.setAllocationHint(size) // alloc.go: what the open reports
	o.resized()               // writetime.go
	return nil
}

// setValidDataLength accepts FILE_VALID_DATA_LENGTH_INFORMATION up to the
// end of file ([MS-FSA] 2.1.5.15.13); data is always valid here.
func (o *open) setValidDataLength(n int64) error {
	if o.isDir {
		return smb2.StatusInvalidParameter
	}
	if err := o.need(smb2.FileWriteData); err != nil {
		return err
	}
	fi, err := o.f.Stat()
	if err != nil {
		return err
	}
	if n > fi.Size {
		return smb2.StatusInvalidParameter
	}
	return nil
}

// truncErr maps a size the filesystem refuses to STATUS_DISK_FULL, as
// Windows answers for a size beyond the volume's limits.
func truncErr(err error) error {
	if errors.Is(err, syscall.EFBIG) || errors.Is(err, syscall.EINVAL) {
		return smb2.StatusDiskFull
	}
	return err
}

// rename applies FILE_RENAME_INFORMATION ([MS-SMB2] 3.3.5.21.1,
// [MS-FSA] 2.1.5.15.12): the target is relative to the share root.
func (o *open) rename(target string, root uint64, replace bool) error {
	if err := o.need(smb2.Delete); err != nil {
		return err
	}
	if root != 0 {
		return smb2.StatusInvalidParameter
	}
	if len(target) > 0 && target[0] == ':' {
		return o.renameStream(target, replace) // stream.go
	}
	pn, err := parseName(target)
	if err != nil {
		return err
	}
	// The rename opens the target's directory first, even for a target
	// it then refuses ([MS-FSA] 2.1.5.15.12).
	if err := o.d.checkAddTo(parentOf(pn.name)); err != nil {
		return err
	}
	if pn.stream != "" || pn.name == "" {
		return smb2.StatusObjectNameInvalid
	}
	if o.currentStream() != "" {
		return smb2.StatusInvalidParameter // a stream is renamed to a stream only
	}
	pn.name = o.d.renameTarget(pn.name, o.currentName()) // casefold.go
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.name == "" {
		return smb2.StatusAccessDenied // the share root
	}
	if o.deleteOnClose {
		return smb2.StatusDeletePending
	}
	if pn.name == o.name {
		return nil
	}
	if err := o.d.checkRename(o); err != nil {
		return err
	}
	if replace {
		if err := o.d.checkReplace(o, pn.name); err != nil {
			return err
		}
	}
	if err := o.d.fs.Rename(o.name, pn.name, replace); err != nil {
		return o.d.renameError(pn.name, replace, err)
	}
	old := o.name
	o.name = pn.name
	if o.so != nil {
		o.d.table.Renamed(o.so.Key, pn.name)
	}
	o.postRenameLocked(old, pn.name) // notify.go
	o.renamedEntry(old, pn.name)
	return nil
}

// checkRename refuses a rename that the file's other opens forbid (they
// did not share delete) or a directory rename with files open below it
// ([MS-FSA] 2.1.5.15.11).
func (d *Disk) checkRename(o *open) error {
	if o.so == nil {
		return nil
	}
	if err := d.table.CheckRename(o.so); err != nil {
		return smb2.StatusSharingViolation
	}
	if o.isDir && d.table.HasOpenBelow(o.name) {
		return smb2.StatusAccessDenied
	}
	return d.checkAddTo(parentOf(o.name))
}

// checkReplace refuses a rename that would replace a file another open
// has open: STATUS_ACCESS_DENIED ([MS-FSCC] 2.4.42: "the target file was
// open and ReplaceIfExists is nonzero"), as Windows and Samba answer —
// the opener's handle would name a file no longer in the namespace. An
// open of the target anywhere in the cluster counts (the file's owner is
// asked, as for a sharing check), but one that reads or sets attributes
// only does not ([MS-FSA] 2.1.5.1.2: such an open takes part in no
// sharing check). A target that is the renamed file itself (a change of
// case) is no replacement.
func (d *Disk) checkReplace(o *open, target string) error {
	fi, err := d.fs.Stat(target)
	if err != nil {
		return nil // no target: the rename says what there is to say
	}
	key := state.FileKey{Volume: d.volumeID, FileID: fi.FileID}
	if o.so != nil && key == o.so.Key {
		return nil
	}
	const anyUse = smb2.FileReadData | smb2.FileWriteData | smb2.Delete
	if d.table.CheckAccess(key, anyUse, 0) != nil {
		return smb2.StatusAccessDenied
	}
	return nil
}

// checkAddTo refuses a rename into directory dir when dir's opens do not
// let it be opened for FILE_ADD_FILE sharing read and write, as Windows
// opens it ([MS-FSA] 2.1.5.15.12: DestinationDirectory).
func (d *Disk) checkAddTo(dir string) error {
	if fi, err := d.fs.Stat(dir); err == nil {
		key := state.FileKey{Volume: d.volumeID, FileID: fi.FileID}
		if d.table.CheckAccess(key, smb2.FileAddFile, smb2.FileShareRead|smb2.FileShareWrite) != nil {
			return smb2.StatusSharingViolation
		}
	}
	return nil
}

// parentOf returns the vfs name of name's directory ("" for the root).
func parentOf(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[:i]
	}
	return ""
}

// renameError maps a failed vfs rename to what Windows answers.
func (d *Disk) renameError(target string, replace bool, err error) error {
	switch {
	case errors.Is(err, fs.ErrExist):
		return smb2.StatusObjectNameCollision
	case errors.Is(err, syscall.EACCES) && replace:
		return smb2.StatusAccessDenied // the target is a directory
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return d.notFound(target, err)
	case errors.Is(err, syscall.EINVAL):
		return smb2.StatusInvalidParameter // into its own subtree
	}
	return err
}
