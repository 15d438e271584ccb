package clusapi

import (
	"github.com/smbcluster/smbcluster/node/ipc/ndr"
)

// args reads a call's [in] stub (NDR, [MS-RPCE] 2.2.5 is not offered).
type args struct {
	in []byte
	r  *ndr.Reader
}

func (a *args) reader() *ndr.Reader {
	if a.r == nil {
		a.r = ndr.NewReader(a.in)
	}
	return a.r
}

// string reads a top-level [in, string] LPCWSTR: a reference pointer, so
// the conformant varying string alone.
func (a *args) string() string { return a.reader().String() }

func (a *args) uint32() uint32 { return a.reader().Uint32() }

// handle reads an [in] context handle.
func (a *args) handle() handle {
	var h handle
	copy(h[:], a.reader().Bytes(len(h)))
	return h
}

func (a *args) err() bool { return a.reader().Err() != nil }

// uniqueString writes an [out, string] LPWSTR*: the unique pointer's
// referent id and, at once (a top-level parameter's pointee), the string.
func uniqueString(w *ndr.Writer, s string, ok bool) {
	w.Pointer(ok)
	if ok {
		w.String(s)
	}
}

// encodeOpen is the [out] of the Open calls: Status, rpc_status (all but
// ApiOpenCluster) and the context handle, the return value, last.
func encodeOpen(status uint32, h handle, rpcStatus bool) []byte {
	w := &ndr.Writer{}
	w.Uint32(status)
	if rpcStatus {
		w.Uint32(0)
	}
	w.Bytes(h[:])
	return w.Buf
}

// encodeClose is the [out] of the Close calls: the handle, zeroed once
// closed, and the result.
func encodeClose(h handle, status uint32) []byte {
	w := &ndr.Writer{}
	w.Bytes(h[:])
	w.Uint32(status)
	return w.Buf
}

// encodeStrings is the [out] of a call returning strings (NULL each on
// failure), then rpc_status when asked, then the result.
func encodeStrings(strs []string, status uint32, rpcStatus bool) []byte {
	w := &ndr.Writer{}
	n := len(strs)
	if n == 0 {
		n = 2 // ApiGetClusterName's two, NULL
		if rpcStatus {
			n = 1
		}
	}
	for i := 0; i < n; i++ {
		s := ""
		if i < len(strs) {
			s = strs[i]
		}
		uniqueString(w, s, i < len(strs))
	}
	if rpcStatus {
		w.Uint32(0)
	}
	w.Uint32(status)
	return w.Buf
}

// encodeVersion is the [out] of ApiGetClusterVersion, or of
// ApiGetClusterVersion2 with its CLUSTER_OPERATIONAL_VERSION_INFO
// ([MS-CMRP] 2.2.3.9) and rpc_status.
func encodeVersion(v2 bool) []byte {
	w := &ndr.Writer{}
	w.Uint16(versionMajor)
	w.Uint16(versionMinor)
	w.Uint16(versionBuild)
	uniqueString(w, vendorID, true)
	uniqueString(w, "", true) // lpszCSDVersion
	if v2 {
		w.Pointer(true)
		version := uint32(versionMajor)<<16 | versionBuild // CLUSTER_MAKE_VERSION
		w.Uint32(20)                                       // dwSize
		w.Uint32(version)                                  // dwClusterHighestVersion
		w.Uint32(version)                                  // dwClusterLowestVersion
		w.Uint32(0)                                        // dwFlags: not mixed-version
		w.Uint32(0)                                        // dwReserved
		w.Uint32(0)                                        // rpc_status
	}
	w.Uint32(errSuccess)
	return w.Buf
}

// enumEntry is one ENUM_ENTRY ([MS-CMRP] 2.2.3.4).
type enumEntry struct {
	typ  uint32
	name string
}

// encodeEnum is the [out] of ApiCreateEnum: a pointer to ENUM_LIST (a
// conformant structure: the array's size first), rpc_status, the result.
func encodeEnum(entries []enumEntry, status uint32) []byte {
	w := &ndr.Writer{}
	w.Pointer(status == errSuccess)
	if status == errSuccess {
		w.Uint32(uint32(len(entries))) // conformance
		w.Uint32(uint32(len(entries))) // EntryCount
		for _, e := range entries {
			w.Uint32(e.typ)
			w.Pointer(true)
		}
		for _, e := range entries {
			w.String(e.name)
		}
	}
	w.Uint32(0)
	w.Uint32(status)
	return w.Buf
}

// encodeResourceState is the [out] of ApiGetResourceState: State,
// NodeName, GroupName, rpc_status, the result.
func encodeResourceState(state uint32, names []string, status uint32) []byte {
	w := &ndr.Writer{}
	w.Uint32(state)
	for i := 0; i < 2; i++ {
		if i < len(names) {
			uniqueString(w, names[i], true)
		} else {
			uniqueString(w, "", false)
		}
	}
	w.Uint32(0)
	w.Uint32(status)
	return w.Buf
}

// encodeRPCStatus is the [out] of a call with only rpc_status and a
// result.
func encodeRPCStatus(status uint32) []byte {
	w := &ndr.Writer{}
	w.Uint32(0)
	w.Uint32(status)
	return w.Buf
}

// encodeGroupState is the [out] of ApiGetGroupState: State, NodeName,
// rpc_status, the result.
func encodeGroupState(state uint32, node string, status uint32) []byte {
	w := &ndr.Writer{}
	w.Uint32(state)
	uniqueString(w, node, status == errSuccess)
	w.Uint32(0)
	w.Uint32(status)
	return w.Buf
}

// encodeNodeState is the [out] of ApiGetNodeState: State, rpc_status,
// the result.
func encodeNodeState(state, status uint32) []byte {
	w := &ndr.Writer{}
	w.Uint32(state)
	w.Uint32(0)
	w.Uint32(status)
	return w.Buf
}
