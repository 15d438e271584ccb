package witness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net"
	"strings"
	"time"

	"github.com/smbcluster/smbcluster/node/ipc/dcerpc"
)

// Syntax is the witness interface, version 1.1 ([MS-SWN] 1.9).
var Syntax = dcerpc.SyntaxID{UUID: dcerpc.MustParseUUID("ccd8c074-d0e5-4a40-92b4-d074faa6ba28"), Major: 1, Minor: 1}

// Opnums ([MS-SWN] 3.1.4).
const (
	opGetInterfaceList = 0
	opRegister         = 1
	opUnRegister       = 2
	opAsyncNotify      = 3
	opRegisterEx       = 4
)

// Store keeps registrations where every node finds them: the cluster's
// etcd, or only the hub on a node of its own.
type Store interface {
	// Register records a new registration (the hub hears of it through
	// the store).
	Register(ctx context.Context, reg *Registration) error
	// Unregister deletes a registration.
	Unregister(ctx context.Context, id string) error
	// Waiting tells the store that a client waits (on) on this node for
	// registration id, or stopped; a registration nobody waits for is
	// dropped after a while.
	Waiting(id string, on bool)
}

// LocalStore is the Store of a node outside a cluster: the hub itself.
type LocalStore struct{ Hub *Hub }

func (s LocalStore) Register(_ context.Context, reg *Registration) error {
	s.Hub.Put(reg)
	return nil
}

func (s LocalStore) Unregister(_ context.Context, id string) error {
	s.Hub.Delete(id)
	return nil
}

func (LocalStore) Waiting(string, bool) {}

// Env is what the witness interface knows of its node and cluster.
type Env struct {
	Hub   *Hub
	Store Store
	// Node is this node's name: its own addresses are not offered as
	// witness interfaces to clients asking it.
	Node string
	// NetNames are the names a client may register for (the cluster's
	// NetBIOS and DNS names); matched without case, and with the DNS
	// suffix dropped. The cluster's addresses are accepted too.
	NetNames func() []string
	// ShareExists reports whether a share is served (RegisterEx).
	ShareExists func(name string) bool
	// Notified is called for every notification answered (metrics).
	Notified func(n *Notification)
	Now      func() time.Time
	Rand     io.Reader
	// MinLevel is the authentication level calls need; zero: packet
	// integrity, as Windows requires ([MS-SWN] 5.1).
	MinLevel uint8
}

// Interface returns the witness RPC interface.
func (e *Env) Interface() *dcerpc.Interface {
	lvl := e.MinLevel
	if lvl == 0 {
		lvl = dcerpc.AuthLevelIntegrity
	}
	return &dcerpc.Interface{Syntax: Syntax, MinLevel: lvl, CallContext: e.call, Concurrent: true, NDR64: true}
}

func (e *Env) call(ctx context.Context, opnum uint16, in []byte) ([]byte, uint32) {
	ndr64 := dcerpc.IsNDR64(ctx)
	switch opnum {
	case opGetInterfaceList:
		return encodeInterfaceList(e.interfaces(), ndr64), 0
	case opRegister, opRegisterEx:
		a, ok := decodeRegister(in, opnum == opRegisterEx, ndr64)
		if !ok {
			return nil, dcerpc.StatusBadStubData
		}
		h, status := e.register(ctx, &a, opnum == opRegisterEx)
		return encodeRegister(h, status), 0
	case opUnRegister:
		h, ok := decodeHandle(in)
		if !ok {
			return nil, dcerpc.StatusBadStubData
		}
		return encodeStatus(e.unregister(ctx, h)), 0
	case opAsyncNotify:
		h, ok := decodeHandle(in)
		if !ok {
			return nil, dcerpc.StatusBadStubData
		}
		n, status := e.asyncNotify(ctx, h)
		return encodeNotify(n, status, ndr64), 0
	}
	return nil, dcerpc.StatusOpRangeError
}

// interfaces is the WITNESS_INTERFACE_LIST ([MS-SWN] 3.1.4.1): every
// available address of the cluster, a witness interface unless it is this
// node's own.
func (e *Env) interfaces() []InterfaceInfo {
	group := ""
	if names := e.netNames(); len(names) > 0 {
		group = names[0]
	}
	var out []InterfaceInfo
	for _, r := range e.Hub.Resources() {
		if !r.Available {
			continue
		}
		out = append(out, InterfaceInfo{Group: group, State: StateAvailable, IP: r.IP, Witness: r.Node != e.Node})
	}
	return out
}

func (e *Env) netNames() []string {
	if e.NetNames == nil {
		return nil
	}
	return e.NetNames()
}

func (e *Env) netNameOK(name string) bool {
	short, _, _ := strings.Cut(name, ".")
	for _, n := range e.netNames() {
		if strings.EqualFold(n, name) || strings.EqualFold(n, short) {
			return true
		}
	}
	if ip := net.ParseIP(name); ip != nil {
		return e.resource(ip) != nil
	}
	return false
}

func (e *Env) resource(ip net.IP) *Resource {
	for _, r := range e.Hub.Resources() {
		if r.Available && r.IP.Equal(ip) {
			return &r
		}
	}
	return nil
}

// register serves WitnessrRegister and WitnessrRegisterEx ([MS-SWN]
// 3.1.4.2, 3.1.4.5).
func (e *Env) register(ctx context.Context, a *registerArgs, ex bool) (Handle, uint32) {
	var h Handle
	want := uint32(V1)
	if ex {
		want = V2
	}
	switch {
	case a.version != want:
		return h, errRevisionMismatch
	case !a.hasNetName || !a.hasIP || !a.hasClient, !e.netNameOK(a.netName):
		return h, errInvalidParameter
	case ex && a.hasShare && (e.ShareExists == nil || !e.ShareExists(a.shareName)):
		return h, errInvalidState
	}
	ip := net.ParseIP(a.ip)
	if ip == nil || e.resource(ip) == nil {
		return h, errInvalidState
	}
	rnd := e.Rand
	if rnd == nil {
		rnd = rand.Reader
	}
	if _, err := io.ReadFull(rnd, h[4:]); err != nil {
		return Handle{}, errNoResources
	}
	now := time.Now
	if e.Now != nil {
		now = e.Now
	}
	reg := &Registration{
		ID: hex.EncodeToString(h[4:]), Version: a.version, NetName: a.netName, ShareName: a.shareName,
		IP: ip, Client: a.client, Flags: a.flags, Timeout: a.timeout, Node: e.Node, Since: now().UTC(),
		ClientAddr: dcerpc.Peer(ctx),
	}
	if err := e.Store.Register(ctx, reg); err != nil {
		return Handle{}, errNoResources
	}
	return h, errSuccess
}

func handleID(h Handle) string { return hex.EncodeToString(h[4:]) }

// unregister serves WitnessrUnRegister ([MS-SWN] 3.1.4.3). An unknown
// handle gets ERROR_INVALID_PARAMETER, as from Windows (<4>).
func (e *Env) unregister(ctx context.Context, h Handle) uint32 {
	id := handleID(h)
	if _, ok := e.Hub.Get(id); !ok {
		return errInvalidParameter
	}
	if err := e.Store.Unregister(ctx, id); err != nil {
		return errNoResources
	}
	e.Hub.Delete(id)
	return errSuccess
}

// asyncNotify serves WitnessrAsyncNotify ([MS-SWN] 3.1.4.4): it waits for
// the registration's next notification, or its keep-alive timeout
// (RegisterEx, [MS-SWN] 3.1.4.5: 0 answers at once), or the client's going
// away.
func (e *Env) asyncNotify(ctx context.Context, h Handle) (*Notification, uint32) {
	id := handleID(h)
	reg, ok := e.Hub.Get(id)
	if !ok {
		return nil, errNotFound
	}
	if reg.Version == V2 {
		// The keep-alive timeout of RegisterEx bounds every wait; 0 asks
		// for what is pending now, ERROR_TIMEOUT if nothing is, as
		// Windows answers smbtorture's rpc.witness AsyncNotify_timeouts
		// (Samba's server waits without end instead).
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(reg.Timeout)*time.Second)
		defer cancel()
	}
	e.Store.Waiting(id, true)
	defer e.Store.Waiting(id, false)
	n, err := e.Hub.Wait(ctx, id)
	switch {
	case err == ErrUnknown:
		return nil, errNotFound
	case err == context.DeadlineExceeded:
		return nil, errTimeout
	case err != nil:
		return nil, errCancelled
	}
	if e.Notified != nil {
		e.Notified(n)
	}
	return n, errSuccess
}
