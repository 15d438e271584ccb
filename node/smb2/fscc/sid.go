package fscc

import (
	"fmt"
	"strconv"
	"strings"
)

// SID is a security identifier ([MS-DTYP] 2.4.2): Revision(1)
// SubAuthorityCount(1) IdentifierAuthority(6, big-endian)
// SubAuthority(4 each, little-endian).
type SID struct {
	Revision       uint8
	Authority      [6]byte
	SubAuthorities []uint32
}

// maxSubAuthorities is the limit of [MS-DTYP] 2.4.2.2.
const maxSubAuthorities = 15

func newSID(auth uint64, subs ...uint32) SID {
	s := SID{Revision: 1, SubAuthorities: subs}
	for i := range 6 {
		s.Authority[5-i] = byte(auth >> (8 * i))
	}
	return s
}

// Well-known SIDs ([MS-DTYP] 2.4.2.4).
var (
	SIDNull               = newSID(0, 0)       // S-1-0-0
	SIDEveryone           = newSID(1, 0)       // S-1-1-0
	SIDCreatorOwner       = newSID(3, 0)       // S-1-3-0
	SIDCreatorGroup       = newSID(3, 1)       // S-1-3-1
	SIDAuthenticatedUsers = newSID(5, 11)      // S-1-5-11
	SIDSystem             = newSID(5, 18)      // S-1-5-18
	SIDAdministrators     = newSID(5, 32, 544) // S-1-5-32-544
	SIDUsers              = newSID(5, 32, 545) // S-1-5-32-545
	SIDGuests             = newSID(5, 32, 546) // S-1-5-32-546
	SIDAnonymous          = newSID(5, 7)       // S-1-5-7
)

// UnixUserSID maps a POSIX uid to S-1-22-1-uid, as Samba does.
func UnixUserSID(uid uint32) SID { return newSID(22, 1, uid) }

// UnixGroupSID maps a POSIX gid to S-1-22-2-gid, as Samba does.
func UnixGroupSID(gid uint32) SID { return newSID(22, 2, gid) }

// UnixID reports the uid (isGroup false) or gid (isGroup true) that s
// encodes if it is an S-1-22-1-x or S-1-22-2-x SID.
func (s SID) UnixID() (id uint32, isGroup, ok bool) {
	if s.Revision != 1 || s.authority() != 22 || len(s.SubAuthorities) != 2 {
		return 0, false, false
	}
	switch s.SubAuthorities[0] {
	case 1:
		return s.SubAuthorities[1], false, true
	case 2:
		return s.SubAuthorities[1], true, true
	}
	return 0, false, false
}

func (s SID) authority() uint64 {
	var a uint64
	for _, c := range s.Authority {
		a = a<<8 | uint64(c)
	}
	return a
}

// Equal reports whether two SIDs are identical.
func (s SID) Equal(t SID) bool {
	if s.Revision != t.Revision || s.Authority != t.Authority || len(s.SubAuthorities) != len(t.SubAuthorities) {
		return false
	}
	for i, v := range s.SubAuthorities {
		if t.SubAuthorities[i] != v {
			return false
		}
	}
	return true
}

// String formats s as S-R-I-S-S... ([MS-DTYP] 2.4.2.1); an authority of
// 2^32 or more is written as 0x followed by 12 hex digits.
func (s SID) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "S-%d-", s.Revision)
	if a := s.authority(); a < 1<<32 {
		b.WriteString(strconv.FormatUint(a, 10))
	} else {
		fmt.Fprintf(&b, "0x%012X", a)
	}
	for _, v := range s.SubAuthorities {
		b.WriteByte('-')
		b.WriteString(strconv.FormatUint(uint64(v), 10))
	}
	return b.String()
}

// ParseSID parses the string form of [MS-DTYP] 2.4.2.1.
func ParseSID(str string) (SID, error) {
	parts := strings.Split(str, "-")
	if len(parts) < 3 || (parts[0] != "S" && parts[0] != "s") || len(parts)-3 > maxSubAuthorities {
		return SID{}, fmt.Errorf("fscc: bad SID %q", str)
	}
	rev, err := strconv.ParseUint(parts[1], 10, 8)
	if err != nil || rev != 1 {
		return SID{}, fmt.Errorf("fscc: bad SID revision in %q", str)
	}
	var auth uint64
	if h, ok := strings.CutPrefix(strings.ToLower(parts[2]), "0x"); ok {
		auth, err = strconv.ParseUint(h, 16, 48)
	} else {
		auth, err = strconv.ParseUint(parts[2], 10, 32)
	}
	if err != nil {
		return SID{}, fmt.Errorf("fscc: bad SID authority in %q", str)
	}
	s := newSID(auth)
	s.SubAuthorities = make([]uint32, 0, len(parts)-3)
	for _, p := range parts[3:] {
		v, err := strconv.ParseUint(p, 10, 32)
		if err != nil {
			return SID{}, fmt.Errorf("fscc: bad SID sub-authority in %q", str)
		}
		s.SubAuthorities = append(s.SubAuthorities, uint32(v))
	}
	return s, nil
}

// MustParseSID is ParseSID for constants; it panics on error.
func MustParseSID(str string) SID {
	s, err := ParseSID(str)
	if err != nil {
		panic(err)
	}
	return s
}

func (s *SID) Size() int { return 8 + 4*len(s.SubAuthorities) }

func (s *SID) Encode(b []byte) {
	b[0] = s.Revision
	b[1] = uint8(len(s.SubAuthorities))
	copy(b[2:8], s.Authority[:])
	for i, v := range s.SubAuthorities {
		le.PutUint32(b[8+4*i:], v)
	}
}

// Decode parses a binary SID from the start of b (trailing bytes are
// ignored); the revision must be 1 and at most 15 sub-authorities.
func (s *SID) Decode(b []byte) error {
	if len(b) < 8 {
		return ErrShortBuffer
	}
	n := int(b[1])
	if b[0] != 1 || n > maxSubAuthorities {
		return ErrInvalid
	}
	if len(b) < 8+4*n {
		return ErrShortBuffer
	}
	s.Revision = b[0]
	copy(s.Authority[:], b[2:8])
	s.SubAuthorities = make([]uint32, n)
	for i := range n {
		s.SubAuthorities[i] = le.Uint32(b[8+4*i:])
	}
	return nil
}
