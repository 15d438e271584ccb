package integration

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/integration/framework"
	"github.com/smbcluster/smbcluster/node/peer"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
	"github.com/smbcluster/smbcluster/node/state"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
)

// listedOpen and listedLock are the JSON smbctl open ls and lock ls print.
type listedOpen struct {
	Node             string `json:"node"`
	Owner            string `json:"owner"`
	PersistentFileID uint64 `json:"persistent_file_id"`
	Path             string `json:"path"`
	Locks            []struct {
		Offset    uint64 `json:"offset"`
		Length    uint64 `json:"length"`
		Exclusive bool   `json:"exclusive"`
	} `json:"locks"`
}

type listedLock struct {
	Node      string `json:"node"`
	Owner     string `json:"owner"`
	Path      string `json:"path"`
	Offset    uint64 `json:"offset"`
	Length    uint64 `json:"length"`
	Exclusive bool   `json:"exclusive"`
}

// TestOpenAndLockListing: smbctl open ls and lock ls show, for an open
// held through node1 of a file whose state another node owns, node1 as
// the holder and that owner — the one etcd's shard record names for the
// file's shard, computed here from the file's id as the client sees it —
// and the open's byte-range locks as they come and go.
func TestOpenAndLockListing(t *testing.T) {
	c := framework.NewCluster(t, framework.ClusterOptions{Nodes: 3})
	c.MustSMBCtl(t, "share", "add", "data", t.TempDir())
	c.MustSMBCtl(t, "user", "add", "ivan", "--password", "Ivan-Pass-1")
	connect := func(n *framework.ClusterNode) *servertest.Conn {
		return clusterSession(t, n, "ivan", "Ivan-Pass-1", "data")
	}
	etcd, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	// ownerOf is the node etcd's shard record names for the file open as
	// fid on s: FileIdInformation gives the volume and file id the state
	// is keyed by.
	ownerOf := func(s *servertest.Conn, fid smb2.FileID) string {
		t.Helper()
		h, pdu := s.Call(smb2.CmdQueryInfo, &smb2.QueryInfoRequest{InfoType: smb2.InfoFile,
			FileInfoClass: fscc.FileIdInformation, OutputBufferLength: 64, FileID: fid})
		var qi smb2.QueryInfoResponse
		if smb2.Status(h.Status) != smb2.StatusSuccess || qi.Decode(pdu) != nil || len(qi.Buffer) < 16 {
			t.Fatalf("FileIdInformation: %v", smb2.Status(h.Status))
		}
		key := state.FileKey{Volume: binary.LittleEndian.Uint64(qi.Buffer[0:8]), FileID: binary.LittleEndian.Uint64(qi.Buffer[8:16])}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		resp, err := etcd.Get(ctx, statev1.ShardKey(peer.ShardOf(key)))
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 0 {
			return ""
		}
		var rec statev1.ShardRecord
		if err := proto.Unmarshal(resp.Kvs[0].Value, &rec); err != nil {
			t.Fatal(err)
		}
		return rec.Node
	}

	n1, n2 := c.Nodes[0], c.Nodes[1]
	a, b := connect(n1), connect(n2)
	// A file whose shard another node than node1 owns. (The shard does
	// not move while the file is open: a shard with state stays.)
	var name, owner string
	var fa smb2.FileID
	for i := 0; owner == "" || owner == n1.Name; i++ {
		if i > 0 {
			a.CloseFile(fa)
		}
		if i == 64 {
			t.Fatalf("no file of 64 is owned by another node than %s", n1.Name)
		}
		name = fmt.Sprintf("locked-%d.dat", i)
		if fa, err = a.Create(name); err != nil {
			t.Fatal(err)
		}
		owner = ownerOf(a, fa)
	}
	t.Logf("%s is owned by %s", name, owner)

	opens := func() []listedOpen {
		var l []listedOpen
		c.SMBCtlJSON(t, &l, "open", "ls", "--share", "data")
		return l
	}
	locks := func() []listedLock {
		var l []listedLock
		c.SMBCtlJSON(t, &l, "lock", "ls")
		return l
	}
	// The open appears, without locks, with its holder and owner.
	framework.WaitFor(t, clusterDeadline, "node1's open listed with its owner", func() bool {
		l := opens()
		return len(l) == 1 && l[0].Node == n1.Name && l[0].Owner == owner && l[0].Path == name && len(l[0].Locks) == 0
	})
	if l := locks(); len(l) != 0 {
		t.Fatalf("lock ls before any lock = %+v", l)
	}

	// node1's client locks [10, 30) exclusively, node2's client [100, 101) shared.
	lock := func(s *servertest.Conn, fid smb2.FileID, off, n uint64, flags uint32) {
		t.Helper()
		h, _ := s.Call(smb2.CmdLock, &smb2.LockRequest{FileID: fid, Locks: []smb2.LockElement{{Offset: off, Length: n, Flags: flags}}})
		if smb2.Status(h.Status) != smb2.StatusSuccess {
			t.Fatalf("LOCK [%d, +%d) %#x: %v", off, n, flags, smb2.Status(h.Status))
		}
	}
	lock(a, fa, 10, 20, smb2.LockFlagExclusive|smb2.LockFlagFailImmediately)
	fb, err := b.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	lock(b, fb, 100, 1, smb2.LockFlagShared|smb2.LockFlagFailImmediately)
	want := []listedLock{
		{Node: n1.Name, Owner: owner, Path: name, Offset: 10, Length: 20, Exclusive: true},
		{Node: n2.Name, Owner: owner, Path: name, Offset: 100, Length: 1},
	}
	var got []listedLock
	framework.WaitFor(t, clusterDeadline, "both locks listed", func() bool {
		got = locks()
		return slices.Equal(got, want)
	})
	// open ls agrees: each open carries its lock and the same owner.
	framework.WaitFor(t, clusterDeadline, "both opens listed with their locks", func() bool {
		l := opens()
		if len(l) != 2 {
			return false
		}
		for _, o := range l {
			if o.Owner != owner || len(o.Locks) != 1 {
				return false
			}
			k := o.Locks[0]
			if (o.Node == n1.Name) != (k.Offset == 10 && k.Length == 20 && k.Exclusive) {
				return false
			}
		}
		return true
	})
	if now := ownerOf(a, fa); now != owner {
		t.Fatalf("the file's owner moved from %s to %s while it was open", owner, now)
	}

	// Unlocked through node1, its lock leaves the listing; node2's stays.
	lock(a, fa, 10, 20, smb2.LockFlagUnlock)
	framework.WaitFor(t, clusterDeadline, "node1's lock gone from the listing", func() bool {
		got = locks()
		return slices.Equal(got, want[1:])
	})
	b.CloseFile(fb)
	a.CloseFile(fa)
	framework.WaitFor(t, clusterDeadline, "the opens gone", func() bool { return len(opens()) == 0 && len(locks()) == 0 })
}
