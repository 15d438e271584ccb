package smb2

// CreateContextSet is a set of the create contexts a server acts on.
type CreateContextSet uint16

// The create contexts of a CREATE request the server knows ([MS-SMB2]
// 2.2.13.2), as members of a CreateContextSet.
const (
	CtxEABuffer CreateContextSet = 1 << iota
	CtxSecurityDescriptor
	CtxDurableRequest
	CtxDurableReconnect
	CtxAllocationSize
	CtxQueryMaximalAccess
	CtxTimewarpToken
	CtxQueryOnDiskID
	CtxRequestLease
	CtxDurableRequestV2
	CtxDurableReconnectV2
	CtxAppInstanceID
)

// CreateContexts are the create contexts of a CREATE request, each
// decoded once (CreateRequest.Known). Of several contexts of one name the
// first counts, as a lookup by name finds it. A context in Has that does
// not decode is also in Bad, its field left zero: whether that fails the
// CREATE, and with which status, is for the one who reads it to say.
type CreateContexts struct {
	Has, Bad CreateContextSet
	// ShortName: a context's name is shorter than 4 bytes.
	ShortName bool

	EABuffer           []byte // ExtA: a FILE_FULL_EA_INFORMATION list, for fscc
	SecurityDescriptor []byte // SecD: a self-relative descriptor, for fscc
	AllocationSize     uint64 // AlSi
	Lease              LeaseRequest
	DurableReconnect   DurableReconnect
	DurableV2          DurableRequestV2
	DurableReconnectV2 DurableReconnectV2
	AppInstanceID      [16]byte // zero when absent or all zeros
}

// Present reports whether the request carries context c (decoded or not).
func (k *CreateContexts) Present(c CreateContextSet) bool { return k.Has&c != 0 }

// Valid reports whether the request carries context c and it decodes.
func (k *CreateContexts) Valid(c CreateContextSet) bool { return k.Has&c != 0 && k.Bad&c == 0 }

// Known returns the request's create contexts decoded, decoding them on
// the first call (again if Contexts was replaced since; an element of it
// must not be changed in place).
func (r *CreateRequest) Known() *CreateContexts {
	if r.known == nil || !sameSlice(r.Contexts, r.knownFrom) {
		k := decodeKnownContexts(r.Contexts)
		r.known, r.knownFrom = &k, r.Contexts
	}
	return r.known
}

func sameSlice(a, b []CreateContext) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// createContextNames maps the names of the contexts CreateContexts holds.
var createContextNames = map[string]CreateContextSet{
	CreateCtxEABuffer:                 CtxEABuffer,
	CreateCtxSecurityDescriptor:       CtxSecurityDescriptor,
	CreateCtxDurableHandleRequest:     CtxDurableRequest,
	CreateCtxDurableHandleReconnect:   CtxDurableReconnect,
	CreateCtxAllocationSize:           CtxAllocationSize,
	CreateCtxQueryMaximalAccess:       CtxQueryMaximalAccess,
	CreateCtxTimewarpToken:            CtxTimewarpToken,
	CreateCtxQueryOnDiskID:            CtxQueryOnDiskID,
	CreateCtxRequestLease:             CtxRequestLease,
	CreateCtxDurableHandleRequestV2:   CtxDurableRequestV2,
	CreateCtxDurableHandleReconnectV2: CtxDurableReconnectV2,
	CreateCtxAppInstanceID:            CtxAppInstanceID,
}

// decodeKnownContexts decodes the contexts of cs that CreateContexts holds.
func decodeKnownContexts(cs []CreateContext) CreateContexts {
	var k CreateContexts
	for _, c := range cs {
		if len(c.Name) < 4 {
			k.ShortName = true
		}
		id := createContextNames[c.Name]
		if id == 0 || k.Has&id != 0 {
			continue
		}
		k.Has |= id
		if !k.decode(id, c.Data) {
			k.Bad |= id
		}
	}
	return k
}

// decode decodes the data of context id into k.
func (k *CreateContexts) decode(id CreateContextSet, data []byte) bool {
	switch id {
	case CtxEABuffer:
		k.EABuffer = data
	case CtxSecurityDescriptor:
		k.SecurityDescriptor = data
	case CtxDurableRequest:
		return (&DurableRequest{}).Decode(data) == nil
	case CtxDurableReconnect:
		return k.DurableReconnect.Decode(data) == nil
	case CtxAllocationSize:
		if len(data) < 8 {
			return false
		}
		k.AllocationSize = le.Uint64(data)
	case CtxRequestLease:
		var l LeaseRequest
		if l.Decode(data) != nil {
			return false
		}
		k.Lease = l
	case CtxDurableRequestV2:
		var d DurableRequestV2
		if d.Decode(data) != nil {
			return false
		}
		k.DurableV2 = d
	case CtxDurableReconnectV2:
		var d DurableReconnectV2
		if d.Decode(data) != nil {
			return false
		}
		k.DurableReconnectV2 = d
	case CtxAppInstanceID:
		// StructureSize (20), Reserved, AppInstanceId ([MS-SMB2] 2.2.13.2.13)
		if len(data) < 20 || le.Uint16(data) != 20 {
			return false
		}
		copy(k.AppInstanceID[:], data[4:20])
	}
	return true
}
