package fscc

import "github.com/smbcluster/smbcluster/node/smb2/utf16le"

// StreamEntry is one data stream of a file: Name is "::$DATA" for the
// unnamed stream and ":name:$DATA" for a named one.
type StreamEntry struct {
	Name           string
	Size           int64
	AllocationSize int64
}

// StreamInformation is a FILE_STREAM_INFORMATION list ([MS-FSCC] 2.4):
// NextEntryOffset(4) StreamNameLength(4) StreamSize(8)
// StreamAllocationSize(8) StreamName, entries 8-byte aligned.
type StreamInformation []StreamEntry

const streamFixed = 24

func (l StreamInformation) Size() int {
	n := 0
	for i := range l {
		if i > 0 {
			n = (n + 7) &^ 7
		}
		n += streamFixed + utf16le.Len(l[i].Name)
	}
	return n
}

func (l StreamInformation) Encode(b []byte) {
	off := 0
	for i := range l {
		e := &l[i]
		nl := utf16le.Encode(b[off+streamFixed:], e.Name)
		n := streamFixed + nl
		next := 0
		if i < len(l)-1 {
			next = (n + 7) &^ 7
		}
		le.PutUint32(b[off:], uint32(next))
		le.PutUint32(b[off+4:], uint32(nl))
		le.PutUint64(b[off+8:], uint64(e.Size))
		le.PutUint64(b[off+16:], uint64(e.AllocationSize))
		if next > n {
			clear(b[off+n : off+next])
		}
		off += next
	}
}

// Decode parses a FILE_STREAM_INFORMATION list (for tests and clients).
func (l *StreamInformation) Decode(b []byte) error {
	*l = (*l)[:0]
	for off := 0; ; {
		rest := b[off:]
		if len(rest) < streamFixed {
			return ErrShortBuffer
		}
		next := int(le.Uint32(rest))
		nl := uint64(le.Uint32(rest[4:]))
		if nl > uint64(len(rest)-streamFixed) || (next != 0 && (next < streamFixed+int(nl) || next > len(rest))) {
			return ErrShortBuffer
		}
		name, err := utf16le.Decode(rest[streamFixed : streamFixed+int(nl)])
		if err != nil {
			return ErrInvalid
		}
		*l = append(*l, StreamEntry{Name: name, Size: int64(le.Uint64(rest[8:])), AllocationSize: int64(le.Uint64(rest[16:]))})
		if next == 0 {
			return nil
		}
		off += next
	}
}
