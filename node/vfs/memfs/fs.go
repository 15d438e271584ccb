package memfs

import (
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/smbcluster/smbcluster/node/vfs"
)

// node is a file or directory. Its fields are guarded by FS.mu.
type node struct {
	ino      uint64
	dir      bool
	data     []byte
	children map[string]*node // directories only
	parent   *node            // nil for the root and for removed nodes
	nlink    uint32           // files: 1, or 0 once removed

	hasAttrs                   bool
	attrs                      uint32
	btime, atime, mtime, ctime time.Time

	streams map[string]*node  // named streams (stream.go); their nodes hold only data
	dataOf  *node             // a stream renamed onto its file's unnamed data stream: the file
	sd      []byte            // stored security descriptor
	eas     map[string][]byte // extended attributes
}

// FS is an in-memory share. It is safe for concurrent use.
type FS struct {
	now func() time.Time // immutable

	mu      sync.Mutex
	root    *node
	nextIno uint64
}

var _ vfs.FS = (*FS)(nil)

// New returns an empty share using the wall clock.
func New() *FS { return NewWithClock(time.Now) }

// NewWithClock returns an empty share whose times come from now.
func NewWithClock(now func() time.Time) *FS {
	fsys := &FS{now: now, nextIno: 1}
	fsys.root = fsys.newNode(true)
	return fsys
}

// newNode allocates a node with a fresh FileID. Callers hold mu (or own fsys).
func (fsys *FS) newNode(dir bool) *node {
	t := fsys.now()
	n := &node{ino: fsys.nextIno, dir: dir, nlink: 1, btime: t, atime: t, mtime: t, ctime: t}
	fsys.nextIno++
	if dir {
		n.children = make(map[string]*node)
	}
	return n
}

// checkName applies osfs's name rules.
func checkName(name string) error {
	if name == "" {
		return nil
	}
	if strings.IndexByte(name, 0) >= 0 || name[0] == '/' {
		return syscall.EINVAL
	}
	if len(name) >= 4096 {
		return syscall.ENAMETOOLONG
	}
	for elem := range strings.SplitSeq(name, "/") {
		switch {
		case elem == "", elem == ".":
			return syscall.EINVAL
		case elem == "..":
			return syscall.EACCES
		case len(elem) > 255:
			return syscall.ENAMETOOLONG
		}
	}
	return nil
}

func split(name string) (dir, base string) {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return "", name
	}
	return name[:i], name[i+1:]
}

// lookup walks a checked name. Callers hold mu.
func (fsys *FS) lookup(name string) (*node, error) {
	n := fsys.root
	if name == "" {
		return n, nil
	}
	for elem := range strings.SplitSeq(name, "/") {
		if !n.dir {
			return nil, syscall.ENOTDIR
		}
		c, ok := n.children[elem]
		if !ok {
			return nil, syscall.ENOENT
		}
		n = c
	}
	return n, nil
}

// lookupParent returns the directory holding a checked non-root name and
// the base name. Callers hold mu.
func (fsys *FS) lookupParent(name string) (*node, string, error) {
	dir, base := split(name)
	p, err := fsys.lookup(dir)
	if err != nil {
		return nil, "", err
	}
	if !p.dir {
		return nil, "", syscall.ENOTDIR
	}
	return p, base, nil
}

// Stat describes name.
func (fsys *FS) Stat(name string) (vfs.FileInfo, error) {
	if err := checkName(name); err != nil {
		return vfs.FileInfo{}, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	n, err := fsys.lookup(name)
	if err != nil {
		return vfs.FileInfo{}, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	_, base := split(name)
	return n.info(base), nil
}

// info describes n. Callers hold mu.
func (n *node) info(name string) vfs.FileInfo {
	fi := vfs.FileInfo{
		Name:           name,
		IsDir:          n.dir,
		CreationTime:   n.btime,
		LastAccessTime: n.atime,
		LastWriteTime:  n.mtime,
		ChangeTime:     n.ctime,
		FileID:         n.ino,
		NumLinks:       n.nlink,
	}
	if n.dir {
		fi.NumLinks = 2
		for _, c := range n.children {
			if c.dir {
				fi.NumLinks++
			}
		}
	} else {
		fi.Size = int64(len(n.data))
		fi.AllocationSize = (fi.Size + 4095) &^ 4095
	}
	fi.Attributes = n.attributes()
	return fi
}

// attributes derives the DOS attributes as osfs does.
func (n *node) attributes() uint32 {
	a := vfs.AttrArchive
	if n.hasAttrs {
		a = n.attrs & vfs.StoredAttrs
	}
	if n.dir {
		if !n.hasAttrs {
			a = 0
		}
		return a | vfs.AttrDirectory
	}
	if a == 0 {
		a = vfs.AttrNormal
	}
	return a
}

// touch records a modification of directory or file n. Callers hold mu.
func (fsys *FS) touch(n *node) {
	t := fsys.now()
	n.mtime, n.ctime = t, t
}

// Remove deletes a file or an empty directory.
func (fsys *FS) Remove(name string) error {
	if err := fsys.remove(name); err != nil {
		return &fs.PathError{Op: "remove", Path: name, Err: err}
	}
	return nil
}

func (fsys *FS) remove(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if name == "" {
		return syscall.EACCES
	}
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	p, base, err := fsys.lookupParent(name)
	if err != nil {
		return err
	}
	n, ok := p.children[base]
	if !ok {
		return syscall.ENOENT
	}
	if n.dir && len(n.children) > 0 {
		return syscall.ENOTEMPTY
	}
	delete(p.children, base)
	n.parent = nil
	if !n.dir {
		n.nlink = 0
		n.ctime = fsys.now()
	}
	fsys.touch(p)
	return nil
}

// Rename moves oldname to newname with osfs's rules: an existing directory
// target is refused (EEXIST without replace, EACCES with it).
func (fsys *FS) Rename(oldname, newname string, replace bool) error {
	if err := fsys.rename(oldname, newname, replace); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	return nil
}

func (fsys *FS) rename(oldname, newname string, replace bool) error {
	if err := checkName(oldname); err != nil {
		return err
	}
	if err := checkName(newname); err != nil {
		return err
	}
	if oldname == "" || newname == "" {
		return syscall.EACCES
	}
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	op, obase, err := fsys.lookupParent(oldname)
	if err != nil {
		return err
	}
	np, nbase, err := fsys.lookupParent(newname)
	if err != nil {
		return err
	}
	target, exists := np.children[nbase]
	switch {
	case exists && target.dir && !replace:
		return syscall.EEXIST
	case exists && target.dir:
		return syscall.EACCES
	}
	n, ok := op.children[obase]
	if !ok {
		return syscall.ENOENT
	}
	switch {
	case exists && !replace:
		return syscall.EEXIST
	case exists && n == target:
		return nil
	case exists && n.dir:
		return syscall.ENOTDIR
	}
	for a := np; a != nil; a = a.parent {
		if a == n {
			return syscall.EINVAL // into its own subtree
		}
	}
	if exists {
		target.nlink = 0
		target.parent = nil
	}
	delete(op.children, obase)
	np.children[nbase] = n
	n.parent = np
	n.ctime = fsys.now()
	fsys.touch(op)
	fsys.touch(np)
	return nil
}

// StatFS describes a notional 1 TiB volume.
func (fsys *FS) StatFS() (vfs.FSInfo, error) {
	return vfs.FSInfo{
		TotalBytes:    1 << 40,
		FreeBytes:     1 << 39,
		AvailBytes:    1 << 39,
		BlockSize:     4096,
		MaxNameLen:    255,
		SerialNumber:  0x4d454d46, // "MEMF"
		FSName:        "NTFS",
		CaseSensitive: true,
	}, nil
}

// sortedNames returns a directory's child names in order. Callers hold mu.
func (n *node) sortedNames() []string {
	names := make([]string, 0, len(n.children))
	for name := range n.children {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
