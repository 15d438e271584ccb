package fscc

import "github.com/smbcluster/smbcluster/node/smb2/utf16le"

// DirEntry is one file as QUERY_DIRECTORY reports it, independent of the
// information class.
type DirEntry struct {
	FileIndex      uint32
	Name           string
	ShortName      string // 8.3 name; dropped if it does not fit 12 UTF-16 units
	CreationTime   uint64
	LastAccessTime uint64
	LastWriteTime  uint64
	ChangeTime     uint64
	EndOfFile      int64
	AllocationSize int64
	FileAttributes uint32 // 0 is sent as FILE_ATTRIBUTE_NORMAL
	EaSize         uint32
	ReparseTag     uint32
	FileID         uint64
}

// dirFixed is the size of each directory class's entry before FileName
// ([MS-FSCC] 2.4: FILE_DIRECTORY_INFORMATION, FILE_FULL_DIR_INFORMATION,
// FILE_BOTH_DIR_INFORMATION, FILE_ID_BOTH_DIR_INFORMATION,
// FILE_ID_FULL_DIR_INFORMATION, FILE_ID_EXTD_DIR_INFORMATION,
// FILE_ID_EXTD_BOTH_DIR_INFORMATION, FILE_ID_64_EXTD_DIR_INFORMATION,
// FILE_NAMES_INFORMATION).
func dirFixed(class uint8) int {
	switch class {
	case FileDirectoryInformation:
		return 64
	case FileFullDirectoryInformation:
		return 68
	case FileIdFullDirectoryInformation, FileId64ExtdDirectoryInformation:
		return 80
	case FileBothDirectoryInformation:
		return 94
	case FileIdBothDirectoryInformation:
		return 104
	case FileIdExtdDirectoryInformation:
		return 88
	case FileIdExtdBothDirectoryInformation:
		return 114
	case FileNamesInformation:
		return 12
	}
	return 0
}

// DirWriter fills a QUERY_DIRECTORY output buffer of at most max bytes with
// entries of one class, chaining NextEntryOffset and aligning each entry on
// 8 bytes ([MS-FSCC] 2.4: "each MUST be aligned on an 8-byte boundary ...
// No padding is required following the last data element").
type DirWriter struct {
	class uint8
	fixed int
	max   int
	b     []byte
	last  int // offset of the last entry, -1 when empty
}

// NewDirWriter starts an output buffer for class, reusing buf's storage.
// It returns ErrInvalidInfoClass for a class that is not a directory class.
func NewDirWriter(class uint8, max int, buf []byte) (*DirWriter, error) {
	fixed := dirFixed(class)
	if fixed == 0 {
		return nil, ErrInvalidInfoClass
	}
	return &DirWriter{class: class, fixed: fixed, max: max, b: buf[:0], last: -1}, nil
}

// Len returns the number of bytes written so far (no trailing padding).
func (w *DirWriter) Len() int { return len(w.b) }

// Empty reports whether no entry has been added yet.
func (w *DirWriter) Empty() bool { return w.last < 0 }

// Bytes returns the entries; the last one has NextEntryOffset 0.
func (w *DirWriter) Bytes() []byte { return w.b }

// Add appends e. It returns false, writing nothing, if e does not fit.
func (w *DirWriter) Add(e *DirEntry) bool {
	start := 0
	if w.last >= 0 {
		start = (len(w.b) + 7) &^ 7
	}
	nameLen := utf16le.Len(e.Name)
	end := start + w.fixed + nameLen
	if end > w.max || nameLen > 0xFFFF*2 {
		return false
	}
	if end > cap(w.b) {
		nb := make([]byte, len(w.b), max(end, 2*cap(w.b)))
		copy(nb, w.b)
		w.b = nb
	}
	prevEnd := len(w.b)
	w.b = w.b[:end]
	clear(w.b[prevEnd:start]) // alignment padding
	ent := w.b[start:end]
	clear(ent[:w.fixed])
	utf16le.Encode(ent[w.fixed:], e.Name)
	w.fill(ent, e, uint32(nameLen))
	if w.last >= 0 {
		le.PutUint32(w.b[w.last:], uint32(start-w.last))
	}
	w.last = start
	return true
}

// fill writes the fixed part of an entry whose name is already in place.
func (w *DirWriter) fill(b []byte, e *DirEntry, nameLen uint32) {
	le.PutUint32(b[4:], e.FileIndex)
	if w.class == FileNamesInformation {
		le.PutUint32(b[8:], nameLen)
		return
	}
	le.PutUint64(b[8:], e.CreationTime)
	le.PutUint64(b[16:], e.LastAccessTime)
	le.PutUint64(b[24:], e.LastWriteTime)
	le.PutUint64(b[32:], e.ChangeTime)
	le.PutUint64(b[40:], uint64(e.EndOfFile))
	le.PutUint64(b[48:], uint64(e.AllocationSize))
	attrs := e.FileAttributes
	if attrs == 0 {
		attrs = FileAttributeNormal // [MS-FSA] 2.1.5.6.3.1
	}
	le.PutUint32(b[56:], attrs)
	le.PutUint32(b[60:], nameLen)
	if w.class == FileDirectoryInformation {
		return
	}
	// In the classes without a ReparsePointTag field, EaSize carries the
	// reparse tag of a reparse point ([MS-FSCC] 2.4).
	ea := e.EaSize
	if e.FileAttributes&FileAttributeReparsePoint != 0 {
		ea = e.ReparseTag
	}
	switch w.class {
	case FileFullDirectoryInformation:
		le.PutUint32(b[64:], ea)
	case FileIdFullDirectoryInformation:
		le.PutUint32(b[64:], ea)
		le.PutUint64(b[72:], e.FileID)
	case FileBothDirectoryInformation:
		le.PutUint32(b[64:], ea)
		putShortName(b[68:], e.ShortName)
	case FileIdBothDirectoryInformation:
		le.PutUint32(b[64:], ea)
		putShortName(b[68:], e.ShortName)
		le.PutUint64(b[96:], e.FileID)
	case FileIdExtdDirectoryInformation, FileIdExtdBothDirectoryInformation,
		FileId64ExtdDirectoryInformation:
		le.PutUint32(b[64:], e.EaSize)
		le.PutUint32(b[68:], e.ReparseTag)
		le.PutUint64(b[72:], e.FileID) // low half of a 128-bit FileId
		if w.class == FileIdExtdBothDirectoryInformation {
			putShortName(b[88:], e.ShortName)
		}
	}
}

// putShortName writes ShortNameLength, Reserved and the 24-byte ShortName.
func putShortName(b []byte, s string) {
	if utf16le.Len(s) > 24 {
		return
	}
	b[0] = byte(utf16le.Encode(b[2:26], s))
}
