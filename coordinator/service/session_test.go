package service

import (
	"testing"
	"time"

	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

func (e *env) put(key string, m proto.Message) {
	e.t.Helper()
	b, _ := proto.Marshal(m)
	if _, err := etcd.Put(e.t.Context(), key, string(b)); err != nil {
		e.t.Fatal(err)
	}
}

func TestListSessionsAcrossNodes(t *testing.T) {
	e := newEnv(t)
	list, err := e.sessions.ListSessions(e.ctx, &adminv1.ListSessionsRequest{})
	if err != nil || len(list.Sessions) != 0 {
		t.Fatalf("ListSessions before any node published = %v, %v", list, err)
	}
	guid := []byte{0x33, 0x22, 0x11, 0x00, 0x55, 0x44, 0x77, 0x66, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff}
	e.put(statev1.SessionKey(0x42), &statev1.SessionRecord{
		SessionId: 0x42, Node: "n1", User: "alice", Domain: "SMBCLUSTER", ClientGuid: guid,
		ClientAddress: "192.0.2.1:50000", Dialect: 0x0311, CipherId: 4, SigningAlgorithmId: 2,
		SigningRequired: true, EncryptData: true,
	})
	e.put(statev1.SessionKey(0x43), &statev1.SessionRecord{SessionId: 0x43, Node: "n2", User: "bob", Dialect: 0x0300})
	e.publishChannel("n1", 0x42, "192.0.2.1:50000")
	e.publishChannel("n2", 0x42, "192.0.2.1:50001", "192.0.2.1:50002")
	e.publishChannel("n2", 0x43, "192.0.2.2:40000")

	list, err = e.sessions.ListSessions(e.ctx, &adminv1.ListSessionsRequest{})
	if err != nil || len(list.Sessions) != 2 {
		t.Fatalf("ListSessions = %v, %v", list, err)
	}
	s := list.Sessions[0]
	if s.SessionId != 0x42 || s.User != "alice" || s.Dialect != "3.1.1" || s.Cipher != "AES-256-GCM" ||
		s.SigningAlgorithm != "AES-GMAC" || !s.Signing || !s.Encryption || s.Node != "n1" ||
		s.ClientGuid != "{00112233-4455-6677-8899-aabbccddeeff}" || len(s.Channels) != 3 {
		t.Errorf("session 0x42 = %v", s)
	}
	if s := list.Sessions[1]; s.Dialect != "3.0" || s.SigningAlgorithm != "AES-CMAC" || s.Cipher != "" {
		t.Errorf("session 0x43 = %v", s)
	}
	list, _ = e.sessions.ListSessions(e.ctx, &adminv1.ListSessionsRequest{Node: "n1"})
	if len(list.Sessions) != 1 || list.Sessions[0].SessionId != 0x42 {
		t.Errorf("sessions on n1 = %v", list)
	}
	list, _ = e.sessions.ListSessions(e.ctx, &adminv1.ListSessionsRequest{User: "BOB"})
	if len(list.Sessions) != 1 || list.Sessions[0].SessionId != 0x43 {
		t.Errorf("bob's sessions = %v", list)
	}
	_, err = e.sessions.ListSessions(e.ctx, &adminv1.ListSessionsRequest{Node: "Bad Node"})
	wantCode(t, err, codes.InvalidArgument, "list with a bad node name")
}

func TestCloseSessionAndOpen(t *testing.T) {
	e := newEnv(t)
	_, err := e.sessions.CloseSession(e.ctx, &adminv1.CloseSessionRequest{SessionId: 0x99})
	wantCode(t, err, codes.NotFound, "close an unknown session")
	_, err = e.sessions.CloseOpen(e.ctx, &adminv1.CloseOpenRequest{Node: "n1", PersistentFileId: 5})
	wantCode(t, err, codes.NotFound, "close an unknown open")
	_, err = e.sessions.CloseSession(e.ctx, &adminv1.CloseSessionRequest{SessionId: 1, Timeout: durationpb.New(time.Hour)})
	wantCode(t, err, codes.InvalidArgument, "close with too long a timeout")

	e.put(statev1.SessionKey(0x42), &statev1.SessionRecord{SessionId: 0x42, Node: "n1", User: "alice"})
	e.put(statev1.OpenKey("n1", 5), &statev1.OpenRecord{PersistentFileId: 5, Node: "n1", SessionId: 0x42, Share: "data", Path: `dir\f.txt`, OplockLevel: 0xFF, LeaseState: 7})

	opens, err := e.sessions.ListOpens(e.ctx, &adminv1.ListOpensRequest{Share: "DATA"})
	if err != nil || len(opens.Opens) != 1 || opens.Opens[0].Oplock != "lease:RWH" || opens.Opens[0].Path != `dir\f.txt` {
		t.Fatalf("ListOpens = %v, %v", opens, err)
	}

	// A stand-in node agent: closes what it is asked to close.
	watch := etcd.Watch(e.ctx, statev1.ClosePrefix, clientv3.WithPrefix())
	go func() {
		for wr := range watch {
			for _, ev := range wr.Events {
				switch ev.Type {
				case clientv3.EventTypePut:
					target := statev1.SessionKey(0x42)
					if string(ev.Kv.Key) == statev1.CloseOpenKey("n1", 5) {
						target = statev1.OpenKey("n1", 5)
					}
					etcd.Delete(e.ctx, target)
				}
			}
		}
	}()
	op, err := e.sessions.CloseOpen(e.ctx, &adminv1.CloseOpenRequest{Node: "n1", PersistentFileId: 5, Timeout: durationpb.New(time.Minute)})
	if err != nil || !op.Closed {
		t.Errorf("CloseOpen = %v, %v", op, err)
	}
	cs, err := e.sessions.CloseSession(e.ctx, &adminv1.CloseSessionRequest{SessionId: 0x42, Timeout: durationpb.New(time.Minute)})
	if err != nil || !cs.Closed {
		t.Errorf("CloseSession = %v, %v", cs, err)
	}
	resp, err := etcd.Get(e.ctx, statev1.CloseSessionKey(0x42))
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Lease == 0 {
		t.Errorf("close request not on a lease: %v, %v", resp, err)
	}
}

// TestListOpensOwnerAndLocks: an open names the node that holds it, the
// node owning its file and its byte-range locks as the holder published
// them; an open without locks lists none.
func TestListOpensOwnerAndLocks(t *testing.T) {
	e := newEnv(t)
	e.put(statev1.OpenKey("n1", 5), &statev1.OpenRecord{PersistentFileId: 5, Node: "n1", SessionId: 0x42, Share: "data",
		Path: `f.txt`, OwnerNode: "n2", Locks: []*statev1.ByteRangeLock{
			{Offset: 0, Length: 10, Exclusive: true}, {Offset: 1 << 40, Length: 1}}})
	e.put(statev1.OpenKey("n3", 7), &statev1.OpenRecord{PersistentFileId: 7, Node: "n3", Share: "data", Path: `g.txt`, OwnerNode: "n3"})

	resp, err := e.sessions.ListOpens(e.ctx, &adminv1.ListOpensRequest{})
	if err != nil || len(resp.Opens) != 2 {
		t.Fatalf("ListOpens = %v, %v", resp, err)
	}
	got := map[string]*adminv1.Open{}
	for _, o := range resp.Opens {
		got[o.Node] = o
	}
	want := []*adminv1.ByteRangeLock{{Offset: 0, Length: 10, Exclusive: true}, {Offset: 1 << 40, Length: 1}}
	if o := got["n1"]; o.GetOwnerNode() != "n2" || len(o.GetLocks()) != len(want) ||
		!proto.Equal(o.Locks[0], want[0]) || !proto.Equal(o.Locks[1], want[1]) {
		t.Errorf("open held by n1 = %v, want owner n2 and locks %v", o, want)
	}
	if o := got["n3"]; o.GetOwnerNode() != "n3" || len(o.GetLocks()) != 0 {
		t.Errorf("open held by n3 = %v, want owner n3 and no locks", o)
	}
}
