package integration

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/cli/smbc"
	"github.com/smbcluster/smbcluster/integration/framework"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// TestCreateGUIDAcrossNodes: a CREATE with a DH2Q naming the CreateGuid of
// an open the same client holds through another node is refused with
// STATUS_DUPLICATE_OBJECTID ([MS-SMB2] 3.3.5.9.10), as on one node; the
// file's owner checks it (node/state ErrDuplicateCreate). Each node in
// turn holds the first open, so the owner is the first open's node once
// and the second's once.
func TestCreateGUIDAcrossNodes(t *testing.T) {
	c := framework.NewCluster(t, framework.ClusterOptions{Nodes: 2})
	c.MustSMBCtl(t, "share", "add", "data", t.TempDir())
	c.MustSMBCtl(t, "user", "add", "kim", "--password", "Kim-Pass-1")
	var client [16]byte
	rand.Read(client[:])
	dial := func(n *framework.ClusterNode) *smbc.Conn {
		var cn *smbc.Conn
		framework.WaitFor(t, clusterDeadline, "kim's connection to "+n.Name, func() bool {
			var err error
			cn, err = smbc.Dial(context.Background(), smbc.Options{Addr: n.Addr, Share: "data", User: "kim",
				Password: "Kim-Pass-1", ClientGUID: client})
			return err == nil
		})
		t.Cleanup(func() { cn.Close() })
		return cn
	}
	conns := []*smbc.Conn{dial(c.Nodes[0]), dial(c.Nodes[1])}
	opts := func() smbc.DurableOptions {
		o := smbc.DurableOptions{LeaseState: smb2.LeaseRead | smb2.LeaseHandle, Timeout: time.Minute,
			ShareAccess: smb2.FileShareRead | smb2.FileShareWrite | smb2.FileShareDelete}
		rand.Read(o.CreateGUID[:])
		rand.Read(o.LeaseKey[:])
		return o
	}
	for _, name := range []string{"a.bin", "b.bin", "c.bin", "d.bin"} {
		for first := range conns {
			a, b := conns[first], conns[1-first]
			o1 := opts()
			f1, _, err := a.OpenDurable(name, o1)
			if err != nil {
				t.Fatalf("%s: first open through node %d: %v", name, first+1, err)
			}
			o2 := opts()
			o2.CreateGUID = o1.CreateGUID
			if f2, _, err := b.OpenDurable(name, o2); !isStatusErr(err, smb2.StatusDuplicateObjectid) {
				if err == nil {
					f2.Close()
				}
				t.Errorf("%s: the first open through node %d, a CREATE with its CreateGuid through node %d: %v, want STATUS_DUPLICATE_OBJECTID",
					name, first+1, 2-first, err)
			}
			f3, _, err := b.OpenDurable(name, opts()) // another CreateGuid
			if err != nil {
				t.Fatalf("%s: a CREATE with another CreateGuid: %v", name, err)
			}
			f3.Close()
			f1.Close()
		}
	}
}
