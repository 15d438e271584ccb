package fscc

import "time"

// epochDelta is the number of seconds between 1601-01-01 (the FILETIME
// epoch) and 1970-01-01 (the Unix epoch).
const epochDelta = 11644473600

// Special FILETIME values in FILE_BASIC_INFORMATION for SET_INFO
// ([MS-FSCC] 2.4).
const (
	FiletimeUnchanged      uint64 = 0                  // leave the time as is
	FiletimeStopUpdating   uint64 = 0xFFFFFFFFFFFFFFFF // -1: stop automatic updates
	FiletimeResumeUpdating uint64 = 0xFFFFFFFFFFFFFFFE // -2: resume automatic updates
)

// Filetime converts t to a Windows FILETIME. The zero time and times before
// 1601 give 0.
func Filetime(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	s := t.Unix() + epochDelta
	if s < 0 {
		return 0
	}
	return uint64(s)*1e7 + uint64(t.Nanosecond())/100
}

// TimeOf converts a Windows FILETIME to a time in UTC; 0 gives the zero time.
func TimeOf(ft uint64) time.Time {
	if ft == 0 {
		return time.Time{}
	}
	s := int64(ft/1e7) - epochDelta
	return time.Unix(s, int64(ft%1e7)*100).UTC()
}
