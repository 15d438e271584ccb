package ipc

import (
	"strings"

	"github.com/smbcluster/smbcluster/node/ipc/dcerpc"
	"github.com/smbcluster/smbcluster/node/ipc/ndr"
)

// srvsvc opnums ([MS-SRVS] 3.1.4).
const (
	opNetrSessionEnum     = 12
	opNetrShareEnum       = 15
	opNetrShareGetInfo    = 16
	opNetrServerGetInfo   = 21
	opNetrShareEnumSticky = 36
)

// Win32 error codes returned as NET_API_STATUS ([MS-ERREF] 2.2).
const (
	errSuccess         = 0
	errNotSupported    = 50   // ERROR_NOT_SUPPORTED
	errInvalidLevel    = 124  // ERROR_INVALID_LEVEL
	errNetNameNotFound = 2310 // NERR_NetNameNotFound
)

// Server description values ([MS-SRVS] 2.2.4.40-42).
const (
	platformIDNT = 500 // PLATFORM_ID_NT
	versionMajor = 10
	versionMinor = 0
	// serverType is SV_TYPE_WORKSTATION | SV_TYPE_SERVER | SV_TYPE_NT |
	// SV_TYPE_SERVER_NT ([MS-SRVS] 2.2.2.7).
	serverType = 0x00000001 | 0x00000002 | 0x00001000 | 0x00008000
)

var srvsvcSyntax = dcerpc.SyntaxID{UUID: dcerpc.MustParseUUID("4b324fc8-1670-01d3-1278-5a47bf6ee188"), Major: 3}

// srvsvc serves the srvsvc interface ([MS-SRVS]) from an Env.
type srvsvc struct{ env *Env }

func srvsvcInterface(env *Env) *dcerpc.Interface {
	s := &srvsvc{env}
	return &dcerpc.Interface{Syntax: srvsvcSyntax, Call: s.call}
}

func (s *srvsvc) call(opnum uint16, in []byte) ([]byte, uint32) {
	r := ndr.NewReader(in)
	w := &ndr.Writer{}
	switch opnum {
	case opNetrShareEnum:
		s.shareEnum(r, w, false)
	case opNetrShareEnumSticky:
		s.shareEnum(r, w, true)
	case opNetrShareGetInfo:
		s.shareGetInfo(r, w)
	case opNetrServerGetInfo:
		s.serverGetInfo(r, w)
	case opNetrSessionEnum:
		sessionEnum(r, w)
	default:
		return nil, dcerpc.StatusOpRangeError
	}
	if r.Err() != nil {
		return nil, dcerpc.StatusBadStubData
	}
	return w.Buf, 0
}

// enumRequest holds the parameters shared by the Netr*Enum calls: an
// ENUM_STRUCT whose union arms are all pointers to {EntriesRead, Buffer}
// containers, PreferedMaximumLength and ResumeHandle.
type enumRequest struct {
	level     uint32
	hasResume bool
}

// decodeEnum reads strings leading [in, string, unique] parameters and then
// the rest of a Netr*Enum request. A client-supplied non-empty buffer is
// refused as malformed (no client sends one).
func decodeEnum(r *ndr.Reader, strings int) enumRequest {
	var q enumRequest
	for range strings {
		r.UniqueString()
	}
	q.level = r.Uint32()
	if tag := r.Uint32(); tag != q.level {
		r.Fail() // switch_is(Level) violated
	}
	if r.Pointer() {
		r.Uint32() // EntriesRead
		if r.Pointer() && r.Uint32() != 0 {
			r.Fail()
		}
	}
	r.Uint32() // PreferedMaximumLength
	if r.Pointer() {
		q.hasResume = true
		r.Uint32()
	}
	return q
}

// encodeEnumTail writes TotalEntries, ResumeHandle (echoed as 0: everything
// was returned) and the status.
func encodeEnumTail(w *ndr.Writer, q enumRequest, total, status uint32) {
	w.Uint32(total)
	w.Pointer(q.hasResume)
	if q.hasResume {
		w.Uint32(0)
	}
	w.Uint32(status)
}

// shareEnum serves NetrShareEnum ([MS-SRVS] 3.1.4.8) and, with sticky,
// NetrShareEnumSticky (3.1.4.9), which lists only the non-special shares.
// All shares are returned at once, whatever PreferedMaximumLength says.
func (s *srvsvc) shareEnum(r *ndr.Reader, w *ndr.Writer, sticky bool) {
	q := decodeEnum(r, 1)
	if r.Err() != nil {
		return
	}
	w.Uint32(q.level)
	w.Uint32(q.level) // union discriminant
	if !shareLevel(q.level) || q.level == 1005 {
		w.Pointer(false)
		encodeEnumTail(w, q, 0, errInvalidLevel)
		return
	}
	var shares []ShareInfo
	for _, sh := range s.env.shares() {
		if !sticky || sh.Type&ShareTypeSpecial == 0 {
			shares = append(shares, sh)
		}
	}
	n := uint32(len(shares))
	w.Pointer(true) // SHARE_INFO_x_CONTAINER
	w.Uint32(n)
	w.Pointer(n > 0)
	if n > 0 {
		w.Uint32(n) // conformant array max count
		for i := range shares {
			shareFixed(w, &shares[i], q.level)
		}
		for i := range shares {
			shareDeferred(w, &shares[i], q.level)
		}
	}
	encodeEnumTail(w, q, n, errSuccess)
}

// shareGetInfo serves NetrShareGetInfo ([MS-SRVS] 3.1.4.10).
func (s *srvsvc) shareGetInfo(r *ndr.Reader, w *ndr.Writer) {
	r.UniqueString() // ServerName
	name := r.String()
	level := r.Uint32()
	if r.Err() != nil {
		return
	}
	var sh *ShareInfo
	for _, x := range s.env.shares() {
		if strings.EqualFold(x.Name, name) {
			sh = &x
			break
		}
	}
	w.Uint32(level) // union discriminant
	switch {
	case !shareLevel(level):
		unionNoArm(w, level, shareInfoArms)
		w.Uint32(errInvalidLevel)
	case sh == nil:
		unionNoArm(w, level, shareInfoArms)
		w.Uint32(errNetNameNotFound)
	default:
		w.Pointer(true)
		shareFixed(w, sh, level)
		shareDeferred(w, sh, level)
		w.Uint32(errSuccess)
	}
}

// sessionEnum answers NetrSessionEnum ([MS-SRVS] 3.1.4.5) with
// ERROR_NOT_SUPPORTED: sessions are not exposed over srvsvc yet.
func sessionEnum(r *ndr.Reader, w *ndr.Writer) {
	q := decodeEnum(r, 3)
	if r.Err() != nil {
		return
	}
	w.Uint32(q.level)
	w.Uint32(q.level)
	w.Pointer(false)
	encodeEnumTail(w, q, 0, errNotSupported)
}

// unionNoArm completes a union whose arm is not returned: a NULL pointer when
// the IDL has a pointer arm for level, nothing for the [default] arm.
func unionNoArm(w *ndr.Writer, level uint32, arms []uint32) {
	for _, a := range arms {
		if a == level {
			w.Pointer(false)
			return
		}
	}
}

// shareInfoArms are the cases of the SHARE_INFO union ([MS-SRVS] 2.2.3.6).
var shareInfoArms = []uint32{0, 1, 2, 502, 1004, 1006, 1501, 1005, 501, 503}

// serverInfoArms are the cases of the SERVER_INFO union ([MS-SRVS] 2.2.3.7).
var serverInfoArms = []uint32{100, 101, 102, 103, 502, 503, 599, 1005, 1107, 1010,
	1016, 1017, 1018, 1501, 1502, 1503, 1506, 1510, 1511, 1512, 1513, 1514, 1515,
	1516, 1518, 1523, 1528, 1529, 1530, 1533, 1534, 1535, 1536, 1538, 1539, 1540,
	1541, 1542, 1543, 1544, 1545, 1546, 1547, 1548, 1549, 1550, 1552, 1553, 1554,
	1555, 1556}

// serverGetInfo serves NetrServerGetInfo ([MS-SRVS] 3.1.4.17), levels 100,
// 101 and 102.
func (s *srvsvc) serverGetInfo(r *ndr.Reader, w *ndr.Writer) {
	r.UniqueString() // ServerName
	level := r.Uint32()
	if r.Err() != nil {
		return
	}
	w.Uint32(level)
	if level != 100 && level != 101 && level != 102 {
		unionNoArm(w, level, serverInfoArms)
		w.Uint32(errInvalidLevel)
		return
	}
	w.Pointer(true)
	w.Uint32(platformIDNT)
	w.Pointer(true) // sv10x_name
	if level >= 101 {
		w.Uint32(versionMajor)
		w.Uint32(versionMinor)
		w.Uint32(serverType)
		w.Pointer(true) // sv10x_comment
	}
	if level == 102 {
		w.Uint32(0xffffffff) // sv102_users: unlimited
		w.Uint32(15)         // sv102_disc: auto-disconnect minutes
		w.Uint32(0)          // sv102_hidden
		w.Uint32(240)        // sv102_announce: seconds
		w.Uint32(3000)       // sv102_anndelta: milliseconds
		w.Uint32(0)          // sv102_licenses
		w.Pointer(true)      // sv102_userpath
	}
	w.String(s.env.ServerName)
	if level >= 101 {
		w.String(s.env.Comment)
	}
	if level == 102 {
		w.String(`C:\`)
	}
	w.Uint32(errSuccess)
}
