package osfs

import (
	"encoding/binary"
	"errors"
	"math"
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
	// The creation time, or the change time and its mtime, are in 100 ns
	// units since 1601 (a FILETIME) rather than ns since 1970: a time
	// past the int64 nanoseconds of 1678–2262, which SMB clients set
	// (a 64-bit time_t, [MS-FSA] 2.1.5.14.2 keeps any time). Older
	// readers, which ignore the flag, could not hold such a time anyway.
	dosFlagCreationFT = 8
	dosFlagChangeFT   = 16
	dosMinSize        = 16
	dosRecordSize     = 32
)

var errDOSRecord = errors.New("osfs: malformed dosattrib record")

// Size returns the encoded size of the record.
func (d *dosAttrib) Size() int { return dosRecordSize }

// Encode writes the record into b, which must hold Size bytes.
func (d *dosAttrib) Encode(b []byte) {
	_ = b[dosRecordSize-1]
	var flags uint8
	var ct uint64
	if d.HasAttrs {
		flags |= dosFlagAttrs
	}
	if d.HasCreation {
		flags |= dosFlagCreation
		if !fitsUnixNano(d.Creation) {
			flags |= dosFlagCreationFT
		}
		ct = encodeTime(d.Creation, flags&dosFlagCreationFT != 0)
	}
	var chg, chgM uint64
	if d.HasChange {
		flags |= dosFlagChange
		if !fitsUnixNano(d.Change) || !fitsUnixNano(d.ChangeMtime) {
			flags |= dosFlagChangeFT
		}
		chg, chgM = encodeTime(d.Change, flags&dosFlagChangeFT != 0), encodeTime(d.ChangeMtime, flags&dosFlagChangeFT != 0)
	}
	b[0], b[1], b[2], b[3] = dosVersion, flags, 0, 0
	binary.LittleEndian.PutUint32(b[4:], d.Attrs)
	binary.LittleEndian.PutUint64(b[8:], ct)
	binary.LittleEndian.PutUint64(b[16:], chg)
	binary.LittleEndian.PutUint64(b[24:], chgM)
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
		d.Creation = decodeTime(binary.LittleEndian.Uint64(msg[8:]), flags&dosFlagCreationFT != 0)
	}
	if flags&dosFlagChange != 0 && len(msg) >= dosRecordSize {
		d.HasChange = true
		d.Change = decodeTime(binary.LittleEndian.Uint64(msg[16:]), flags&dosFlagChangeFT != 0)
		d.ChangeMtime = decodeTime(binary.LittleEndian.Uint64(msg[24:]), flags&dosFlagChangeFT != 0)
	}
	return nil
}

// filetimeEpoch is 1601-01-01 in Unix seconds.
const filetimeEpoch = -11644473600

var minUnixNano, maxUnixNano = time.Unix(0, math.MinInt64), time.Unix(0, math.MaxInt64)

// fitsUnixNano reports whether t's Unix nanoseconds fit an int64.
func fitsUnixNano(t time.Time) bool {
	return !t.Before(minUnixNano) && !t.After(maxUnixNano)
}

// encodeTime is t in ns since 1970, or as a FILETIME (100 ns units since
// 1601; 0 before 1601).
func encodeTime(t time.Time, ft bool) uint64 {
	if !ft {
		return uint64(t.UnixNano())
	}
	s := t.Unix() - filetimeEpoch
	if s < 0 {
		return 0
	}
	return uint64(s)*1e7 + uint64(t.Nanosecond())/100
}

func decodeTime(v uint64, ft bool) time.Time {
	if !ft {
		return time.Unix(0, int64(v))
	}
	return time.Unix(int64(v/1e7)+filetimeEpoch, int64(v%1e7)*100)
}
