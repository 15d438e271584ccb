package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/coordinator/store"
	"github.com/smbcluster/smbcluster/node/auth"
	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/share"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
	"github.com/smbcluster/smbcluster/node/state"
	"github.com/smbcluster/smbcluster/node/vfs/memfs"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
)

// waitDeadline bounds every wait on a condition; none is slept through.
const waitDeadline = 20 * time.Second

// etcdEnv is an embedded etcd shared by the tests of this package.
var etcdEnv struct {
	once      sync.Once
	endpoints []string
	err       error
}

func endpoints(t *testing.T) []string {
	t.Helper()
	etcdEnv.once.Do(func() {
		dir, err := tempDir()
		if err != nil {
			etcdEnv.err = err
			return
		}
		etcdEnv.endpoints, _, etcdEnv.err = store.StartEmbedded(dir)
	})
	if etcdEnv.err != nil {
		t.Fatal(etcdEnv.err)
	}
	return etcdEnv.endpoints
}

// env is one node (a real server on loopback) and an etcd client acting
// as the coordinator. Every test uses its own node name.
type env struct {
	t       *testing.T
	name    string
	token   string
	cli     *clientv3.Client
	sealer  *statev1.Sealer
	srv     *server.Server
	control *server.Control
	shares  *memShares
	users   *memUsers
	addr    string
	files   OpenFiles // Node.Files, if set before start
	// linkSpeed is Config.LinkSpeed, if set before start.
	linkSpeed uint64
}

var testSecret = bytes.Repeat([]byte("s"), statev1.MinSecretLen)

func newEnv(t *testing.T, name string) *env {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints(t), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	sealer, _ := statev1.NewSealer(testSecret)
	e := &env{t: t, name: name, cli: cli, sealer: sealer, control: &server.Control{},
		shares: &memShares{m: map[string]*server.Share{}}, users: &memUsers{m: map[string][16]byte{}}}
	e.srv = server.New(server.Config{Users: e.users, Shares: e.shares, Control: e.control})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.addr = l.Addr().String()
	go e.srv.Serve(l)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		e.srv.Shutdown(ctx)
	})
	return e
}

// admit writes the node's record as smbctl node add does.
func (e *env) admit(name, addr string) string {
	e.t.Helper()
	token := statev1.NewJoinToken()
	e.put(statev1.NodeKey(name), &statev1.NodeRecord{Name: name, Addresses: []string{addr}, JoinTokenSha256: statev1.HashJoinToken(token)})
	return token
}

func (e *env) put(key string, m proto.Message, opts ...clientv3.OpOption) {
	e.t.Helper()
	v, err := proto.Marshal(m)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.cli.Put(context.Background(), key, string(v), opts...); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) del(key string) {
	e.t.Helper()
	if _, err := e.cli.Delete(context.Background(), key); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) exists(key string) bool {
	e.t.Helper()
	r, err := e.cli.Get(context.Background(), key, clientv3.WithCountOnly())
	if err != nil {
		e.t.Fatal(err)
	}
	return r.Count > 0
}

func (e *env) addUser(name, password string) {
	h := auth.NTHash(password)
	e.put(statev1.UserKey(name), &statev1.UserRecord{Name: name, NtHash: e.sealer.Seal(h[:], statev1.UserKey(name))})
}

func (e *env) addShare(name string) {
	e.put(statev1.ShareKey(name), &statev1.ShareRecord{Name: name, Path: "/" + name})
}

// start admits the node, joins and runs the agent until the test ends.
func (e *env) start() (*Agent, <-chan error) {
	e.t.Helper()
	e.token = e.admit(e.name, e.addr)
	a, err := New(Config{
		Endpoints: endpoints(e.t), Name: e.name, JoinToken: e.token, Sealer: e.sealer,
		LeaseTTL: 2 * time.Second, SyncInterval: 50 * time.Millisecond, LinkSpeed: e.linkSpeed,
	}, Node{Server: e.srv, Control: e.control, Shares: e.shares, Users: e.users, Files: e.files})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := a.Join(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	finished := make(chan struct{})
	go func() {
		done <- a.Run(ctx)
		close(finished)
	}()
	e.t.Cleanup(func() {
		cancel()
		<-finished
		a.Leave(context.Background())
	})
	return a, done
}

// waitFor polls cond until it holds or waitDeadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitDeadline)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

func TestJoinRefusesNodesNotAdmitted(t *testing.T) {
	e := newEnv(t, "refused")
	cfg := Config{Endpoints: endpoints(t), Name: "refused", JoinToken: statev1.NewJoinToken(), Sealer: e.sealer}
	node := Node{Server: e.srv, Control: e.control, Shares: e.shares, Users: e.users}
	a, err := New(cfg, node)
	if err != nil {
		t.Fatal(err)
	}
	err = a.Join(context.Background())
	a.Leave(context.Background())
	if !errors.Is(err, ErrNotAdmitted) || !strings.Contains(err.Error(), "run smbctl node add refused") {
		t.Fatalf("join of a node never admitted: %v", err)
	}
	e.admit("refused", e.addr)
	a, _ = New(cfg, node)
	err = a.Join(context.Background())
	a.Leave(context.Background())
	if !errors.Is(err, ErrNotAdmitted) || !strings.Contains(err.Error(), "join token does not match") {
		t.Fatalf("join with another node's token: %v", err)
	}
	if e.exists(statev1.NodeLiveKey("refused")) || e.exists(statev1.NodeEpochKey("refused")) {
		t.Error("a refused node published a live record or an epoch")
	}
}

func TestJoinBumpsEpochAndLeaveRevokes(t *testing.T) {
	e := newEnv(t, "epochs")
	token := e.admit("epochs", e.addr)
	for want := uint64(1); want <= 2; want++ {
		a, err := New(Config{Endpoints: endpoints(t), Name: "epochs", JoinToken: token, Sealer: e.sealer, Version: "test"},
			Node{Server: e.srv, Control: e.control, Shares: e.shares, Users: e.users})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Join(context.Background()); err != nil {
			t.Fatal(err)
		}
		if a.Epoch() != want {
			t.Errorf("join %d: epoch %d", want, a.Epoch())
		}
		r, err := e.cli.Get(context.Background(), statev1.NodeLiveKey("epochs"))
		if err != nil || len(r.Kvs) != 1 {
			t.Fatalf("live record: %v %v", r, err)
		}
		live := &statev1.NodeLiveRecord{}
		proto.Unmarshal(r.Kvs[0].Value, live)
		if live.Epoch != want || r.Kvs[0].Lease == 0 || live.Version != "test" || len(live.Addresses) != 1 || live.Addresses[0] != e.addr {
			t.Errorf("live record %v (lease %x)", live, r.Kvs[0].Lease)
		}
		a.Leave(context.Background())
		if e.exists(statev1.NodeLiveKey("epochs")) {
			t.Error("live record outlives Leave")
		}
	}
}

// TestConfigurationAppliesLive: shares and users follow etcd while the
// node serves; sessions are published with the key sealed; deleting a
// share ends its trees and deleting a user ends the user's sessions.
func TestConfigurationAppliesLive(t *testing.T) {
	e := newEnv(t, "config")
	e.addShare("data")
	e.addUser("alice", "Alice-1")
	e.start()
	c := servertest.Connect(t, e.addr, "alice", "Alice-1", "data", smb2.Dialect311)
	id := c.Session.ID
	waitFor(t, "the session record", func() bool { return e.exists(statev1.SessionKey(id)) })
	r, _ := e.cli.Get(context.Background(), statev1.SessionKey(id))
	rec := &statev1.SessionRecord{}
	proto.Unmarshal(r.Kvs[0].Value, rec)
	key, err := e.sealer.Open(rec.SessionKey, statev1.SessionKey(id))
	if err != nil || !bytes.Equal(key, c.Session.Key) || rec.User != "alice" || rec.Node != "config" || rec.NodeEpoch != 1 {
		t.Errorf("session record %v: key %x (%v), want %x", rec, key, err, c.Session.Key)
	}
	if !e.exists(statev1.ChannelKey("config", id)) {
		t.Error("no channel record")
	}

	e.addShare("more")
	waitFor(t, "share more", func() bool { _, ok := e.shares.Lookup("more"); return ok })
	e.del(statev1.ShareKey("data"))
	waitFor(t, "share data to go", func() bool { _, ok := e.shares.Lookup("data"); return !ok })
	if _, err := c.Create("f"); err != smb2.StatusNetworkNameDeleted {
		t.Errorf("CREATE on a deleted share's tree: %v, want STATUS_NETWORK_NAME_DELETED", err)
	}

	e.addUser("alice", "Alice-2")
	waitFor(t, "the new password", func() bool { h, _ := e.users.NTHash("alice", ""); return h == auth.NTHash("Alice-2") })
	if _, err := c.TreeConnect("more"); err != nil {
		t.Errorf("a new password ended a session: %v", err)
	}
	e.del(statev1.UserKey("alice"))
	waitFor(t, "the user's session to end", func() bool { return len(e.srv.Sessions()) == 0 })
	if _, err := c.TreeConnect("more"); err != smb2.StatusUserSessionDeleted {
		t.Errorf("TREE_CONNECT after the user was deleted: %v", err)
	}
	waitFor(t, "the session record to go", func() bool {
		return !e.exists(statev1.SessionKey(id)) && !e.exists(statev1.ChannelKey("config", id))
	})
	c2 := servertest.Dial(t, e.addr)
	if err := c2.Negotiate(smb2.Dialect311); err != nil {
		t.Fatal(err)
	}
	if err := c2.SessionSetup("alice", "Alice-2"); err != smb2.StatusLogonFailure {
		t.Errorf("logon of a deleted user: %v, want STATUS_LOGON_FAILURE", err)
	}
}

// offered returns the IPs FSCTL_QUERY_NETWORK_INTERFACE_INFO lists.
func offered(t *testing.T, c *servertest.Conn) []string {
	t.Helper()
	out, err := c.Ioctl(smb2.FsctlQueryNetworkInterfaceInfo, smb2.AnyFileID, nil, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		return nil // nothing offered
	}
	ifs, err := fscc.DecodeNetworkInterfaces(out)
	if err != nil {
		t.Fatal(err)
	}
	var ips []string
	for _, i := range ifs {
		ips = append(ips, i.IP.String())
	}
	return ips
}

// TestDrainAndOffers: a node offers clients its own addresses and its
// live peers' (offerPeers); a draining node refuses new sessions and
// leaves the offer (its peers stay in it).
func TestDrainAndOffers(t *testing.T) {
	e := newEnv(t, "drain")
	e.addShare("drainshare")
	e.addUser("bob", "Bob-1")
	e.admit("peer", "127.0.0.2:445")
	lease, err := e.cli.Grant(context.Background(), 30)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.cli.Revoke(context.Background(), lease.ID) })
	e.put(statev1.NodeLiveKey("peer"), &statev1.NodeLiveRecord{Name: "peer", Addresses: []string{"127.0.0.2:445"}}, clientv3.WithLease(lease.ID))
	e.start()
	c := servertest.Connect(t, e.addr, "bob", "Bob-1", "drainshare", smb2.Dialect311)
	waitFor(t, "the node's own address and its peer's offered", func() bool { return strings.Join(offered(t, c), " ") == "127.0.0.1 127.0.0.2" })

	rec := &statev1.NodeRecord{Name: "drain", Addresses: []string{e.addr}, JoinTokenSha256: statev1.HashJoinToken(e.token), Draining: true}
	e.put(statev1.NodeKey("drain"), rec)
	waitFor(t, "the draining node to leave the offer", func() bool { return strings.Join(offered(t, c), " ") == "127.0.0.2" })
	c2 := servertest.Dial(t, e.addr)
	if err := c2.Negotiate(smb2.Dialect311); err != nil {
		t.Fatal(err)
	}
	if err := c2.SessionSetup("bob", "Bob-1"); err != smb2.StatusRequestNotAccepted {
		t.Errorf("new session on a draining node: %v, want STATUS_REQUEST_NOT_ACCEPTED", err)
	}
	if _, err := c.Create("still-served"); err != nil {
		t.Errorf("existing session on a draining node: %v", err)
	}
	rec.Draining = false
	e.put(statev1.NodeKey("drain"), rec)
	waitFor(t, "resumed", func() bool { return e.control.Admission() == server.AdmitAll })
	if err := c2.SessionSetup("bob", "Bob-1"); err != nil {
		t.Errorf("new session after resume: %v", err)
	}
	waitFor(t, "the resumed node's own address offered again", func() bool { return strings.Join(offered(t, c), " ") == "127.0.0.1 127.0.0.2" })
}

// TestLeaseLossAndRemoval: a node whose lease is revoked is fenced (its
// connections end), joins again with the next epoch and serves and
// publishes again; a removed node leaves and admits nothing.
func TestLeaseLossAndRemoval(t *testing.T) {
	e := newEnv(t, "lease")
	e.addShare("leaseshare")
	e.addUser("carol", "Carol-1")
	a, done := e.start()
	c := servertest.Connect(t, e.addr, "carol", "Carol-1", "leaseshare", smb2.Dialect311)
	id := c.Session.ID
	waitFor(t, "the session record", func() bool { return e.exists(statev1.SessionKey(id)) })
	first := a.Fence()
	r, _ := e.cli.Get(context.Background(), statev1.NodeLiveKey("lease"))
	if _, err := e.cli.Revoke(context.Background(), clientv3.LeaseID(r.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitClosed(); err != nil {
		t.Errorf("the connection of a node that lost its lease: %v", err)
	}
	if first.Valid() || !errors.Is(first.Err(), errLeaseLost) {
		t.Errorf("the first incarnation after the lease was revoked: valid %v, %v", first.Valid(), first.Err())
	}
	waitFor(t, "epoch 2", func() bool {
		r, _ := e.cli.Get(context.Background(), statev1.NodeEpochKey("lease"))
		return len(r.Kvs) == 1 && string(r.Kvs[0].Value) == "2" && a.Fence().Valid()
	})
	waitFor(t, "admission again", func() bool { return e.control.Admission() == server.AdmitAll })
	c = servertest.Connect(t, e.addr, "carol", "Carol-1", "leaseshare", smb2.Dialect311)
	id = c.Session.ID
	waitFor(t, "the live record and the new session", func() bool {
		return e.exists(statev1.NodeLiveKey("lease")) && e.exists(statev1.SessionKey(id))
	})
	e.del(statev1.NodeKey("lease"))
	select {
	case err := <-done:
		if !errors.Is(err, ErrRemoved) {
			t.Errorf("Run after removal: %v", err)
		}
	case <-time.After(waitDeadline):
		t.Fatal("Run did not return after the node was removed")
	}
	if e.srv.AcceptsConnections() || e.control.Admission() != server.AdmitNothing {
		t.Error("a removed node still admits work")
	}
}

// TestCloseRequests: close requests for a session and an open of this node
// are acted on and their records deleted.
func TestCloseRequests(t *testing.T) {
	e := newEnv(t, "closer")
	e.addShare("closeshare")
	e.addUser("dave", "Dave-1")
	e.start()
	c := servertest.Connect(t, e.addr, "dave", "Dave-1", "closeshare", smb2.Dialect311)
	fid, err := c.Create("file")
	if err != nil {
		t.Fatal(err)
	}
	key := statev1.OpenKey("closer", fid.Persistent)
	waitFor(t, "the open record", func() bool { return e.exists(key) })
	e.put(statev1.CloseOpenKey("closer", fid.Persistent), &statev1.CloseRequest{Reason: "test"})
	waitFor(t, "the open record to go", func() bool { return !e.exists(key) })
	if _, err := c.Read(fid, 0, 1); err != smb2.StatusFileClosed {
		t.Errorf("READ of a closed open: %v, want STATUS_FILE_CLOSED", err)
	}
	id := c.Session.ID
	e.put(statev1.CloseSessionKey(id), &statev1.CloseRequest{Reason: "test"})
	waitFor(t, "the session record to go", func() bool { return !e.exists(statev1.SessionKey(id)) })
	if _, err := c.TreeConnect("closeshare"); err != smb2.StatusUserSessionDeleted {
		t.Errorf("TREE_CONNECT on a closed session: %v", err)
	}
}

// describer is a node's OpenFiles whose answers the test sets: the owner
// of a disk share's open's file, and its locks.
type describer struct {
	mu    sync.Mutex
	owner string
	locks []state.Lock
	calls int // Describe calls for disk opens
}

func (d *describer) Describe(h server.Handle) (string, []state.Lock) {
	if share.StateOpen(h) == nil {
		return "", nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls++
	return d.owner, slices.Clone(d.locks)
}

func (d *describer) set(owner string, locks ...state.Lock) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.owner, d.locks = owner, locks
}

// sweeps waits until the agent has described the opens n more times.
func (d *describer) sweeps(t *testing.T, n int) {
	t.Helper()
	d.mu.Lock()
	until := d.calls + n
	d.mu.Unlock()
	waitFor(t, fmt.Sprintf("%d sweeps", n), func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.calls >= until
	})
}

// TestOpenRecordOwnerAndLocks: an open's record names the owner of its
// file and its byte-range locks, and is written again when they change —
// only then, whatever the number of sweeps.
func TestOpenRecordOwnerAndLocks(t *testing.T) {
	e := newEnv(t, "describer")
	e.addShare("lockshare")
	e.addUser("lena", "Lena-1")
	d := &describer{owner: "node-a"}
	e.files = d
	e.start()
	c := servertest.Connect(t, e.addr, "lena", "Lena-1", "lockshare", smb2.Dialect311)
	fid, err := c.Create("file")
	if err != nil {
		t.Fatal(err)
	}
	key := statev1.OpenKey("describer", fid.Persistent)
	record := func() (*statev1.OpenRecord, int64) {
		r, err := e.cli.Get(context.Background(), key)
		if err != nil || len(r.Kvs) == 0 {
			return nil, 0
		}
		var rec statev1.OpenRecord
		if err := proto.Unmarshal(r.Kvs[0].Value, &rec); err != nil {
			t.Fatal(err)
		}
		return &rec, r.Kvs[0].ModRevision
	}
	// written waits for the record to hold owner and locks, then checks
	// that further sweeps leave it alone.
	written := func(owner string, locks ...*statev1.ByteRangeLock) {
		t.Helper()
		var rev int64
		waitFor(t, "the open record with owner "+owner, func() bool {
			rec, r := record()
			if rec == nil || rec.OwnerNode != owner || len(rec.Locks) != len(locks) {
				return false
			}
			for i := range locks {
				if !proto.Equal(rec.Locks[i], locks[i]) {
					return false
				}
			}
			rev = r
			return true
		})
		d.sweeps(t, 3)
		if _, r := record(); r != rev {
			t.Fatalf("the open record was written again (revision %d, then %d) though nothing changed", rev, r)
		}
	}
	written("node-a")
	d.set("node-a", state.Lock{Offset: 0, Length: 10, Exclusive: true}, state.Lock{Offset: 100, Length: 1})
	written("node-a", &statev1.ByteRangeLock{Offset: 0, Length: 10, Exclusive: true}, &statev1.ByteRangeLock{Offset: 100, Length: 1})
	d.set("node-b", state.Lock{Offset: 100, Length: 1})
	written("node-b", &statev1.ByteRangeLock{Offset: 100, Length: 1})
	d.set("node-b")
	written("node-b")
}

// memShares is a share table over memory file systems.
type memShares struct {
	mu sync.Mutex
	m  map[string]*server.Share
}

func (s *memShares) Lookup(name string) (*server.Share, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sh, ok := s.m[strings.ToLower(name)]
	return sh, ok
}

func (s *memShares) List() []*server.Share {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*server.Share
	for _, sh := range s.m {
		out = append(out, sh)
	}
	return out
}

func (s *memShares) Put(rec *statev1.ShareRecord, encryptAll bool) (*server.Share, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.m[strings.ToLower(rec.Name)]
	s.m[strings.ToLower(rec.Name)] = &server.Share{Name: rec.Name, Path: rec.Path,
		Encrypt: rec.EncryptData || encryptAll, Backend: share.NewDisk(rec.Name, memfs.New(), rec.ReadOnly, nil)}
	return old, nil
}

func (s *memShares) Delete(name string) (*server.Share, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sh, ok := s.m[strings.ToLower(name)]
	delete(s.m, strings.ToLower(name))
	return sh, ok
}

func (s *memShares) Release(*server.Share) {}

// memUsers is a user table.
type memUsers struct {
	mu sync.Mutex
	m  map[string][16]byte
}

func (u *memUsers) NTHash(user, _ string) ([16]byte, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	h, ok := u.m[strings.ToLower(user)]
	return h, ok
}

func (u *memUsers) SetUser(name string, h [16]byte) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.m[name] = h
}

func (u *memUsers) SetPrincipals(name string, principals []string) {}

func (u *memUsers) DeleteUser(name string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.m, name)
}

var etcdDir string

func tempDir() (string, error) {
	d, err := os.MkdirTemp("", "cluster-etcd-")
	etcdDir = d
	return d, err
}

func TestMain(m *testing.M) {
	code := m.Run()
	if etcdDir != "" {
		os.RemoveAll(etcdDir)
	}
	os.Exit(code)
}

// TestPublishWaitsForTheRecords: Publish returns once what the node holds
// at the call is in etcd (a persistent handle's CREATE waits on it), not
// at the next sweep; several at once all return.
func TestPublishWaitsForTheRecords(t *testing.T) {
	e := newEnv(t, "publish")
	e.addShare("data")
	e.addUser("alice", "Alice-1")
	a, _ := e.start()
	for i := range 5 {
		c := servertest.Connect(t, e.addr, "alice", "Alice-1", "data", smb2.Dialect311)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		errs := make(chan error, 3)
		for range 3 {
			go func() { errs <- a.Publish(ctx) }()
		}
		for range 3 {
			if err := <-errs; err != nil {
				t.Fatalf("Publish %d: %v", i, err)
			}
		}
		cancel()
		if !e.exists(statev1.SessionKey(c.Session.ID)) {
			t.Fatalf("after Publish returned, session %d is not in etcd", i)
		}
	}
}
