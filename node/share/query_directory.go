package share

import (
	"errors"
	"io/fs"
	"path"
	"strings"
	"syscall"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
	"github.com/smbcluster/smbcluster/node/vfs"
)

// dirCursor is the enumeration state of a directory open ([MS-FSA]
// 2.1.5.6.3: Open.QueryPattern and the position in the directory). It
// holds a snapshot of the matching entries taken when the scan starts, so
// that large directories page stably across many QUERY_DIRECTORY calls.
type dirCursor struct {
	pattern string
	entries []vfs.FileInfo // "." and ".." first, then ReadDir order
	next    int            // index of the next entry to return
	// stale is set once the snapshot has served a response: entries are
	// then re-read before being returned, so that files deleted or
	// changed since the snapshot are reported as they are now.
	stale bool
}

// QueryDirectory handles SMB2 QUERY_DIRECTORY ([MS-SMB2] 3.3.5.18,
// [MS-FSA] 2.1.5.6).
func (o *open) QueryDirectory(r *server.Request, req *smb2.QueryDirectoryRequest) (server.Response, error) {
	if !o.isDir {
		return nil, smb2.StatusInvalidParameter
	}
	if err := o.need(smb2.FileListDirectory); err != nil {
		return nil, err
	}
	w, err := fscc.NewDirWriter(req.FileInformationClass, int(req.OutputBufferLength), nil)
	if err != nil {
		return nil, smb2.StatusInvalidInfoClass
	}
	pattern := req.FileName
	if pattern == "" {
		pattern = "*"
	}
	if strings.ContainsAny(pattern, `\/`) {
		return nil, smb2.StatusObjectNameInvalid
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	first := false
	if o.dir == nil || req.Flags&(smb2.RestartScans|smb2.Reopen) != 0 {
		// The pattern is fixed by the first query and changes only
		// with a restart or reopen ([MS-FSA] 2.1.5.6.3).
		c, err := o.scan(pattern)
		if err != nil {
			return nil, err
		}
		o.dir, first = c, true
	}
	n, err := o.fill(w, req.Flags&smb2.ReturnSingleEntry != 0)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		switch {
		case o.dir.next < len(o.dir.entries):
			return nil, smb2.StatusInfoLengthMismatch // the next entry does not fit
		case first:
			return nil, smb2.StatusNoSuchFile
		}
		return nil, smb2.StatusNoMoreFiles
	}
	return &smb2.QueryDirectoryResponse{Buffer: w.Bytes()}, nil
}

// fill adds entries from the cursor to w until it is full (or after one
// entry with single) and returns the number added. Callers hold o.mu.
func (o *open) fill(w *fscc.DirWriter, single bool) (int, error) {
	c := o.dir
	dir := o.name
	added := 0
	for c.next < len(c.entries) {
		fi := c.entries[c.next]
		if c.stale && !isDot(fi.Name) {
			cur, err := o.d.fs.Stat(path.Join(dir, fi.Name))
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
					c.next++ // deleted since the snapshot
					continue
				}
				return added, err
			}
			cur.Name = fi.Name
			fi = cur
		}
		e := dirEntry(fi)
		// FileIndex: the entry's position in this enumeration, as FAT
		// volumes report one ([MS-FSCC] 2.4.14); resuming from it with
		// SMB2_INDEX_SPECIFIED is not honoured, as on Windows.
		e.FileIndex = uint32(c.next + 1)
		if !w.Add(&e) {
			break
		}
		c.next++
		added++
		if single {
			break
		}
	}
	if added > 0 {
		c.stale = true
	}
	return added, nil
}

func isDot(name string) bool { return name == "." || name == ".." }

// scan starts an enumeration: it snapshots the directory's entries that
// match pattern, "." and ".." first (Windows and Samba list them in every
// directory, the share root included). Callers hold o.mu.
func (o *open) scan(pattern string) (*dirCursor, error) {
	c := &dirCursor{pattern: pattern}
	self, err := o.f.Stat()
	if err != nil {
		return nil, err
	}
	if fscc.Match(pattern, ".", true) {
		self.Name = "."
		c.entries = append(c.entries, self)
	}
	if fscc.Match(pattern, "..", true) {
		parent := self
		if o.name != "" {
			if p, err := o.d.fs.Stat(parentDir(o.name)); err == nil {
				parent = p
			}
		}
		parent.Name = ".."
		c.entries = append(c.entries, parent)
	}
	if !fscc.HasWildcards(pattern) && !isDot(pattern) {
		// An exact name: a Stat instead of reading a large directory,
		// falling back to a case-insensitive scan.
		if fi, err := o.d.fs.Stat(path.Join(o.name, pattern)); err == nil && fi.Name == pattern {
			c.entries = append(c.entries, fi)
			return c, nil
		}
	}
	all, err := o.f.ReadDir()
	if err != nil {
		return nil, err
	}
	for _, fi := range all {
		if fscc.Match(pattern, fi.Name, true) {
			c.entries = append(c.entries, fi)
		}
	}
	return c, nil
}

// parentDir is the vfs name of name's parent directory ("" for the root).
func parentDir(name string) string {
	d := path.Dir(name)
	if d == "." {
		return ""
	}
	return d
}

// dirEntry converts a vfs entry to the class-independent form.
func dirEntry(fi vfs.FileInfo) fscc.DirEntry {
	return fscc.DirEntry{
		Name:           fi.Name,
		ShortName:      dirShortName(fi.Name),
		CreationTime:   fscc.Filetime(fi.CreationTime),
		LastAccessTime: fscc.Filetime(fi.LastAccessTime),
		LastWriteTime:  fscc.Filetime(fi.LastWriteTime),
		ChangeTime:     fscc.Filetime(fi.ChangeTime),
		EndOfFile:      fi.Size,
		AllocationSize: fi.AllocationSize,
		FileAttributes: attrs(fi),
		FileID:         fi.FileID,
	}
}

// shortName is the 8.3 name of name ([MS-FSCC] 2.1.5.2.1): the name itself,
// upper-cased, when it already has that form, otherwise up to five
// characters of the base, "~", two characters of a hash and up to three
// of the extension, e.g. "LONGF~K3.TXT". FileAlternateNameInformation and
// the directory classes both use it, so they agree.
func shortName(name string) string {
	if is83(name) {
		return strings.ToUpper(name)
	}
	base, ext := name, ""
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		base, ext = name[:i], name[i+1:]
	}
	h := uint32(2166136261) // FNV-1a over the whole name
	for i := 0; i < len(name); i++ {
		h = (h ^ uint32(name[i])) * 16777619
	}
	const digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	out := clean83(base, 5) + "~" + string(digits[h%36]) + string(digits[h/36%36])
	if e := clean83(ext, 3); e != "" {
		out += "." + e
	}
	return out
}

// dirShortName is the ShortName of a directory entry: empty when the name
// is already a valid 8.3 name (or "." / ".."), as Windows reports it.
func dirShortName(name string) string {
	if isDot(name) || is83(name) {
		return ""
	}
	return shortName(name)
}

// is83 reports whether name is a valid 8.3 name as it stands.
func is83(name string) bool {
	base, ext := name, ""
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		base, ext = name[:i], name[i+1:]
	}
	return len(base) <= 8 && len(ext) <= 3 && valid83(base) && (ext == "" || valid83(ext)) &&
		strings.Count(name, ".") <= 1
}

// valid83 reports whether s is made of characters allowed in 8.3 names.
func valid83(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !ok83(s[i]) {
			return false
		}
	}
	return true
}

func ok83(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z' ||
		strings.IndexByte("!#$%&'()-@^_`{}~", b) >= 0
}

// clean83 keeps the first max 8.3-valid characters of s, upper-cased.
func clean83(s string, max int) string {
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() < max; i++ {
		if ok83(s[i]) {
			b.WriteByte(s[i])
		}
	}
	return strings.ToUpper(b.String())
}
