package share

import (
	"time"

	"context"
	"errors"
	"io/fs"
	"strings"
	"syscall"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
	"github.com/smbcluster/smbcluster/node/state"
	"github.com/smbcluster/smbcluster/node/vfs"
)

const (
	validCreateOptions = 0x00ffffff
	invalidAccessBits  = 0x0ce0fe00 // reserved bits of the access mask
	validAttributes    = 0x00007fb7
	writeAccess        = smb2.FileWriteData | smb2.FileAppendData | smb2.FileWriteEA |
		smb2.FileWriteAttributes | smb2.Delete | smb2.WriteDAC | smb2.WriteOwner | smb2.FileDeleteChild
)

// Create handles SMB2 CREATE on a disk share ([MS-SMB2] 3.3.5.9, [MS-FSA]
// 2.1.5.1). It starts again when the file it waited for went away
// meanwhile (goneWhileWaiting).
func (d *Disk) Create(r *server.Request, req *smb2.CreateRequest) (server.Handle, *smb2.CreateResponse, error) {
	for {
		h, resp, err := d.create(r, req)
		if err != errStartAgain {
			return h, resp, err
		}
	}
}

// errStartAgain: the file a CREATE opened is no longer the name's after
// the CREATE waited for a break; the CREATE starts again.
var errStartAgain = errors.New("share: the file changed while the CREATE waited")

// create serves a CREATE in phases: the request (name, access), the file
// (the disposition on the vfs), the open's admission (authorization,
// share modes, oplock or lease), the data (truncation, create contexts)
// and the answer. Once the file is open one deferred cleanup undoes what
// a failing phase leaves: the admission, then the file.
func (d *Disk) create(r *server.Request, req *smb2.CreateRequest) (_ server.Handle, _ *smb2.CreateResponse, err error) {
	pn, err := d.createName(req)
	if err != nil {
		return nil, nil, err
	}
	if pn.stream != "" {
		return d.createStream(r, req, pn) // stream.go
	}
	access, err := d.createAccess(req, pn)
	if err != nil {
		return nil, nil, err
	}
	o, action, truncate, err := d.open(pn.name, req, access)
	if err != nil {
		return nil, nil, err
	}
	admitted := false
	defer func() {
		if err != nil {
			if admitted {
				o.release()
			}
			o.f.Close()
			if action == smb2.FileCreated && !admitted && !othersMayHold(err) {
				// A CREATE refused before its open was admitted (a lease
				// key in use on another file, [MS-SMB2] 3.3.5.9.8, an
				// access check) leaves no file or directory behind, as
				// on a server that checks before it creates: else a
				// later CREATE of the name finds it (smbtorture
				// smb2.lease.request run twice on one share: the
				// directory its refused CREATE made).
				d.fs.Remove(pn.name)
			}
		}
	}()
	fi, err := o.f.Stat()
	if err != nil {
		return nil, nil, err
	}
	o.isDir = fi.IsDir
	if err := d.authorize(r, o, req, action); err != nil { // access.go
		return nil, nil, err
	}
	oplock, lease, err := d.admit(r, o, fi, req)
	if err != nil {
		return nil, nil, err
	}
	admitted = true
	if r.Async() && action != smb2.FileCreated && d.goneWhileWaiting(pn.name, fi) { // durable.go
		return nil, nil, errStartAgain
	}
	if fi, err = o.settleData(req, action, truncate, fi); err != nil {
		return nil, nil, err
	}
	resp := d.createResponse(r, req, o, fi, action, oplock, lease)
	if action == smb2.FileCreated {
		d.notify.post(actionAdded, o.name, nameFilter(o.isDir))
	}
	if action != smb2.FileOpened {
		o.changedEntry() // dirlease.go
	}
	return o, resp, nil
}

// othersMayHold reports whether a CREATE refused with err may have been
// refused for another open of the file it created: a sharing violation or
// a delete pending is another open's, admitted between this CREATE's
// making the file and its admission (two CREATEs of a new name at once,
// on two nodes); an owner that did not answer (STATUS_IO_TIMEOUT, no
// status at all) may hold such an open. Removing the file then would
// unlink it under that open: the next CREATE of the name makes another
// file, which the open's share modes do not cover (the robustness
// suite's history: an exclusive open and a shared one held at once).
func othersMayHold(err error) bool {
	var st smb2.Status
	return errors.Is(err, smb2.StatusSharingViolation) || errors.Is(err, smb2.StatusDeletePending) ||
		errors.Is(err, smb2.StatusIOTimeout) || !errors.As(err, &st)
}

// createName checks the request and parses the name it opens.
func (d *Disk) createName(req *smb2.CreateRequest) (parsedName, error) {
	if err := checkCreate(req); err != nil {
		return parsedName{}, err
	}
	pn, err := parseName(req.Name)
	if err != nil {
		return parsedName{}, err
	}
	pn.name = d.caseName(pn.name) // casefold.go
	return pn, nil
}

// createAccess is the access a CREATE of a file's data asks for, refused
// when the share is read-only and it would write.
func (d *Disk) createAccess(req *smb2.CreateRequest, pn parsedName) (uint32, error) {
	if err := dataStreamOptions(req, pn); err != nil {
		return 0, err
	}
	access := d.mapGeneric(req.DesiredAccess)
	if d.readOnly && (access&writeAccess != 0 || req.CreateDisposition != smb2.FileOpen) {
		return 0, smb2.StatusAccessDenied
	}
	return access, nil
}

// settleData truncates an overwritten file, now that the share modes
// allow it, and applies the create contexts (ea.go: ExtA, SecD, AlSi); it
// returns the file's attributes after that.
func (o *open) settleData(req *smb2.CreateRequest, action uint32, truncate bool, fi vfs.FileInfo) (vfs.FileInfo, error) {
	if truncate {
		if err := o.f.Truncate(0); err != nil {
			return fi, err
		}
		// The file takes the attributes the CREATE gives, with
		// FILE_ATTRIBUTE_ARCHIVE ([MS-FSA] 2.1.5.1.2, overwrite of a
		// data file; smbtorture smb2.openattr); sparse stays a matter
		// of FSCTL_SET_SPARSE.
		attrs := req.FileAttributes&vfs.StoredAttrs&^(vfs.AttrNormal|vfs.AttrSparse|vfs.AttrDirectory) | vfs.AttrArchive
		if err := o.f.SetInfo(time.Time{}, time.Time{}, time.Time{}, time.Time{}, &attrs); err != nil {
			return fi, err
		}
		var err error
		if fi, err = o.f.Stat(); err != nil {
			return fi, err
		}
	}
	return fi, o.applyCreateContexts(req, action)
}

// createResponse is the answer to a CREATE of open o.
func (d *Disk) createResponse(r *server.Request, req *smb2.CreateRequest, o *open, fi vfs.FileInfo, action uint32, oplock uint8, lease *state.LeaseGrant) *smb2.CreateResponse {
	resp := &smb2.CreateResponse{
		OplockLevel:    oplock,
		CreateAction:   action,
		CreationTime:   fscc.Filetime(fi.CreationTime),
		LastAccessTime: fscc.Filetime(fi.LastAccessTime),
		LastWriteTime:  fscc.Filetime(fi.LastWriteTime),
		ChangeTime:     fscc.Filetime(fi.ChangeTime),
		AllocationSize: uint64(o.allocationSize(fi)), // alloc.go
		EndOfFile:      uint64(fi.Size),
		FileAttributes: fi.Attributes,
	}
	resp.Contexts = d.createContexts(r, req, o, fi)
	if lease != nil {
		resp.Contexts = append(resp.Contexts, leaseContext(lease)) // lease.go
	}
	return resp
}

// checkCreate validates the request fields ([MS-SMB2] 3.3.5.9).
func checkCreate(req *smb2.CreateRequest) error {
	switch {
	case strings.HasPrefix(req.Name, `\`):
		return smb2.StatusInvalidParameter // [MS-SMB2] 3.3.5.9: a leading separator
	case req.ImpersonationLevel > 3:
		return smb2.StatusBadImpersonationLevel
	case req.CreateDisposition > smb2.FileOverwriteIf:
		return smb2.StatusInvalidParameter
	case req.CreateOptions&^validCreateOptions != 0:
		return smb2.StatusInvalidParameter
	case req.CreateOptions&(smb2.FileDirectoryFile|smb2.FileNonDirectoryFile) == smb2.FileDirectoryFile|smb2.FileNonDirectoryFile:
		return smb2.StatusInvalidParameter
	case req.DesiredAccess&invalidAccessBits != 0:
		return smb2.StatusAccessDenied
	case req.FileAttributes&^validAttributes != 0:
		return smb2.StatusInvalidParameter
	case req.CreateOptions&smb2.FileDeleteOnClose != 0 && req.DesiredAccess&(smb2.Delete|smb2.GenericAll|smb2.MaximumAllowed) == 0:
		return smb2.StatusInvalidParameter
	case req.CreateOptions&smb2.FileDirectoryFile != 0:
		switch req.CreateDisposition {
		case smb2.FileOpen, smb2.FileCreate, smb2.FileOpenIf:
		default:
			return smb2.StatusInvalidParameter
		}
		if req.CreateOptions&0x8 != 0 { // FILE_NO_INTERMEDIATE_BUFFERING on a directory
			return smb2.StatusInvalidParameter
		}
	}
	return checkContexts(req) // contexts.go
}

// admit enters the open into the open table: share modes are checked
// against the file's other opens (after breaking their oplocks and leases,
// during which the CREATE goes async) and an oplock or lease is granted
// ([MS-SMB2] 3.3.5.9, 3.3.5.9.8, 3.3.5.9.11, [MS-FSA] 2.1.5.1.2).
// Directories get no oplock, and a lease only on a connection that
// negotiated directory leasing (dirlease.go).
func (d *Disk) admit(r *server.Request, o *open, fi vfs.FileInfo, req *smb2.CreateRequest) (uint8, *state.LeaseGrant, error) {
	o.so = &state.Open{
		Key:         state.FileKey{Volume: d.volumeID, FileID: fi.FileID},
		Name:        o.name,
		Stream:      o.currentStream(), // stream.go
		Access:      o.access,
		ShareAccess: req.ShareAccess,
	}
	if r.Open != nil {
		o.so.Breaker = r.Open
	}
	ctx := r.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	sreq := state.Request{
		Oplock: req.RequestedOplockLevel,
		Overwrite: req.CreateDisposition == smb2.FileOverwrite || req.CreateDisposition == smb2.FileOverwriteIf ||
			req.CreateDisposition == smb2.FileSupersede,
	}
	sreq.Lease, _ = leaseRequest(r, req)
	if k := req.Known(); k.Valid(smb2.CtxDurableRequestV2) && r.Session != nil {
		// The owner refuses a CreateGuid another node's open of the file
		// has (state.ErrDuplicateCreate).
		o.so.Create = state.CreateID{Client: r.Session.ClientGUID, Create: k.DurableV2.CreateGUID}
		sreq.Replay = r.Header.Flags&smb2.FlagReplayOperation != 0
	}
	sreq.NoCaching = o.isDir && !r.DirectoryLeasing()
	sreq.Directory = o.isDir
	if req.RequestedOplockLevel == smb2.OplockLevelLease || o.isDir {
		sreq.Oplock = smb2.OplockLevelNone
	}
	g, err := d.table.Admit(ctx, o.so, sreq, func() { r.GoAsync() })
	switch {
	case errors.Is(err, state.ErrSharingViolation):
		return 0, nil, smb2.StatusSharingViolation
	case errors.Is(err, state.ErrDeletePending):
		return 0, nil, smb2.StatusDeletePending
	case errors.Is(err, state.ErrLeaseKeyInUse):
		return 0, nil, smb2.StatusInvalidParameter
	case errors.Is(err, state.ErrDuplicateCreate):
		return 0, nil, smb2.StatusDuplicateObjectid
	case err != nil:
		return 0, nil, err
	case g.Lease != nil:
		return smb2.OplockLevelLease, g.Lease, nil
	}
	return g.Oplock, nil, nil
}

// open performs the disposition on the vfs and returns the open, the
// create action and whether the file must be truncated once admitted.
func (d *Disk) open(name string, req *smb2.CreateRequest, access uint32) (*open, uint32, bool, error) {
	opts := vfs.OpenOptions{
		Read:       true,
		Write:      access&(smb2.FileWriteData|smb2.FileAppendData) != 0,
		Attributes: req.FileAttributes &^ (vfs.AttrNormal | vfs.AttrSparse) & vfs.StoredAttrs, // sparse only by FSCTL_SET_SPARSE
	}
	dirWanted := req.CreateOptions&smb2.FileDirectoryFile != 0
	switch {
	case dirWanted:
		opts.Kind = vfs.DirOnly
	case req.CreateOptions&smb2.FileNonDirectoryFile != 0:
		opts.Kind = vfs.RegularOnly
	}
	if name == "" && req.CreateDisposition != smb2.FileOpen && req.CreateDisposition != smb2.FileOpenIf {
		return nil, 0, false, smb2.StatusAccessDenied // the share root cannot be created or overwritten
	}
	action := smb2.FileOpened
	switch req.CreateDisposition {
	case smb2.FileOpen:
		opts.Create = vfs.OpenExisting
	case smb2.FileCreate:
		opts.Create = vfs.CreateExclusive
	case smb2.FileOpenIf:
		opts.Create = vfs.CreateIfAbsent
	case smb2.FileOverwrite:
		opts.Create, opts.Truncate, action = vfs.OpenExisting, true, smb2.FileOverwritten
		opts.Write = true
	case smb2.FileOverwriteIf, smb2.FileSupersede:
		opts.Create, opts.Truncate, action = vfs.CreateIfAbsent, true, smb2.FileOverwritten
		if req.CreateDisposition == smb2.FileSupersede {
			action = smb2.FileSuperseded
		}
		opts.Write = true
	}
	if !opts.Truncate && opts.Write && d.maxAllowedOfReadOnly(name, req) {
		access &^= readOnlyCleared
		opts.Write = false
	}
	if opts.Truncate || opts.Write {
		if err := d.checkWritable(name, req, access, opts); err != nil {
			return nil, 0, false, err
		}
	}
	truncate := opts.Truncate
	opts.Truncate = false
	f, created, err := d.fs.Open(name, opts)
	if err != nil {
		return nil, 0, false, d.openError(name, err)
	}
	if created {
		action, truncate = smb2.FileCreated, false
	}
	o := &open{d: d, f: f, name: name, access: access, mode: req.CreateOptions & fscc.FileWriteThrough}
	if req.CreateOptions&smb2.FileDeleteOnClose != 0 {
		if err := o.requestDeleteOnClose(); err != nil {
			f.Close()
			if created { // e.g. FILE_ATTRIBUTE_READONLY: no file is left behind
				d.fs.Remove(name)
			}
			return nil, 0, false, err
		}
	}
	return o, action, truncate, nil
}

// readOnlyCleared is the access MAXIMUM_ALLOWED does not grant on a file
// with FILE_ATTRIBUTE_READONLY ([MS-FSA] 2.1.5.1.2.1).
const readOnlyCleared = smb2.FileWriteData | smb2.FileAppendData | smb2.FileDeleteChild

// maxAllowedOfReadOnly reports whether req asks for MAXIMUM_ALLOWED but
// for no write access of its own, and name is an existing file with
// FILE_ATTRIBUTE_READONLY: the open is granted what it may have but the
// writes ([MS-FSA] 2.1.5.1.2.1), not refused.
func (d *Disk) maxAllowedOfReadOnly(name string, req *smb2.CreateRequest) bool {
	if req.DesiredAccess&smb2.MaximumAllowed == 0 || d.mapGeneric(req.DesiredAccess&^smb2.MaximumAllowed)&(smb2.FileWriteData|smb2.FileAppendData) != 0 {
		return false
	}
	fi, err := d.fs.Stat(name)
	return err == nil && !fi.IsDir && fi.Attributes&vfs.AttrReadOnly != 0
}

// checkWritable refuses to write or truncate a file with the read-only
// attribute ([MS-FSA] 2.1.5.1.2.1).
func (d *Disk) checkWritable(name string, req *smb2.CreateRequest, access uint32, opts vfs.OpenOptions) error {
	fi, err := d.fs.Stat(name)
	if err != nil || fi.IsDir {
		return nil
	}
	if fi.Attributes&vfs.AttrReadOnly != 0 && (opts.Truncate || access&(smb2.FileWriteData|smb2.FileAppendData) != 0) {
		return smb2.StatusAccessDenied
	}
	// An overwrite must keep FILE_ATTRIBUTE_HIDDEN and
	// FILE_ATTRIBUTE_SYSTEM of the file it replaces ([MS-FSA] 2.1.5.1.2).
	if keep := fi.Attributes & (vfs.AttrHidden | vfs.AttrSystem); req != nil && opts.Truncate && req.FileAttributes&keep != keep { // nil: a named stream
		return smb2.StatusAccessDenied
	}
	return nil
}

func (d *Disk) openError(name string, err error) error {
	switch {
	case errors.Is(err, fs.ErrExist):
		return smb2.StatusObjectNameCollision
	case errors.Is(err, syscall.ENOTDIR):
		if fi, serr := d.fs.Stat(name); serr == nil && !fi.IsDir {
			return smb2.StatusNotADirectory
		}
		return smb2.StatusObjectPathNotFound
	case errors.Is(err, syscall.EISDIR):
		return smb2.StatusFileIsADirectory
	case errors.Is(err, fs.ErrNotExist):
		return d.notFound(name, err)
	}
	return err
}

// createContexts answers the create contexts the server supports: MxAc
// (access.go: what the file's descriptor grants) and QFid. Others are
// ignored, as [MS-SMB2] 3.3.5.9 allows.
func (d *Disk) createContexts(r *server.Request, req *smb2.CreateRequest, o *open, fi vfs.FileInfo) []smb2.CreateContext {
	var out []smb2.CreateContext
	k := req.Known()
	if k.Present(smb2.CtxQueryMaximalAccess) {
		mx := smb2.MxAcResponse{MaximalAccess: d.maximalAccess(r, o)}
		out = append(out, smb2.CreateContext{Name: "MxAc", Data: mx.Append(nil)})
	}
	if k.Present(smb2.CtxQueryOnDiskID) {
		q := smb2.QFidResponse{DiskFileID: fi.FileID, VolumeID: d.volumeID}
		out = append(out, smb2.CreateContext{Name: "QFid", Data: q.Append(nil)})
	}
	return out
}
