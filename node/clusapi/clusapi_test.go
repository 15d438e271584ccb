package clusapi

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/smbcluster/smbcluster/node/ipc/dcerpc"
	"github.com/smbcluster/smbcluster/node/ipc/ndr"
)

// fakeCluster is a Cluster in memory.
type fakeCluster struct {
	mu    sync.Mutex
	state State
	by    string
	fail  bool
}

func (f *fakeCluster) Read(context.Context) (*State, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		return nil, errors.New("etcd unreachable")
	}
	s := f.state
	return &s, nil
}

func (f *fakeCluster) SetNetNameOnline(_ context.Context, online bool, user string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state.NetNameOnline, f.by = online, user
	return nil
}

func newFake() *fakeCluster {
	return &fakeCluster{state: State{Name: "SMBCLUSTER", NetNameOnline: true,
		Nodes: []Node{{"n1", NodeUp}, {"n2", NodeDown}, {"n3", NodePaused}},
		Addresses: []Address{
			{IP: "127.0.0.1", Home: "n1", Holder: "n1"},
			{IP: "127.0.0.2", Home: "n2", Holder: "n1"},
			{IP: "127.0.0.3", Home: "n3"},
		}}}
}

func newAssoc(c Cluster) *dcerpc.Interface {
	env := &Env{Cluster: c, Node: "n1", IsAdmin: func(u string) bool { return u == "admin" }}
	return env.Interface()
}

// call runs opnum as user and returns its [out] stub or fault.
func call(t *testing.T, i *dcerpc.Interface, user string, opnum uint16, in []byte) ([]byte, uint32) {
	t.Helper()
	ctx := context.Background()
	if user != "" {
		ctx = dcerpc.WithUser(ctx, user)
	}
	return i.CallContext(ctx, opnum, in)
}

func stringIn(s string) []byte {
	w := &ndr.Writer{}
	w.String(s)
	return w.Buf
}

// open opens a named object and returns Status and the handle.
func open(t *testing.T, i *dcerpc.Interface, opnum uint16, name string) (uint32, []byte) {
	t.Helper()
	out, fault := call(t, i, "user", opnum, stringIn(name))
	if fault != 0 || len(out) != 28 {
		t.Fatalf("open %q: fault %#x, %d bytes", name, fault, len(out))
	}
	return binary.LittleEndian.Uint32(out), out[8:28]
}

func result(out []byte) uint32 { return binary.LittleEndian.Uint32(out[len(out)-4:]) }

// resourceState decodes ApiGetResourceState's [out].
func resourceState(t *testing.T, out []byte) (state uint32, node, group string, status uint32) {
	t.Helper()
	r := ndr.NewReader(out)
	state = r.Uint32()
	node, _ = r.UniqueString()
	group, _ = r.UniqueString()
	r.Uint32()
	status = r.Uint32()
	if r.Err() != nil {
		t.Fatalf("GetResourceState [out] %x: %v", out, r.Err())
	}
	return
}

// TestNetNameOfflineOnline: the network name, opened by its name or as
// "Cluster Name", goes offline and back online for an administrator;
// anyone else gets ERROR_ACCESS_DENIED and the state stays.
func TestNetNameOfflineOnline(t *testing.T) {
	f := newFake()
	i := newAssoc(f)
	st, h := open(t, i, opOpenResource, "smbcluster")
	if st != errSuccess {
		t.Fatalf("OpenResource: %d", st)
	}
	out, _ := call(t, i, "user", opGetResourceState, h)
	if s, node, group, st := resourceState(t, out); s != ResourceOnline || node != "n1" || group != GroupName || st != 0 {
		t.Fatalf("state %d %q %q %d", s, node, group, st)
	}
	if out, _ := call(t, i, "user", opOfflineResource, h); result(out) != errAccessDenied {
		t.Fatalf("OfflineResource by a user: %d", result(out))
	}
	if out, _ := call(t, i, "", opOfflineResource, h); result(out) != errAccessDenied {
		t.Fatalf("OfflineResource unauthenticated: %d", result(out))
	}
	if out, _ := call(t, i, "admin", opOfflineResource, h); result(out) != errSuccess || f.state.NetNameOnline || f.by != "admin" {
		t.Fatalf("OfflineResource: %d, online %v by %q", result(out), f.state.NetNameOnline, f.by)
	}
	_, h2 := open(t, i, opOpenResource, "Cluster Name")
	out, _ = call(t, i, "user", opGetResourceState, h2)
	if s, _, _, _ := resourceState(t, out); s != ResourceOffline {
		t.Fatalf("state after offline: %d", s)
	}
	if out, _ := call(t, i, "admin", opOnlineResource, h2); result(out) != errSuccess || !f.state.NetNameOnline {
		t.Fatalf("OnlineResource: %d", result(out))
	}
	// An address's resource follows its node.
	_, hip := open(t, i, opOpenResource, "IP Address 127.0.0.3")
	out, _ = call(t, i, "user", opGetResourceState, hip)
	if s, node, _, _ := resourceState(t, out); s != ResourceOffline || node != "n1" {
		t.Fatalf("IP state %d %q", s, node)
	}
	if out, _ := call(t, i, "admin", opOfflineResource, hip); result(out) != errNotSupported {
		t.Fatalf("OfflineResource of an address: %d", result(out))
	}
	for _, hh := range [][]byte{h, h2, hip} {
		out, fault := call(t, i, "user", opCloseResource, hh)
		if fault != 0 || result(out) != 0 || !slices.Equal(out[:20], make([]byte, 20)) {
			t.Fatalf("CloseResource: %#x %x", fault, out)
		}
	}
	// A closed handle is not the association's any more.
	if _, fault := call(t, i, "user", opGetResourceState, h); fault != statusContextMismatch {
		t.Fatalf("closed handle: fault %#x", fault)
	}
	if st, _ := open(t, i, opOpenResource, "nothing"); st != errResourceNotFound {
		t.Fatalf("OpenResource of nothing: %d", st)
	}
}

// TestNodesAndEnum: node states as the model has them; CreateEnum lists
// nodes, resources and the group.
func TestNodesAndEnum(t *testing.T) {
	i := newAssoc(newFake())
	for name, want := range map[string]uint32{"n1": NodeUp, "N2": NodeDown, "n3": NodePaused} {
		st, h := open(t, i, opOpenNode, name)
		if st != errSuccess {
			t.Fatalf("OpenNode %s: %d", name, st)
		}
		out, fault := call(t, i, "user", opGetNodeState, h)
		if fault != 0 || binary.LittleEndian.Uint32(out) != want || result(out) != 0 {
			t.Fatalf("GetNodeState %s: %#x %x", name, fault, out)
		}
		// A node handle is no resource handle.
		if out, _ := call(t, i, "user", opGetResourceState, h); result(out) != errInvalidHandle {
			t.Fatalf("node handle as a resource: %x", out)
		}
	}
	if st, _ := open(t, i, opOpenNode, "n4"); st != errNodeNotFound {
		t.Fatalf("OpenNode n4: %d", st)
	}
	out, fault := call(t, i, "user", opCreateEnum, binary.LittleEndian.AppendUint32(nil, EnumNode|EnumResource|EnumGroup))
	if fault != 0 {
		t.Fatalf("CreateEnum fault %#x", fault)
	}
	r := ndr.NewReader(out)
	r.Pointer()
	r.Uint32()
	n := r.Uint32()
	types := make([]uint32, n)
	for k := range types {
		types[k] = r.Uint32()
		r.Pointer()
	}
	var names []string
	for range types {
		names = append(names, r.String())
	}
	r.Uint32()
	if st := r.Uint32(); r.Err() != nil || st != 0 {
		t.Fatalf("CreateEnum [out] %x: %v %d", out, r.Err(), st)
	}
	want := []string{"n1", "n2", "n3", "SMBCLUSTER", "IP Address 127.0.0.1", "IP Address 127.0.0.2", "IP Address 127.0.0.3", GroupName}
	if !slices.Equal(names, want) {
		t.Fatalf("CreateEnum: %q, want %q", names, want)
	}
	st, h := open(t, i, opOpenGroup, GroupName)
	out, _ = call(t, i, "user", opGetGroupState, h)
	if st != 0 || binary.LittleEndian.Uint32(out) != GroupPartialOnline {
		t.Fatalf("GetGroupState: %d %x", st, out)
	}
}

// TestClusterCalls: the cluster's name and version, OpenCluster and
// CloseCluster, an unreachable store, and what is refused.
func TestClusterCalls(t *testing.T) {
	f := newFake()
	i := newAssoc(f)
	out, _ := call(t, i, "user", opGetClusterName, nil)
	r := ndr.NewReader(out)
	name, _ := r.UniqueString()
	node, _ := r.UniqueString()
	if name != "SMBCLUSTER" || node != "n1" || r.Uint32() != 0 {
		t.Fatalf("GetClusterName: %q %q", name, node)
	}
	for _, op := range []uint16{opGetClusterVersion, opGetClusterVersion2} {
		out, fault := call(t, i, "user", op, nil)
		r := ndr.NewReader(out)
		if fault != 0 || r.Uint16() != versionMajor {
			t.Fatalf("version %d: %#x %x", op, fault, out)
		}
		if result(out) != 0 {
			t.Fatalf("version %d: %x", op, out)
		}
	}
	out, _ = call(t, i, "user", opOpenCluster, nil)
	if len(out) != 24 || binary.LittleEndian.Uint32(out) != 0 {
		t.Fatalf("OpenCluster: %x", out)
	}
	if out, fault := call(t, i, "user", opCloseCluster, out[4:]); fault != 0 || result(out) != 0 {
		t.Fatalf("CloseCluster: %#x %x", fault, out)
	}
	f.fail = true
	if st, _ := open(t, i, opOpenResource, "SMBCLUSTER"); st != errNotReady {
		t.Fatalf("store unreachable: %d", st)
	}
	if _, fault := call(t, i, "user", 0x30, nil); fault != dcerpc.StatusOpRangeError {
		t.Fatalf("opnum 0x30: fault %#x", fault)
	}
	if _, fault := call(t, i, "user", opOpenResource, []byte{1, 2}); fault != dcerpc.StatusBadStubData {
		t.Fatalf("short stub: fault %#x", fault)
	}
	if i.MinLevel != dcerpc.AuthLevelPrivacy {
		t.Fatalf("MinLevel %d", i.MinLevel)
	}
}

// TestHandleLimit: an association holds maxHandles handles at most.
func TestHandleLimit(t *testing.T) {
	i := newAssoc(newFake())
	for k := 0; k < maxHandles; k++ {
		if out, _ := call(t, i, "user", opOpenCluster, nil); binary.LittleEndian.Uint32(out) != 0 {
			t.Fatalf("open %d refused", k)
		}
	}
	if out, _ := call(t, i, "user", opOpenCluster, nil); binary.LittleEndian.Uint32(out) != errNoResources {
		t.Fatalf("open past the limit: %x", out)
	}
}

// TestConcurrentCalls: the interface runs one association's calls
// concurrently (a call reading the cluster holds up no other); opens
// and closes of handles at once keep the table whole (run with -race).
func TestConcurrentCalls(t *testing.T) {
	i := newAssoc(newFake())
	if !i.Concurrent {
		t.Fatal("the interface does not run calls concurrently")
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 50; k++ {
				st, h := open(t, i, opOpenNode, "n1")
				if st != 0 {
					t.Errorf("open of node n1: %#x", st)
					return
				}
				if _, fault := call(t, i, "user", opCloseNode, h); fault != 0 {
					t.Errorf("close of node n1: fault %#x", fault)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// FuzzCall: any opnum and stub is answered or faulted, never a panic.
func FuzzCall(f *testing.F) {
	f.Add(uint16(opOpenResource), stringIn("SMBCLUSTER"))
	f.Add(uint16(opCreateEnum), []byte{0xff, 0xff, 0xff, 0xff})
	f.Add(uint16(opGetResourceState), make([]byte, 20))
	f.Add(uint16(opOfflineResource), make([]byte, 24))
	f.Fuzz(func(t *testing.T, opnum uint16, in []byte) {
		i := newAssoc(newFake())
		// Open something so that a handle may be hit.
		call(t, i, "admin", opOpenResource, stringIn("SMBCLUSTER"))
		call(t, i, "admin", opnum%0x70, in)
	})
}
