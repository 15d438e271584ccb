package server

import "github.com/smbcluster/smbcluster/node/smb2"

// disposition is how a request came and how it is served: its place in
// its message, how the message was protected, and whether the read loop
// serves it. It is set when the request is made, before its handler
// runs, and does not change after.
type disposition uint8

const (
	// dispRelated: SMB2_FLAGS_RELATED_OPERATIONS; the request takes the
	// session, tree and open of the one before it ([MS-SMB2] 3.3.5.2.7.2).
	dispRelated disposition = 1 << iota
	// dispLast: the last (or only) PDU of its message; it may go async.
	dispLast
	// dispLone: the only PDU of its message.
	dispLone
	// dispSingle: the message is one plaintext PDU (zero-copy eligible).
	dispSingle
	// dispEncrypted: the request came in a TRANSFORM message.
	dispEncrypted
	// dispInline: served in the read loop (see serveCompound).
	dispInline
	// dispVerified: another node verified the request's signature over
	// the whole message (remotewrite.go), which this node does not hold.
	dispVerified
)

// dispositionOf is the disposition of PDU i, whose header is h, of a
// message of n PDUs; sealed: the message came in a TRANSFORM message,
// inline: the read loop serves it.
func dispositionOf(h *smb2.Header, i, n int, sealed, inline bool) disposition {
	var d disposition
	if h.Flags&smb2.FlagRelatedOperations != 0 {
		d |= dispRelated
	}
	if i == n-1 {
		d |= dispLast
	}
	if n == 1 {
		d |= dispLone
		if !sealed {
			d |= dispSingle
		}
	}
	if sealed {
		d |= dispEncrypted
	}
	if inline {
		d |= dispInline
	}
	return d
}

func (d disposition) related() bool   { return d&dispRelated != 0 }
func (d disposition) last() bool      { return d&dispLast != 0 }
func (d disposition) lone() bool      { return d&dispLone != 0 }
func (d disposition) single() bool    { return d&dispSingle != 0 }
func (d disposition) encrypted() bool { return d&dispEncrypted != 0 }
func (d disposition) inline() bool    { return d&dispInline != 0 }
func (d disposition) verified() bool  { return d&dispVerified != 0 }
