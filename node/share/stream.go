package share

import (
	"errors"
	"io/fs"
	"strings"
	"syscall"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
	"github.com/smbcluster/smbcluster/node/smb2/utf16le"
	"github.com/smbcluster/smbcluster/node/vfs"
)

// Alternate data streams ([MS-FSCC] 2.1.5.1, [MS-FSA] 2.1.5.1.2.1): a
// CREATE of "file:stream[:$DATA]" opens a named stream of file through the
// backend's vfs.StreamOpener. The open's name stays the file's; its stream
// field names the stream. Stream names are case-insensitive like file
// names. Stream opens enter the open table under their file's key with
// the stream named: share modes, oplocks and leases are per stream, but a
// pending delete of the file holds for all its streams and the file goes
// only when the last open of any of its streams closes ([MS-FSA] 2.1.5.1.2,
// 2.1.5.4).

// actionRemovedStream is FILE_ACTION_REMOVED_STREAM ([MS-FSCC] 2.7.1).
const actionRemovedStream = 7

// dataStreamOptions applies an explicit "::$DATA" suffix: the default
// data stream of a directory does not exist ([MS-FSA] 2.1.5.1).
func dataStreamOptions(req *smb2.CreateRequest, pn parsedName) error {
	if !pn.dataStream {
		return nil
	}
	if req.CreateOptions&smb2.FileDirectoryFile != 0 {
		return smb2.StatusNotADirectory
	}
	req.CreateOptions |= smb2.FileNonDirectoryFile
	return nil
}

// streamOpener returns the share's stream backend, or nil.
func (d *Disk) streamOpener() vfs.StreamOpener {
	so, _ := d.fs.(vfs.StreamOpener)
	return so
}

// createStream handles CREATE of a named stream.
func (d *Disk) createStream(r *server.Request, req *smb2.CreateRequest, pn parsedName) (server.Handle, *smb2.CreateResponse, error) {
	so := d.streamOpener()
	if so == nil {
		return nil, nil, smb2.StatusObjectNameNotFound
	}
	if req.CreateOptions&smb2.FileDirectoryFile != 0 {
		return nil, nil, smb2.StatusNotADirectory // a stream is never a directory
	}
	access := d.mapGeneric(req.DesiredAccess)
	if d.readOnly && (access&writeAccess != 0 || req.CreateDisposition != smb2.FileOpen) {
		return nil, nil, smb2.StatusAccessDenied
	}
	o, action, truncate, err := d.openStream(so, pn, req, access)
	if err != nil {
		return nil, nil, err
	}
	base, err := d.fs.Stat(pn.name)
	if err != nil {
		o.f.Close()
		return nil, nil, d.openError(pn.name, err)
	}
	oplock, lease, err := d.admit(r, o, base, req) // create.go: keyed by the file, per stream
	if err != nil {
		o.f.Close()
		return nil, nil, err
	}
	fi, err := o.streamData(truncate)
	if err != nil {
		o.release()
		o.f.Close()
		return nil, nil, err
	}
	resp := &smb2.CreateResponse{
		OplockLevel:    oplock,
		CreateAction:   action,
		CreationTime:   fscc.Filetime(fi.CreationTime),
		LastAccessTime: fscc.Filetime(fi.LastAccessTime),
		LastWriteTime:  fscc.Filetime(fi.LastWriteTime),
		ChangeTime:     fscc.Filetime(fi.ChangeTime),
		AllocationSize: uint64(fi.AllocationSize),
		EndOfFile:      uint64(fi.Size),
		FileAttributes: attrs(fi),
	}
	resp.Contexts = d.createContexts(r, req, o, fi)
	if lease != nil {
		resp.Contexts = append(resp.Contexts, leaseContext(lease)) // lease.go
	}
	return o, resp, nil
}

// streamData truncates an admitted stream open when its disposition
// overwrites (only once share modes allowed it) and returns its stat.
func (o *open) streamData(truncate bool) (vfs.FileInfo, error) {
	if truncate {
		if err := o.f.Truncate(0); err != nil {
			return vfs.FileInfo{}, err
		}
		o.d.table.BreakRead(o.so.Key, o.so)
	}
	return o.f.Stat()
}

// openStream performs the disposition on a stream, creating the file
// first when the disposition allows and it is missing. It reports
// whether the stream must be truncated once admitted.
func (d *Disk) openStream(so vfs.StreamOpener, pn parsedName, req *smb2.CreateRequest, access uint32) (*open, uint32, bool, error) {
	opts, action := streamOptions(req.CreateDisposition)
	opts.Read = true
	opts.Write = opts.Write || access&(smb2.FileWriteData|smb2.FileAppendData) != 0
	baseCreated, err := d.streamBase(pn.name, req, opts.Create)
	if err != nil {
		return nil, 0, false, err
	}
	if opts.Truncate || opts.Write {
		if err := d.checkWritable(pn.name, nil, access, opts); err != nil {
			return nil, 0, false, err
		}
	}
	truncate := opts.Truncate
	opts.Truncate = false
	stream := d.streamCase(so, pn.name, pn.stream)
	f, created, err := so.OpenStream(pn.name, stream, opts)
	if err != nil {
		if baseCreated {
			d.fs.Remove(pn.name)
		}
		return nil, 0, false, streamError(err)
	}
	if created {
		action, truncate = smb2.FileCreated, false
	}
	o := &open{d: d, f: f, name: pn.name, stream: stream, access: access, mode: req.CreateOptions & fscc.FileWriteThrough}
	if err := o.applyCreateContexts(req, action); err != nil {
		f.Close()
		return nil, 0, false, err
	}
	if req.CreateOptions&smb2.FileDeleteOnClose != 0 {
		if err := o.setDeleteOnClose(true); err != nil {
			f.Close()
			return nil, 0, false, err
		}
	}
	return o, action, truncate, nil
}

// streamOptions maps a CreateDisposition to vfs options and the action
// reported when the stream already existed.
func streamOptions(disp uint32) (vfs.OpenOptions, uint32) {
	switch disp {
	case smb2.FileCreate:
		return vfs.OpenOptions{Create: vfs.CreateExclusive}, smb2.FileCreated
	case smb2.FileOpenIf:
		return vfs.OpenOptions{Create: vfs.CreateIfAbsent}, smb2.FileOpened
	case smb2.FileOverwrite:
		return vfs.OpenOptions{Create: vfs.OpenExisting, Truncate: true, Write: true}, smb2.FileOverwritten
	case smb2.FileOverwriteIf:
		return vfs.OpenOptions{Create: vfs.CreateIfAbsent, Truncate: true, Write: true}, smb2.FileOverwritten
	case smb2.FileSupersede:
		return vfs.OpenOptions{Create: vfs.CreateIfAbsent, Truncate: true, Write: true}, smb2.FileSuperseded
	}
	return vfs.OpenOptions{Create: vfs.OpenExisting}, smb2.FileOpened
}

// streamBase makes sure the file a stream belongs to exists, creating an
// empty regular file when the disposition may create; it reports whether
// it did.
func (d *Disk) streamBase(name string, req *smb2.CreateRequest, mode vfs.CreateMode) (bool, error) {
	if _, err := d.fs.Stat(name); err == nil {
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) || mode == vfs.OpenExisting {
		return false, d.openError(name, err)
	}
	f, created, err := d.fs.Open(name, vfs.OpenOptions{
		Create: vfs.CreateIfAbsent, Kind: vfs.RegularOnly,
		Attributes: req.FileAttributes &^ (vfs.AttrNormal | vfs.AttrSparse) & vfs.StoredAttrs,
	})
	if err != nil {
		return false, d.openError(name, err)
	}
	f.Close()
	return created, nil
}

// streamCase returns the stored spelling of stream on name, or stream.
func (d *Disk) streamCase(so vfs.StreamOpener, name, stream string) string {
	list, err := so.Streams(name)
	if err != nil {
		return stream
	}
	for _, s := range list {
		if s.Name == stream {
			return stream
		}
	}
	for _, s := range list {
		if strings.EqualFold(s.Name, stream) {
			return s.Name
		}
	}
	return stream
}

// streamError maps a failed stream open.
func streamError(err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return smb2.StatusObjectNameNotFound
	case errors.Is(err, fs.ErrExist):
		return smb2.StatusObjectNameCollision
	case errors.Is(err, syscall.ENAMETOOLONG), errors.Is(err, syscall.EINVAL):
		return smb2.StatusObjectNameInvalid
	case errors.Is(err, errors.ErrUnsupported), errors.Is(err, syscall.ENOTSUP):
		return smb2.StatusObjectNameNotFound
	}
	return err
}

// remove deletes what a delete-on-close open names: its stream, or the
// file with its streams.
func (o *open) remove(name string) error {
	if stream := o.currentStream(); stream != "" {
		if so := o.d.streamOpener(); so != nil {
			return so.RemoveStream(name, stream)
		}
	}
	return o.d.fs.Remove(name)
}

// streamList is FILE_STREAM_INFORMATION of the open's file ([MS-FSCC]
// 2.4.43): "::$DATA" for a file, then ":name:$DATA" for each named stream.
func (o *open) streamList(fi vfs.FileInfo) (fscc.StreamInformation, error) {
	var out fscc.StreamInformation
	name := o.currentName()
	base := fi
	if o.currentStream() != "" {
		b, err := o.d.fs.Stat(name)
		if err != nil {
			return nil, err
		}
		base = b
	}
	if !base.IsDir {
		out = append(out, fscc.StreamEntry{Name: "::$DATA", Size: base.Size, AllocationSize: base.AllocationSize})
	}
	so := o.d.streamOpener()
	if so == nil {
		return out, nil
	}
	list, err := so.Streams(name)
	if err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return nil, err
	}
	for _, s := range list {
		out = append(out, fscc.StreamEntry{Name: ":" + s.Name + ":$DATA", Size: s.Size, AllocationSize: (s.Size + 4095) &^ 4095})
	}
	return out, nil
}

// renameStream applies FILE_RENAME_INFORMATION with a target
// ":name[:$DATA]" ([MS-FSA] 2.1.5.15.12.1): the open's named stream takes
// the new name, or with "::$DATA" becomes the file's unnamed data stream.
// A target that exists must be replaced, unopened and empty. The stream's
// opens follow it (vfs.StreamOpener.RenameStream).
func (o *open) renameStream(target string, replace bool) error {
	stream, err := parseStreamTarget(target)
	if err != nil {
		return err
	}
	if o.isDir {
		return smb2.StatusInvalidParameter // a directory stream is not renamed
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	from := o.streamLocked()
	if stream == "" && from != "" {
		if fi, err := o.d.fs.Stat(o.name); err != nil || fi.IsDir {
			return smb2.StatusInvalidParameter // a directory has no unnamed data stream
		}
	}
	if strings.EqualFold(stream, from) {
		return nil
	}
	so := o.d.streamOpener()
	if so == nil || from == "" {
		return smb2.StatusNotSupported // the unnamed data stream keeps its place here
	}
	stream, err = o.streamTarget(so, stream, replace)
	if err != nil {
		return err
	}
	if err := so.RenameStream(o.name, from, stream, replace); err != nil {
		return streamError(err)
	}
	if o.so != nil {
		o.d.table.RenamedStream(o.so.Key, from, stream)
	}
	o.stream = stream
	return nil
}

// parseStreamTarget parses the target of a stream rename, ":name[:type]"
// ([MS-FSA] 2.1.5.15.12.1); "" is the unnamed data stream.
func parseStreamTarget(target string) (string, error) {
	name, typ, _ := strings.Cut(target[1:], ":")
	switch {
	case strings.HasSuffix(target, ":"), strings.ContainsAny(name, "\\/\x00"), strings.ContainsAny(typ, ":\\/\x00"):
		return "", smb2.StatusInvalidParameter
	case utf16le.Len(name) > 2*255:
		return "", smb2.StatusInvalidParameter
	case typ != "" && !strings.EqualFold(typ, "$DATA"):
		return "", smb2.StatusObjectTypeMismatch
	}
	return name, nil
}

// streamTarget checks the target stream of a rename of o's stream and
// returns its stored spelling: an existing target (the unnamed data
// stream always exists) is replaced only when asked, while no other open
// has it and it is empty ([MS-FSA] 2.1.5.15.12.1). Called under o.mu.
func (o *open) streamTarget(so vfs.StreamOpener, stream string, replace bool) (string, error) {
	size := int64(-1)
	if stream == "" {
		fi, err := o.d.fs.Stat(o.name)
		if err != nil {
			return "", err
		}
		size = fi.Size
	} else {
		list, err := so.Streams(o.name)
		if err != nil {
			return "", streamError(err)
		}
		for _, s := range list {
			if strings.EqualFold(s.Name, stream) {
				stream, size = s.Name, s.Size
				break
			}
		}
	}
	switch {
	case size < 0:
		return stream, nil // a new name
	case !replace:
		return "", smb2.StatusObjectNameCollision
	case o.so != nil && o.d.table.StreamOpen(o.so.Key, stream, o.so), size != 0:
		return "", smb2.StatusInvalidParameter
	}
	return stream, nil
}

// currentStream is the open's stream name; a rename through any open
// of the stream changes it.
func (o *open) currentStream() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.streamLocked()
}

// streamLocked refreshes the open's stream name from the open table,
// which keeps it for every open of a renamed stream. Called under o.mu.
func (o *open) streamLocked() string {
	if o.so != nil {
		o.stream = o.d.table.StreamOf(o.so)
	}
	return o.stream
}
