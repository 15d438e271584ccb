package fscc

// EA is one extended attribute of FILE_FULL_EA_INFORMATION
// ([MS-FSCC] 2.4). Names are ASCII (OEM) strings without the NUL.
type EA struct {
	Flags uint8 // FILE_NEED_EA = 0x80
	Name  string
	Value []byte // aliases the decoded buffer
}

// FileNeedEA marks an EA the file cannot be understood without.
const FileNeedEA uint8 = 0x80

const eaFixed = 8 // NextEntryOffset(4) Flags(1) EaNameLength(1) EaValueLength(2)

func (e *EA) size() int { return eaFixed + len(e.Name) + 1 + len(e.Value) }

// FullEaInformation is a FILE_FULL_EA_INFORMATION list: entries 4-byte
// aligned, chained by NextEntryOffset, the last one 0, no trailing padding.
type FullEaInformation []EA

func (l FullEaInformation) Size() int {
	n := 0
	for i := range l {
		if i > 0 {
			n = (n + 3) &^ 3
		}
		n += l[i].size()
	}
	return n
}

// Encode writes the list; names longer than 255 bytes or values longer
// than 65535 bytes are the caller's error and are truncated in the length
// fields only, so callers must validate first (see EA.Valid).
func (l FullEaInformation) Encode(b []byte) {
	off := 0
	for i := range l {
		e := &l[i]
		n := e.size()
		next := 0
		if i < len(l)-1 {
			next = (n + 3) &^ 3
		}
		le.PutUint32(b[off:], uint32(next))
		b[off+4] = e.Flags
		b[off+5] = uint8(len(e.Name))
		le.PutUint16(b[off+6:], uint16(len(e.Value)))
		p := off + eaFixed + copy(b[off+eaFixed:], e.Name)
		b[p] = 0
		copy(b[p+1:], e.Value)
		if next > n {
			clear(b[off+n : off+next])
		}
		off += next
	}
}

// Valid reports whether the EA can be encoded: a name of 1..255 bytes with
// no NUL and a value of at most 65535 bytes.
func (e *EA) Valid() bool {
	if len(e.Name) == 0 || len(e.Name) > 255 || len(e.Value) > 0xFFFF {
		return false
	}
	for i := 0; i < len(e.Name); i++ {
		if e.Name[i] == 0 {
			return false
		}
	}
	return true
}

// Decode parses a FILE_FULL_EA_INFORMATION list. Each entry must lie
// within its NextEntryOffset span (or the buffer, for the last) and have a
// NUL after its name.
func (l *FullEaInformation) Decode(b []byte) error {
	*l = (*l)[:0]
	for off := 0; ; {
		rest := b[off:]
		if len(rest) < eaFixed {
			return ErrShortBuffer
		}
		next := int(le.Uint32(rest))
		span := rest
		if next != 0 {
			if next > len(rest) {
				return ErrInvalid
			}
			span = rest[:next]
		}
		nameLen, valLen := int(rest[5]), int(le.Uint16(rest[6:]))
		if eaFixed+nameLen+1+valLen > len(span) {
			return ErrShortBuffer
		}
		if span[eaFixed+nameLen] != 0 {
			return ErrInvalid
		}
		v := eaFixed + nameLen + 1
		*l = append(*l, EA{Flags: rest[4], Name: string(span[eaFixed : eaFixed+nameLen]), Value: span[v : v+valLen : v+valLen]})
		if next == 0 {
			return nil
		}
		if next < eaFixed+nameLen+1+valLen {
			return ErrInvalid
		}
		off += next
	}
}

// DecodeGetEaList parses the FILE_GET_EA_INFORMATION list ([MS-FSCC]
// 2.4.15.1) that a QUERY_INFO for FileFullEaInformation may carry:
// NextEntryOffset(4) EaNameLength(1) EaName, NUL-terminated.
func DecodeGetEaList(b []byte) ([]string, error) {
	var names []string
	for off := 0; ; {
		rest := b[off:]
		if len(rest) < 5 {
			return nil, ErrShortBuffer
		}
		next := int(le.Uint32(rest))
		n := int(rest[4])
		if 5+n+1 > len(rest) || (next != 0 && (next < 5+n+1 || next > len(rest))) {
			return nil, ErrShortBuffer
		}
		if rest[5+n] != 0 {
			return nil, ErrInvalid
		}
		names = append(names, string(rest[5:5+n]))
		if next == 0 {
			return names, nil
		}
		off += next
	}
}
