package smb2

import "fmt"

//go:generate go run gen_status.go

// Status is an NTSTATUS code ([MS-ERREF] 2.3). It is an error, so handlers
// return it directly; Error and String give the spec name.
type Status uint32

// Error returns the spec name, e.g. "STATUS_ACCESS_DENIED".
func (s Status) Error() string { return s.String() }

// String returns the spec name, or STATUS_0x%08X for a code not in the table.
func (s Status) String() string {
	if n := s.name(); n != "" {
		return n
	}
	return fmt.Sprintf("STATUS_0x%08X", uint32(s))
}

// Severity values, the top two bits of an NTSTATUS ([MS-ERREF] 2.3).
const (
	severitySuccess       = 0
	severityInformational = 1
	severityWarning       = 2
	severityError         = 3
)

func (s Status) severity() uint32 { return uint32(s) >> 30 }

// IsError reports whether s has error severity (0xC…).
func (s Status) IsError() bool { return s.severity() == severityError }

// IsWarning reports whether s has warning severity (0x8…).
func (s Status) IsWarning() bool { return s.severity() == severityWarning }

// IsSuccess reports whether s is a success or informational code (0x0… or 0x4…).
func (s Status) IsSuccess() bool { return s.severity() <= severityInformational }
