package ipc

import (
	"github.com/smbcluster/smbcluster/node/ipc/dcerpc"
	"github.com/smbcluster/smbcluster/node/ipc/ndr"
)

// opNetrWkstaGetInfo is the wkssvc opnum of NetrWkstaGetInfo ([MS-WKST] 3.2.4.1).
const opNetrWkstaGetInfo = 0

var wkssvcSyntax = dcerpc.SyntaxID{UUID: dcerpc.MustParseUUID("6bffd098-a112-3610-9833-46c3f87e345a"), Major: 1}

// wkstaInfoArms are the cases of the WKSTA_INFO union ([MS-WKST] 2.2.4.1).
var wkstaInfoArms = []uint32{100, 101, 102, 502, 1013, 1018, 1046}

func wkssvcInterface(env *Env) *dcerpc.Interface {
	return &dcerpc.Interface{Syntax: wkssvcSyntax, Call: func(opnum uint16, in []byte) ([]byte, uint32) {
		if opnum != opNetrWkstaGetInfo {
			return nil, dcerpc.StatusOpRangeError
		}
		r := ndr.NewReader(in)
		w := &ndr.Writer{}
		wkstaGetInfo(env, r, w)
		if r.Err() != nil {
			return nil, dcerpc.StatusBadStubData
		}
		return w.Buf, 0
	}}
}

// wkstaGetInfo serves NetrWkstaGetInfo level 100 ([MS-WKST] 3.2.4.1, 2.2.5.1).
func wkstaGetInfo(env *Env, r *ndr.Reader, w *ndr.Writer) {
	r.UniqueString() // ServerName
	level := r.Uint32()
	if r.Err() != nil {
		return
	}
	w.Uint32(level)
	if level != 100 {
		unionNoArm(w, level, wkstaInfoArms)
		w.Uint32(errInvalidLevel)
		return
	}
	w.Pointer(true)
	w.Uint32(platformIDNT)
	w.Pointer(true) // wki100_computername
	w.Pointer(true) // wki100_langroup
	w.Uint32(versionMajor)
	w.Uint32(versionMinor)
	w.String(env.ServerName)
	w.String(env.Domain)
	w.Uint32(errSuccess)
}
