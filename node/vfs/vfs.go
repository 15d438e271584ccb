package vfs

import "time"

// DOS file attributes ([MS-FSCC] 2.6) that a backend stores for a file.
// Directory and normal are derived, not stored.
const (
	AttrReadOnly   uint32 = 0x00000001
	AttrHidden     uint32 = 0x00000002
	AttrSystem     uint32 = 0x00000004
	AttrDirectory  uint32 = 0x00000010
	AttrArchive    uint32 = 0x00000020
	AttrNormal     uint32 = 0x00000080
	AttrSparse     uint32 = 0x00000200
	AttrReparse    uint32 = 0x00000400
	AttrOffline    uint32 = 0x00001000
	AttrNotIndexed uint32 = 0x00002000

	// StoredAttrs are the attribute bits a backend keeps; others are ignored
	// by SetAttributes.
	StoredAttrs = AttrReadOnly | AttrHidden | AttrSystem | AttrArchive | AttrSparse | AttrOffline | AttrNotIndexed
)

// FileInfo describes a file or directory.
type FileInfo struct {
	Name           string // base name; "" for the root
	Size           int64  // end of file; 0 for directories
	AllocationSize int64  // bytes allocated on disk
	IsDir          bool
	Attributes     uint32 // DOS attributes, AttrDirectory set for directories, AttrNormal when none
	CreationTime   time.Time
	LastAccessTime time.Time
	LastWriteTime  time.Time
	ChangeTime     time.Time
	FileID         uint64 // stable for the life of the file, the same on every node sharing the filesystem
	NumLinks       uint32
}

// CreateMode says whether Open may create the file.
type CreateMode uint8

const (
	OpenExisting    CreateMode = iota // fail with fs.ErrNotExist if absent
	CreateIfAbsent                    // open or create
	CreateExclusive                   // create; fail with fs.ErrExist if present
)

// Kind restricts what Open accepts.
type Kind uint8

const (
	AnyKind     Kind = iota
	RegularOnly      // fail with syscall.EISDIR on a directory
	DirOnly          // fail with syscall.ENOTDIR on a file; with a create mode, creates a directory
)

// OpenOptions describe an open.
type OpenOptions struct {
	Read, Write bool // data access wanted (a directory is always opened read-only)
	Create      CreateMode
	Kind        Kind
	Truncate    bool   // truncate an existing regular file to zero length
	Attributes  uint32 // DOS attributes for a newly created file
}

// FS is one share's storage. Implementations are safe for concurrent use.
type FS interface {
	// Open opens or creates name. created reports whether this call created it.
	Open(name string, o OpenOptions) (f File, created bool, err error)
	// Stat describes name without following a final symbolic link out of the share.
	Stat(name string) (FileInfo, error)
	// Remove deletes a file or an empty directory (syscall.ENOTEMPTY otherwise).
	Remove(name string) error
	// Rename moves oldname to newname; without replace an existing newname
	// fails with fs.ErrExist. Renaming a directory over a directory is refused.
	Rename(oldname, newname string, replace bool) error
	// StatFS describes the filesystem holding the share.
	StatFS() (FSInfo, error)
}

// File is an open file or directory.
type File interface {
	ReadAt(p []byte, off int64) (int, error) // io.EOF only when off >= size
	WriteAt(p []byte, off int64) (int, error)
	Stat() (FileInfo, error)
	Truncate(size int64) error
	// Allocate reserves space up to size without changing the file size
	// (best effort: a backend that cannot reserve space returns nil).
	Allocate(size int64) error
	Sync() error
	// ReadDir returns all entries of a directory, without "." and "..",
	// in a stable order. It fails with syscall.ENOTDIR on a file.
	ReadDir() ([]FileInfo, error)
	// SetInfo changes the times that are non-zero and, when attrs != nil,
	// the stored DOS attributes.
	SetInfo(creation, access, write, change time.Time, attrs *uint32) error
	Close() error
}

// FdFile is implemented by files backed by an OS file descriptor, which the
// engine may use for zero-copy sends. The descriptor stays owned by the File.
type FdFile interface {
	File
	Fd() uintptr
}

// WriteTimeSetter is implemented by files that set their last write time
// alone without allocating: the share puts the time back after each
// WRITE that must not move it (node/share/writetime.go), and falls back
// to SetInfo elsewhere.
type WriteTimeSetter interface {
	SetWriteTime(t time.Time) error
}

// StreamFS is implemented by backends that keep alternate data streams.
type StreamFS interface {
	// Streams lists the named streams of name (the unnamed data stream excluded).
	Streams(name string) ([]StreamInfo, error)
}

// StreamOpener is implemented by backends that can open alternate data
// streams as files. Stream names are case-sensitive here: the share layer
// folds case. A stream belongs to an existing file or directory; removing or
// renaming that file takes its streams along. A stream file's Stat describes
// the file it belongs to, with Size and AllocationSize those of the stream
// and IsDir false (the attributes still say whether the file is a directory);
// its SetInfo changes the file's times and attributes.
// Wrappers may implement it and fail with errors.ErrUnsupported.
type StreamOpener interface {
	StreamFS
	// OpenStream opens or creates the named stream of the existing file
	// or directory name; o.Kind is ignored. created reports whether this
	// call created the stream.
	OpenStream(name, stream string, o OpenOptions) (f File, created bool, err error)
	// RemoveStream deletes a named stream (fs.ErrNotExist if absent).
	RemoveStream(name, stream string) error
	// RenameStream renames a named stream of name; without replace an
	// existing newStream fails with fs.ErrExist. A newStream of "" is the
	// unnamed data stream, which always exists: with replace its data
	// becomes the stream's (a directory has none). Open files of the
	// stream follow it to its new name; what open files of a replaced
	// stream see is unspecified (the share layer refuses to replace an
	// open stream).
	RenameStream(name, oldStream, newStream string, replace bool) error
}

// SecurityFile is implemented by files that keep a stored security
// descriptor (self-relative, [MS-DTYP] 2.4.6; opaque to the backend).
// Wrappers may implement it and fail with errors.ErrUnsupported.
type SecurityFile interface {
	// Security returns the stored descriptor, or nil when none is stored.
	Security() ([]byte, error)
	// SetSecurity stores sd, replacing any stored descriptor.
	SetSecurity(sd []byte) error
}

// EAFile is implemented by files that keep extended attributes
// ([MS-FSCC] 2.4.15): names are stored as given (the share layer folds
// case), values are at most 65535 bytes. Wrappers may implement it and
// fail with errors.ErrUnsupported.
type EAFile interface {
	// EAs returns the file's extended attributes, in a stable order.
	EAs() ([]EA, error)
	// SetEA stores an extended attribute; an empty value removes it.
	SetEA(name string, value []byte) error
}

// EA is one extended attribute.
type EA struct {
	Name  string
	Value []byte
}

// NameReader is implemented by directories that can list the names of
// their entries more cheaply than ReadDir (no per-entry stat). Wrappers
// may implement it and fail with errors.ErrUnsupported.
type NameReader interface {
	// ReadDirNames returns the entry names, without "." and "..".
	ReadDirNames() ([]string, error)
}

// StreamInfo describes one alternate data stream.
type StreamInfo struct {
	Name string
	Size int64
}

// FSInfo describes the filesystem under a share.
type FSInfo struct {
	TotalBytes, FreeBytes, AvailBytes int64
	BlockSize                         uint32 // bytes per allocation unit
	MaxNameLen                        uint32
	SerialNumber                      uint32
	Label                             string // volume label
	FSName                            string // reported file system name, e.g. "NTFS"
	CaseSensitive                     bool
	// Mount names the mount (one kernel's instance of the filesystem)
	// the share is on: two nodes see the same string only when they use
	// one mount, and so one page cache and one writer per file. Empty
	// when unknown.
	Mount string
}

// SparseFile is implemented by files that can deallocate a range and tell
// which ranges hold data (sparse files, [MS-FSA] 2.1.5.10.22 and
// 2.1.5.10.39). Wrappers may implement it and fail with
// errors.ErrUnsupported.
type SparseFile interface {
	// PunchHole deallocates [off, off+n) without changing the size; the
	// range reads as zeros afterwards. It fails with errors.ErrUnsupported
	// where the filesystem cannot deallocate (the caller writes zeros).
	PunchHole(off, n int64) error
	// AllocatedRanges returns, in order, at most limit ranges of
	// [off, end) that may hold data, clipped to [off, end) and to the
	// size. A range not returned reads as zeros.
	AllocatedRanges(off, end int64, limit int) ([]Range, error)
}

// Range is a byte range of a file.
type Range struct {
	Off, Len int64
}
