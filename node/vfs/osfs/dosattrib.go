package osfs

import (
	"encoding/binary"
	"errors"
	"time"
)

// xattrDOS is the extended attribute holding a file's dosAttrib record.
const xattrDOS = "user.smbcluster.dosattrib"

// dosAttrib is the record stored in xattrDOS. Wire layout, little-endian:
//
//	0  uint8   version (1)
//	1  uint8   flags: 1 = attributes present, 2 = creation time present
//	2  uint16  reserved, zero
//	4  uint32  DOS attributes ([MS-FSCC] 2.6)
//	8  int64   creation time, nanoseconds since the Unix epoch
//	16 int64   change time set by a client (flag 4), nanoseconds
//	24 int64   the file's mtime when that change time was set
//
// Linux cannot set a file's ctime, so a client-set change time is kept
// here and reported for as long as the file's mtime is the one recorded
// with it: the first write (or write-time change) ends it, as a change
// would on Windows. Records of 16 bytes (no change time) are read too.
// Records of another version are ignored, as if absent.
type dosAttrib struct {
	HasAttrs    bool
	Attrs       uint32
	HasCreation bool
	Creation    time.Time
	HasChange   bool
	Change      time.Time
	ChangeMtime time.Time
}

const (
	dosVersion      = 1
	dosFlagAttrs    = 1
	dosFlagCreation = 2
	dosFlagChange   = 4
	dosMinSize      = 16
	dosRecordSize   = 32
)

var errDOSRecord = errors.New("osfs: malformed dosattrib record")

// Size returns the encoded size of the record.
func (d *dosAttrib) Size() int { return dosRecordSize }

// Encode writes the record into b, which must hold Size bytes.
func (d *dosAttrib) Encode(b []byte) {
	_ = b[dosRecordSize-1]
	var flags uint8
	var ct int64
	if d.HasAttrs {
		flags |= dosFlagAttrs
	}
	if d.HasCreation {
		flags |= dosFlagCreation
		ct = d.Creation.UnixNano()
	}
	var chg, chgM int64
	if d.HasChange {
		flags |= dosFlagChange
		chg, chgM = d.Change.UnixNano(), d.ChangeMtime.UnixNano()
	}
	b[0], b[1], b[2], b[3] = dosVersion, flags, 0, 0
	binary.LittleEndian.PutUint32(b[4:], d.Attrs)
	binary.LittleEndian.PutUint64(b[8:], uint64(ct))
	binary.LittleEndian.PutUint64(b[16:], uint64(chg))
	binary.LittleEndian.PutUint64(b[24:], uint64(chgM))
}

// Decode parses a record. Longer records (a later minor extension) are
// accepted; unknown flag bits are ignored.
func (d *dosAttrib) Decode(msg []byte) error {
	*d = dosAttrib{}
	if len(msg) < dosMinSize || msg[0] != dosVersion {
		return errDOSRecord
	}
	flags := msg[1]
	if flags&dosFlagAttrs != 0 {
		d.HasAttrs = true
		d.Attrs = binary.LittleEndian.Uint32(msg[4:])
	}
	if flags&dosFlagCreation != 0 {
		d.HasCreation = true
		d.Creation = time.Unix(0, int64(binary.LittleEndian.Uint64(msg[8:])))
	}
	if flags&dosFlagChange != 0 && len(msg) >= dosRecordSize {
		d.HasChange = true
		d.Change = time.Unix(0, int64(binary.LittleEndian.Uint64(msg[16:])))
		d.ChangeMtime = time.Unix(0, int64(binary.LittleEndian.Uint64(msg[24:])))
	}
	return nil
}
