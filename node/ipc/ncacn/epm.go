package ncacn

import (
	"encoding/binary"
	"net"

	"github.com/smbcluster/smbcluster/node/ipc/dcerpc"
	"github.com/smbcluster/smbcluster/node/ipc/ndr"
)

// EPMSyntax is the endpoint mapper interface, epmp v3.0 ([C706] appendix O).
var EPMSyntax = dcerpc.SyntaxID{UUID: dcerpc.MustParseUUID("e1af8308-5d1f-11c9-91a4-08002b14a0fa"), Major: 3}

const (
	opEptMap          = 3          // ept_map
	eptNotRegistered  = 0x16c9a0d6 // EPT_S_NOT_REGISTERED
	maxTowers         = 500        // ept_map's range(0,500)
	maxTowerLength    = 1 << 12    // a tower of an interface is ~75 bytes
	protoUUID         = 0x0d       // tower floor: a UUID and major version
	protoNCACN        = 0x0b       // connection-oriented RPC
	protoTCP          = 0x07
	protoIP           = 0x09
	contextHandleSize = 20
)

// Endpoint is an interface served on a TCP port.
type Endpoint struct {
	Syntax dcerpc.SyntaxID
	Port   func(ip net.IP) int // the port at ip; 0: not served there
}

// EndpointMapper returns the endpoint mapper's interface for a connection
// accepted at local: ept_map answers a tower for each endpoint that serves
// the interface asked about, at local's IP address.
func EndpointMapper(local net.Addr, endpoints []Endpoint) *dcerpc.Interface {
	ip := net.IPv4zero
	if ta, ok := local.(*net.TCPAddr); ok && ta.IP.To4() != nil {
		ip = ta.IP.To4()
	}
	return &dcerpc.Interface{Syntax: EPMSyntax, Call: func(opnum uint16, in []byte) ([]byte, uint32) {
		if opnum != opEptMap {
			return nil, dcerpc.StatusOpRangeError
		}
		out, ok := eptMap(in, ip, endpoints)
		if !ok {
			return nil, dcerpc.StatusBadStubData
		}
		return out, 0
	}}
}

// eptMap serves ept_map ([C706] O.2.9; [MS-RPCE] 2.2.1.2).
func eptMap(in []byte, ip net.IP, endpoints []Endpoint) ([]byte, bool) {
	r := ndr.NewReader(in)
	if r.Pointer() { // object
		r.Bytes(16)
	}
	var tower []byte
	if r.Pointer() { // map_tower
		r.Uint32() // conformance
		n := r.Uint32()
		if n > maxTowerLength {
			return nil, false
		}
		tower = r.Bytes(int(n))
	}
	r.Align(4)
	r.Bytes(contextHandleSize) // entry_handle: every answer is complete, so always the first call
	max := r.Uint32()
	if r.Err() != nil {
		return nil, false
	}
	w := &ndr.Writer{}
	w.Buf = append(w.Buf, make([]byte, contextHandleSize)...) // entry_handle: no more results
	var found []byte
	if syn, ok := towerInterface(tower); ok && max > 0 {
		for _, e := range endpoints {
			if e.Syntax.UUID == syn.UUID && e.Syntax.Major == syn.Major {
				if p := e.Port(ip); p > 0 {
					found = buildTower(e.Syntax, ip, p)
				}
				break
			}
		}
	}
	num := uint32(0)
	if found != nil {
		num = 1
	}
	w.Uint32(num)
	w.Uint32(min(max, maxTowers)) // max_count
	w.Uint32(0)                   // offset
	w.Uint32(num)                 // actual_count
	if found != nil {
		w.Pointer(true)
		w.Uint32(uint32(len(found))) // conformance
		w.Uint32(uint32(len(found))) // tower_length
		w.Buf = append(w.Buf, found...)
		w.Align(4)
	}
	if found == nil {
		w.Uint32(eptNotRegistered)
	} else {
		w.Uint32(0)
	}
	return w.Buf, true
}

// towerInterface returns the interface of a protocol tower's first floor
// ([C706] appendix L).
func towerInterface(t []byte) (dcerpc.SyntaxID, bool) {
	var s dcerpc.SyntaxID
	if len(t) < 2 || binary.LittleEndian.Uint16(t) == 0 {
		return s, false
	}
	t = t[2:]
	if len(t) < 2 {
		return s, false
	}
	n := int(binary.LittleEndian.Uint16(t))
	if n != 19 || len(t) < 2+n || t[2] != protoUUID {
		return s, false
	}
	copy(s.UUID[:], t[3:19])
	s.Major = binary.LittleEndian.Uint16(t[19:])
	return s, true
}

// buildTower returns the five floors of ncacn_ip_tcp for an interface at
// ip:port.
func buildTower(s dcerpc.SyntaxID, ip net.IP, port int) []byte {
	b := binary.LittleEndian.AppendUint16(nil, 5)
	floor := func(lhs, rhs []byte) {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(lhs)))
		b = append(b, lhs...)
		b = binary.LittleEndian.AppendUint16(b, uint16(len(rhs)))
		b = append(b, rhs...)
	}
	uuidFloor := func(id dcerpc.SyntaxID) {
		lhs := append([]byte{protoUUID}, id.UUID[:]...)
		lhs = binary.LittleEndian.AppendUint16(lhs, id.Major)
		floor(lhs, binary.LittleEndian.AppendUint16(nil, id.Minor))
	}
	uuidFloor(s)
	uuidFloor(dcerpc.NDR)
	floor([]byte{protoNCACN}, []byte{0, 0})
	floor([]byte{protoTCP}, binary.BigEndian.AppendUint16(nil, uint16(port)))
	floor([]byte{protoIP}, ip.To4())
	return b
}
