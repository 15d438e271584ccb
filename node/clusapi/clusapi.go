package clusapi

import (
	"context"
	"crypto/rand"
	"strings"
	"sync"

	"github.com/smbcluster/smbcluster/node/ipc/dcerpc"
)

// Syntax is the clusapi interface, version 3.0 ([MS-CMRP] 1.9).
var Syntax = dcerpc.SyntaxID{UUID: dcerpc.MustParseUUID("b97db8b2-4c63-11cf-bff6-08002be23f2f"), Major: 3}

// Opnums served ([MS-CMRP] 3.1.4.2); every other is answered
// nca_s_op_rng_error.
const (
	opOpenCluster        = 0x00
	opCloseCluster       = 0x01
	opGetClusterName     = 0x03
	opGetClusterVersion  = 0x04
	opCreateEnum         = 0x07
	opOpenResource       = 0x08
	opCloseResource      = 0x0b
	opGetResourceState   = 0x0c
	opGetResourceID      = 0x0e
	opGetResourceType    = 0x0f
	opOnlineResource     = 0x11
	opOfflineResource    = 0x12
	opOpenGroup          = 0x29
	opCloseGroup         = 0x2c
	opGetGroupState      = 0x2d
	opOpenNode           = 0x42
	opCloseNode          = 0x43
	opGetNodeState       = 0x44
	opGetClusterVersion2 = 0x66
)

// Win32 errors the calls return ([MS-ERREF] 2.2).
const (
	errSuccess          = 0
	errAccessDenied     = 5    // ERROR_ACCESS_DENIED
	errInvalidHandle    = 6    // ERROR_INVALID_HANDLE
	errNotReady         = 21   // ERROR_NOT_READY
	errNotSupported     = 50   // ERROR_NOT_SUPPORTED
	errNoResources      = 1450 // ERROR_NO_SYSTEM_RESOURCES
	errResourceNotFound = 5007 // ERROR_RESOURCE_NOT_FOUND
	errGroupNotFound    = 5013 // ERROR_GROUP_NOT_FOUND
	errNodeNotFound     = 5042 // ERROR_CLUSTER_NODE_NOT_FOUND
)

// statusContextMismatch is the fault for a context handle the association
// does not hold (nca_s_fault_context_mismatch, [MS-RPCE] 3.1.1.5.3.2.2.2).
const statusContextMismatch = 0x1c00001a

// maxHandles bounds the context handles one association holds.
const maxHandles = 1024

// Version reported by GetClusterVersion: Windows Server 2016's cluster
// (major 9, minor 0), so that clients take the 3.0 interface for granted.
const (
	versionMajor = 9
	versionMinor = 0
	versionBuild = 14393
	vendorID     = "smbcluster"
)

// Env configures the interface.
type Env struct {
	Cluster Cluster
	// Node is the name of the node serving: GetClusterName's NodeName and
	// the owner of the network name resource.
	Node string
	// IsAdmin reports whether an authenticated user may change the
	// cluster (OnlineResource, OfflineResource); nil: nobody may.
	IsAdmin func(user string) bool
}

// kind is what a context handle names.
type kind uint8

const (
	kindCluster kind = iota + 1
	kindResource
	kindGroup
	kindNode
)

type object struct {
	kind kind
	name string
}

// assoc is one association's state: its context handles. Calls of one
// association run concurrently (the interface is Concurrent: a call that
// reads the cluster from etcd holds up no other), so the table has a
// lock of its own.
type assoc struct {
	env *Env

	mu      sync.Mutex
	handles map[handle]object
}

// handle is a context handle ([MS-RPCE] 2.2.4.2 ndr_context_handle): four
// bytes of attributes (zero) and a GUID.
type handle [20]byte

// Interface returns the interface for one association, with a handle table
// of its own.
func (e *Env) Interface() *dcerpc.Interface {
	a := &assoc{env: e, handles: map[handle]object{}}
	return &dcerpc.Interface{Syntax: Syntax, MinLevel: dcerpc.AuthLevelPrivacy, CallContext: a.call, Concurrent: true}
}

type handler func(a *assoc, ctx context.Context, r *args) ([]byte, uint32)

// ops is the dispatch table: opnum → handler.
var ops = map[uint16]handler{
	opOpenCluster:        (*assoc).openCluster,
	opCloseCluster:       closeObject(kindCluster),
	opGetClusterName:     (*assoc).getClusterName,
	opGetClusterVersion:  clusterVersion(false),
	opCreateEnum:         (*assoc).createEnum,
	opOpenResource:       openObject(kindResource),
	opCloseResource:      closeObject(kindResource),
	opGetResourceState:   (*assoc).getResourceState,
	opGetResourceID:      resourceString(func(r Resource) string { return r.ID }),
	opGetResourceType:    resourceString(func(r Resource) string { return r.Type }),
	opOnlineResource:     resourceOnline(true),
	opOfflineResource:    resourceOnline(false),
	opOpenGroup:          openObject(kindGroup),
	opCloseGroup:         closeObject(kindGroup),
	opGetGroupState:      (*assoc).getGroupState,
	opOpenNode:           openObject(kindNode),
	opCloseNode:          closeObject(kindNode),
	opGetNodeState:       (*assoc).getNodeState,
	opGetClusterVersion2: clusterVersion(true),
}

func (a *assoc) call(ctx context.Context, opnum uint16, in []byte) ([]byte, uint32) {
	h, ok := ops[opnum]
	if !ok {
		return nil, dcerpc.StatusOpRangeError
	}
	return h(a, ctx, &args{in: in})
}

// newHandle adds an object to the table and returns its handle.
func (a *assoc) newHandle(o object) (handle, bool) {
	var h handle
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.handles) >= maxHandles {
		return h, false
	}
	if _, err := rand.Read(h[4:]); err != nil {
		return h, false
	}
	a.handles[h] = o
	return h, true
}

// lookup resolves a handle of kind k; a handle the association does not
// hold faults, one of another kind is ERROR_INVALID_HANDLE.
func (a *assoc) lookup(h handle, k kind) (object, uint32, uint32) {
	a.mu.Lock()
	o, ok := a.handles[h]
	a.mu.Unlock()
	if !ok {
		return o, 0, statusContextMismatch
	}
	if o.kind != k {
		return o, errInvalidHandle, 0
	}
	return o, errSuccess, 0
}

func (a *assoc) read(ctx context.Context) (*State, uint32) {
	s, err := a.env.Cluster.Read(ctx)
	if err != nil {
		return nil, errNotReady
	}
	return s, errSuccess
}

// openCluster serves ApiOpenCluster ([MS-CMRP] 3.1.4.2.1).
func (a *assoc) openCluster(_ context.Context, _ *args) ([]byte, uint32) {
	h, ok := a.newHandle(object{kind: kindCluster})
	if !ok {
		return encodeOpen(errNoResources, handle{}, false), 0
	}
	return encodeOpen(errSuccess, h, false), 0
}

// openObject serves ApiOpenResource, ApiOpenGroup and ApiOpenNode ([MS-CMRP]
// 3.1.4.2.9, 3.1.4.2.42, 3.1.4.2.67): a handle to the named object, or
// the error that it does not exist.
func openObject(k kind) handler {
	return func(a *assoc, ctx context.Context, r *args) ([]byte, uint32) {
		name := r.string()
		if r.err() {
			return nil, dcerpc.StatusBadStubData
		}
		s, st := a.read(ctx)
		if st == errSuccess {
			st = a.exists(s, k, name)
		}
		if st != errSuccess {
			return encodeOpen(st, handle{}, true), 0
		}
		h, ok := a.newHandle(object{kind: k, name: name})
		if !ok {
			return encodeOpen(errNoResources, handle{}, true), 0
		}
		return encodeOpen(errSuccess, h, true), 0
	}
}

func (a *assoc) exists(s *State, k kind, name string) uint32 {
	switch k {
	case kindResource:
		if _, ok := s.resource(name, a.env.Node); !ok {
			return errResourceNotFound
		}
	case kindGroup:
		if !strings.EqualFold(name, GroupName) {
			return errGroupNotFound
		}
	case kindNode:
		if _, ok := s.node(name); !ok {
			return errNodeNotFound
		}
	}
	return errSuccess
}

// closeObject serves the Close calls ([MS-CMRP] 3.1.4.2.2, 3.1.4.2.12,
// 3.1.4.2.45, 3.1.4.2.68): the handle is dropped and answered zeroed.
func closeObject(k kind) handler {
	return func(a *assoc, _ context.Context, r *args) ([]byte, uint32) {
		h := r.handle()
		if r.err() {
			return nil, dcerpc.StatusBadStubData
		}
		_, st, fault := a.lookup(h, k)
		if fault != 0 {
			return nil, fault
		}
		if st == errSuccess {
			a.mu.Lock()
			delete(a.handles, h)
			a.mu.Unlock()
			h = handle{}
		}
		return encodeClose(h, st), 0
	}
}

// getClusterName serves ApiGetClusterName ([MS-CMRP] 3.1.4.2.4).
func (a *assoc) getClusterName(ctx context.Context, _ *args) ([]byte, uint32) {
	s, st := a.read(ctx)
	if st != errSuccess {
		return encodeStrings(nil, st, false), 0
	}
	return encodeStrings([]string{s.Name, a.env.Node}, errSuccess, false), 0
}

// clusterVersion serves ApiGetClusterVersion and ApiGetClusterVersion2
// ([MS-CMRP] 3.1.4.2.5, 3.1.4.2.102).
func clusterVersion(v2 bool) handler {
	return func(*assoc, context.Context, *args) ([]byte, uint32) {
		return encodeVersion(v2), 0
	}
}

// createEnum serves ApiCreateEnum ([MS-CMRP] 3.1.4.2.8): the nodes,
// resources or groups, as asked by the bits of dwType.
func (a *assoc) createEnum(ctx context.Context, r *args) ([]byte, uint32) {
	typ := r.uint32()
	if r.err() {
		return nil, dcerpc.StatusBadStubData
	}
	s, st := a.read(ctx)
	if st != errSuccess {
		return encodeEnum(nil, st), 0
	}
	var entries []enumEntry
	if typ&EnumNode != 0 {
		for _, n := range s.Nodes {
			entries = append(entries, enumEntry{EnumNode, n.Name})
		}
	}
	if typ&EnumResType != 0 {
		entries = append(entries, enumEntry{EnumResType, TypeIP}, enumEntry{EnumResType, TypeNetName})
	}
	if typ&EnumResource != 0 {
		for _, res := range s.resources(a.env.Node) {
			entries = append(entries, enumEntry{EnumResource, res.Name})
		}
	}
	if typ&EnumGroup != 0 {
		entries = append(entries, enumEntry{EnumGroup, GroupName})
	}
	return encodeEnum(entries, errSuccess), 0
}

// resourceOf resolves a resource handle against the cluster now.
func (a *assoc) resourceOf(ctx context.Context, r *args) (Resource, uint32, uint32) {
	h := r.handle()
	if r.err() {
		return Resource{}, 0, dcerpc.StatusBadStubData
	}
	o, st, fault := a.lookup(h, kindResource)
	if fault != 0 || st != errSuccess {
		return Resource{}, st, fault
	}
	s, st := a.read(ctx)
	if st != errSuccess {
		return Resource{}, st, 0
	}
	res, ok := s.resource(o.name, a.env.Node)
	if !ok {
		return Resource{}, errResourceNotFound, 0
	}
	return res, errSuccess, 0
}

// getResourceState serves ApiGetResourceState ([MS-CMRP] 3.1.4.2.13).
func (a *assoc) getResourceState(ctx context.Context, r *args) ([]byte, uint32) {
	res, st, fault := a.resourceOf(ctx, r)
	if fault != 0 {
		return nil, fault
	}
	if st != errSuccess {
		return encodeResourceState(0, nil, st), 0
	}
	owner := res.Owner
	if owner == "" {
		owner = a.env.Node // offline: the group is still here
	}
	return encodeResourceState(res.State, []string{owner, GroupName}, errSuccess), 0
}

// resourceString serves ApiGetResourceId and ApiGetResourceType
// ([MS-CMRP] 3.1.4.2.15, 3.1.4.2.16).
func resourceString(f func(Resource) string) handler {
	return func(a *assoc, ctx context.Context, r *args) ([]byte, uint32) {
		res, st, fault := a.resourceOf(ctx, r)
		if fault != 0 {
			return nil, fault
		}
		if st != errSuccess {
			return encodeStrings(nil, st, true), 0
		}
		return encodeStrings([]string{f(res)}, errSuccess, true), 0
	}
}

// resourceOnline serves ApiOnlineResource and ApiOfflineResource
// ([MS-CMRP] 3.1.4.2.18, 3.1.4.2.19) for an administrator: the network
// name is taken online or offline cluster-wide; an address's resource
// follows its node and is not changed by hand (ERROR_NOT_SUPPORTED).
func resourceOnline(online bool) handler {
	return func(a *assoc, ctx context.Context, r *args) ([]byte, uint32) {
		res, st, fault := a.resourceOf(ctx, r)
		if fault != 0 {
			return nil, fault
		}
		user := dcerpc.User(ctx)
		switch {
		case st != errSuccess:
		case a.env.IsAdmin == nil || user == "" || !a.env.IsAdmin(user):
			st = errAccessDenied
		case res.Type != TypeNetName:
			st = errNotSupported
		case a.env.Cluster.SetNetNameOnline(ctx, online, user) != nil:
			st = errNotReady
		}
		return encodeRPCStatus(st), 0
	}
}

// getGroupState serves ApiGetGroupState ([MS-CMRP] 3.1.4.2.46).
func (a *assoc) getGroupState(ctx context.Context, r *args) ([]byte, uint32) {
	h := r.handle()
	if r.err() {
		return nil, dcerpc.StatusBadStubData
	}
	_, st, fault := a.lookup(h, kindGroup)
	if fault != 0 {
		return nil, fault
	}
	var s *State
	if st == errSuccess {
		s, st = a.read(ctx)
	}
	if st != errSuccess {
		return encodeGroupState(0, "", st), 0
	}
	return encodeGroupState(s.groupState(a.env.Node), a.env.Node, errSuccess), 0
}

// getNodeState serves ApiGetNodeState ([MS-CMRP] 3.1.4.2.69).
func (a *assoc) getNodeState(ctx context.Context, r *args) ([]byte, uint32) {
	h := r.handle()
	if r.err() {
		return nil, dcerpc.StatusBadStubData
	}
	o, st, fault := a.lookup(h, kindNode)
	if fault != 0 {
		return nil, fault
	}
	var s *State
	if st == errSuccess {
		s, st = a.read(ctx)
	}
	n, ok := Node{}, false
	if st == errSuccess {
		if n, ok = s.node(o.name); !ok {
			st = errNodeNotFound
		}
	}
	if st != errSuccess {
		return encodeNodeState(0, st), 0
	}
	return encodeNodeState(n.State, errSuccess), 0
}
