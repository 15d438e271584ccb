package ncacn

import (
	"encoding/binary"
	"net"
	"testing"

	"github.com/smbcluster/smbcluster/node/ipc/dcerpc"
	"github.com/smbcluster/smbcluster/node/ipc/ndr"
)

// eptMapRequest is ept_map's [in] for a tower of syntax s.
func eptMapRequest(s dcerpc.SyntaxID, maxTowers uint32) []byte {
	tower := buildTower(s, net.IPv4(0, 0, 0, 0), 0)
	w := &ndr.Writer{}
	w.Pointer(false) // object
	w.Pointer(true)  // map_tower
	w.Uint32(uint32(len(tower)))
	w.Uint32(uint32(len(tower)))
	w.Bytes(tower)
	w.Align(4)
	w.Bytes(make([]byte, contextHandleSize))
	w.Uint32(maxTowers)
	return w.Buf
}

func TestEptMap(t *testing.T) {
	known := dcerpc.SyntaxID{UUID: dcerpc.MustParseUUID("ccd8c074-d0e5-4a40-92b4-d074faa6ba28"), Major: 1, Minor: 1}
	eps := []Endpoint{{Syntax: known, Port: func(ip net.IP) int {
		if ip.Equal(net.IPv4(192, 0, 2, 7)) {
			return 4321
		}
		return 0
	}}}
	out, ok := eptMap(eptMapRequest(known, 4), net.IPv4(192, 0, 2, 7).To4(), eps)
	if !ok {
		t.Fatal("ept_map refused")
	}
	r := ndr.NewReader(out)
	r.Bytes(contextHandleSize)
	if n := r.Uint32(); n != 1 {
		t.Fatalf("num_towers %d", n)
	}
	r.Uint32() // max_count
	r.Uint32() // offset
	r.Uint32() // actual_count
	r.Pointer()
	r.Uint32()
	tower := r.Bytes(int(r.Uint32()))
	r.Align(4)
	if st := r.Uint32(); st != 0 || r.Err() != nil {
		t.Fatalf("status %#x, %v", st, r.Err())
	}
	// Floors 4 and 5: TCP port 4321 and 192.0.2.7, big-endian.
	if got := tower[len(tower)-11 : len(tower)-9]; binary.BigEndian.Uint16(got) != 4321 {
		t.Errorf("port floor %x", got)
	}
	if got := net.IP(tower[len(tower)-4:]); !got.Equal(net.IPv4(192, 0, 2, 7)) {
		t.Errorf("address floor %v", got)
	}
	// Another interface, or the port not served at that address.
	for _, ip := range []net.IP{net.IPv4(192, 0, 2, 7), net.IPv4(192, 0, 2, 8)} {
		s := dcerpc.SyntaxID{UUID: dcerpc.MustParseUUID("12345678-1234-abcd-ef00-0123456789ab"), Major: 1}
		if ip.Equal(net.IPv4(192, 0, 2, 8)) {
			s = known
		}
		out, _ = eptMap(eptMapRequest(s, 4), ip.To4(), eps)
		if st := binary.LittleEndian.Uint32(out[len(out)-4:]); st != eptNotRegistered {
			t.Errorf("%v at %v: status %#x", s.UUID, ip, st)
		}
	}
}

// FuzzEptMap: the endpoint mapper answers or refuses any stub, never
// panics.
func FuzzEptMap(f *testing.F) {
	known := dcerpc.SyntaxID{UUID: dcerpc.MustParseUUID("ccd8c074-d0e5-4a40-92b4-d074faa6ba28"), Major: 1}
	f.Add(eptMapRequest(known, 1))
	eps := []Endpoint{{Syntax: known, Port: func(net.IP) int { return 1 }}}
	f.Fuzz(func(t *testing.T, in []byte) {
		eptMap(in, net.IPv4(127, 0, 0, 1).To4(), eps)
	})
}
