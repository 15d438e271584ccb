package witness

import (
	"encoding/binary"
	"net"

	"github.com/smbcluster/smbcluster/node/ipc/ndr"
	"github.com/smbcluster/smbcluster/node/smb2/utf16le"
)

// Versions ([MS-SWN] 2.2.1.1).
const (
	V1 = 0x00010001 // WITNESS_V1
	V2 = 0x00020000 // WITNESS_V2
)

// Interface states ([MS-SWN] 2.2.2.2).
const (
	StateUnknown     = 0x0000
	StateAvailable   = 0x0001
	StateUnavailable = 0x00ff
)

// WITNESS_INTERFACE_INFO flags ([MS-SWN] 2.2.2.2).
const (
	InfoIPv4Valid = 0x01
	InfoIPv6Valid = 0x02
	InfoWitnessIf = 0x04
)

// Notification types ([MS-SWN] 2.2.2.4).
const (
	NotifyResourceChange = 1
	NotifyClientMove     = 2
	NotifyShareMove      = 3
	NotifyIPChange       = 4
)

// Resource change types ([MS-SWN] 2.2.2.5).
const (
	ResourceUnknown     = 0x00000000
	ResourceAvailable   = 0x00000001
	ResourceUnavailable = 0x000000ff
)

// IPADDR_INFO flags ([MS-SWN] 2.2.2.6).
const (
	AddrV4      = 0x01
	AddrV6      = 0x02
	AddrOnline  = 0x08
	AddrOffline = 0x10
)

// RegisterEx flags ([MS-SWN] 2.2.2.8).
const FlagIPNotification = 0x01 // WITNESS_REGISTER_IP_NOTIFICATION

// Win32 errors the calls return.
const (
	errSuccess          = 0
	errInvalidParameter = 87   // ERROR_INVALID_PARAMETER
	errRevisionMismatch = 1306 // ERROR_REVISION_MISMATCH
	errTimeout          = 1460 // ERROR_TIMEOUT
	errInvalidState     = 5023 // ERROR_INVALID_STATE
	errNotFound         = 1168 // ERROR_NOT_FOUND
	errNoResources      = 1450 // ERROR_NO_SYSTEM_RESOURCES
	errCancelled        = 1818 // RPC_S_CALL_CANCELLED
)

// groupNameChars is the size of InterfaceGroupName in characters.
const groupNameChars = 260

// InterfaceInfo is one WITNESS_INTERFACE_INFO ([MS-SWN] 2.2.2.2).
type InterfaceInfo struct {
	Group   string
	State   uint16
	IP      net.IP
	Witness bool // WITNESS_INFO_WITNESS_IF
}

func appendInterfaceInfo(w *ndr.Writer, i *InterfaceInfo) {
	w.Align(4)
	name := make([]byte, 2*groupNameChars)
	g := utf16le.Append(nil, i.Group)
	if len(g) > len(name)-2 {
		g = g[:len(name)-2]
	}
	copy(name, g)
	w.Bytes(name)
	w.Uint32(V2)
	w.Uint16(i.State)
	flags := uint32(0)
	var v4 [4]byte
	var v6 [16]byte
	if ip4 := i.IP.To4(); ip4 != nil {
		copy(v4[:], ip4)
		flags |= InfoIPv4Valid
	} else if ip16 := i.IP.To16(); ip16 != nil {
		copy(v6[:], ip16)
		flags |= InfoIPv6Valid
	}
	if i.Witness {
		flags |= InfoWitnessIf
	}
	w.Align(4)
	w.Bytes(v4[:])
	w.Bytes(v6[:])
	w.Uint32(flags)
}

// encodeInterfaceList is the [out] of WitnessrGetInterfaceList ([MS-SWN]
// 3.1.4.1): a pointer to a WITNESS_INTERFACE_LIST, then the result.
func encodeInterfaceList(list []InterfaceInfo, ndr64 bool) []byte {
	w := &ndr.Writer{NDR64: ndr64}
	w.Pointer(true) // *InterfaceList
	if ndr64 {
		w.Align(8) // the structure's alignment: its pointer's
	}
	w.Uint32(uint32(len(list)))
	w.Pointer(true) // InterfaceInfo
	w.Count(uint64(len(list)))
	for i := range list {
		appendInterfaceInfo(w, &list[i])
	}
	w.Uint32(errSuccess)
	return w.Buf
}

// Handle is a context handle ([MS-RPCE] 2.2.4.2 ndr_context_handle): 4
// bytes of attributes (zero) and a GUID.
type Handle [20]byte

// registerArgs are the [in] of WitnessrRegister and WitnessrRegisterEx.
type registerArgs struct {
	version                                uint32
	netName, shareName, ip, client         string
	hasNetName, hasShare, hasIP, hasClient bool
	flags, timeout                         uint32
}

// decodeRegister reads WitnessrRegister's [in] ([MS-SWN] 3.1.4.2), or
// WitnessrRegisterEx's when ex ([MS-SWN] 3.1.4.5).
func decodeRegister(in []byte, ex, ndr64 bool) (registerArgs, bool) {
	var a registerArgs
	r := ndr.NewReader(in)
	r.NDR64 = ndr64
	a.version = r.Uint32()
	a.netName, a.hasNetName = r.UniqueString()
	if ex {
		a.shareName, a.hasShare = r.UniqueString()
	}
	a.ip, a.hasIP = r.UniqueString()
	a.client, a.hasClient = r.UniqueString()
	if ex {
		a.flags = r.Uint32()
		a.timeout = r.Uint32()
	}
	return a, r.Err() == nil
}

func encodeRegister(h Handle, status uint32) []byte {
	w := &ndr.Writer{}
	w.Bytes(h[:])
	w.Uint32(status)
	return w.Buf
}

func decodeHandle(in []byte) (Handle, bool) {
	var h Handle
	r := ndr.NewReader(in)
	b := r.Bytes(len(h))
	if r.Err() != nil {
		return h, false
	}
	copy(h[:], b)
	return h, true
}

func encodeStatus(status uint32) []byte {
	return binary.LittleEndian.AppendUint32(nil, status)
}

// Notification is one RESP_ASYNC_NOTIFY ([MS-SWN] 2.2.2.4): a type and its
// messages.
type Notification struct {
	Type      uint32
	Resources []ResourceChange // NotifyResourceChange
	Addrs     []IPAddr         // the other types: one IPADDR_INFO_LIST
}

// ResourceChange is a RESOURCE_CHANGE ([MS-SWN] 2.2.2.5).
type ResourceChange struct {
	Name  string
	State uint32
}

// IPAddr is an IPADDR_INFO ([MS-SWN] 2.2.2.6).
type IPAddr struct {
	IP    net.IP
	Flags uint32 // AddrOnline or AddrOffline; the family flag is added
}

// messages encodes the MessageBuffer and returns it with its count.
func (n *Notification) messages() ([]byte, uint32) {
	var b []byte
	if n.Type == NotifyResourceChange {
		for _, rc := range n.Resources {
			name := utf16le.Append(nil, rc.Name)
			name = append(name, 0, 0)
			b = binary.LittleEndian.AppendUint32(b, uint32(8+len(name)))
			b = binary.LittleEndian.AppendUint32(b, rc.State)
			b = append(b, name...)
		}
		return b, uint32(len(n.Resources))
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(12+24*len(n.Addrs)))
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(n.Addrs)))
	for _, a := range n.Addrs {
		var v4 [4]byte
		var v6 [16]byte
		flags := a.Flags
		if ip4 := a.IP.To4(); ip4 != nil {
			copy(v4[:], ip4)
			flags |= AddrV4
		} else if ip16 := a.IP.To16(); ip16 != nil {
			copy(v6[:], ip16)
			flags |= AddrV6
		}
		b = binary.LittleEndian.AppendUint32(b, flags)
		b = append(b, v4[:]...)
		b = append(b, v6[:]...)
	}
	return b, 1
}

// encodeNotify is the [out] of WitnessrAsyncNotify ([MS-SWN] 3.1.4.4): a
// pointer to RESP_ASYNC_NOTIFY (NULL without one), then the result.
func encodeNotify(n *Notification, status uint32, ndr64 bool) []byte {
	w := &ndr.Writer{NDR64: ndr64}
	if n == nil {
		w.Pointer(false)
		w.Uint32(status)
		return w.Buf
	}
	msgs, num := n.messages()
	w.Pointer(true)
	if ndr64 {
		w.Align(8)
	}
	w.Uint32(n.Type)
	w.Uint32(uint32(len(msgs)))
	w.Uint32(num)
	w.Pointer(len(msgs) > 0)
	if len(msgs) > 0 {
		w.Count(uint64(len(msgs))) // conformance of MessageBuffer
		w.Bytes(msgs)
	}
	w.Uint32(status)
	return w.Buf
}
