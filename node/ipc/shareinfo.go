package ipc

import "github.com/smbcluster/smbcluster/node/ipc/ndr"

// shareLevel reports whether level is a SHARE_INFO level this package
// encodes: 0, 1, 2, 501, 502 ([MS-SRVS] 2.2.4.22-26) and 1005 (2.2.4.29).
func shareLevel(level uint32) bool {
	switch level {
	case 0, 1, 2, 501, 502, 1005:
		return true
	}
	return false
}

func maxUses(sh *ShareInfo) uint32 {
	if sh.MaxUses == 0 {
		return UnlimitedUses
	}
	return sh.MaxUses
}

// shareFixed writes the fixed part of a SHARE_INFO_<level> structure: its
// scalars and the referent ids of its strings.
func shareFixed(w *ndr.Writer, sh *ShareInfo, level uint32) {
	if level == 1005 {
		w.Uint32(sh.Flags) // shi1005_flags
		return
	}
	w.Pointer(true) // netname
	if level == 0 {
		return
	}
	w.Uint32(sh.Type)
	w.Pointer(true) // remark
	switch level {
	case 501:
		w.Uint32(sh.Flags)
	case 2, 502:
		w.Uint32(0) // permissions: share-level security is not used
		w.Uint32(maxUses(sh))
		w.Uint32(sh.CurrentUses)
		w.Pointer(true)  // path
		w.Pointer(false) // passwd
		if level == 502 {
			w.Uint32(0)      // shi502_reserved: security descriptor size
			w.Pointer(false) // shi502_security_descriptor
		}
	}
}

// shareDeferred writes the strings of a SHARE_INFO_<level> structure in the
// order of their pointers.
func shareDeferred(w *ndr.Writer, sh *ShareInfo, level uint32) {
	if level == 1005 {
		return
	}
	w.String(sh.Name)
	if level == 0 {
		return
	}
	w.String(sh.Comment)
	if level == 2 || level == 502 {
		w.String(sh.Path)
	}
}
