package integration

import (
	"errors"
	"fmt"
	"testing"

	"github.com/smbcluster/smbcluster/integration/framework"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
)

// Admission delegation (node/peer deleg.go): a node that opened a file
// another node owns with a plain open admits its next plain opens of it
// itself. These tests use files spread over the shards, and so over the
// three owners.

const delegFiles = 12

func delegName(prefix string, i int) string { return fmt.Sprintf("%s-%d.txt", prefix, i) }

// plainOpen is a CREATE that may be admitted under a delegation: read
// access, no oplock or lease, sharing share.
func plainOpen(name string, share uint32) *smb2.CreateRequest {
	req := servertest.CreateRequest(name)
	req.DesiredAccess, req.ShareAccess, req.CreateDisposition = smb2.GenericRead, share, smb2.FileOpen
	return req
}

func mustOpen(t *testing.T, s *servertest.Conn, req *smb2.CreateRequest) smb2.FileID {
	t.Helper()
	resp, err := s.CreateWith(req)
	if err != nil {
		t.Fatalf("open of %s: %v", req.Name, err)
	}
	return resp.FileID
}

// peerSent is what node n counted of the RPCs it sent to other nodes.
func peerSent(t *testing.T, n *framework.ClusterNode) float64 {
	return mustScrape(t, n.MetricsAddr).value("smbcluster_peer_rpcs_sent_total")
}

func delegations(t *testing.T, n *framework.ClusterNode, event string) float64 {
	return mustScrape(t, n.MetricsAddr).value("smbcluster_peer_delegations_total", "event", event)
}

// delegCluster starts three nodes with metrics and a share "data", and
// returns a session through each.
func delegCluster(t *testing.T) (c *framework.Cluster, a, b, o *servertest.Conn) {
	c = framework.NewCluster(t, framework.ClusterOptions{Nodes: 3, Metrics: true})
	c.MustSMBCtl(t, "share", "add", "data", t.TempDir())
	c.MustSMBCtl(t, "user", "add", "dora", "--password", "Dora-Pass-1")
	connect := func(n *framework.ClusterNode) *servertest.Conn {
		return clusterSession(t, n, "dora", "Dora-Pass-1", "data")
	}
	return c, connect(c.Nodes[0]), connect(c.Nodes[1]), connect(c.Nodes[2])
}

// TestDelegationAcrossNodes: plain opens and closes through a node of
// files other nodes own cost no peer call once delegated; opens and
// operations through the other nodes that conflict with the delegated
// opens meet them (the owner recalls the delegation) and get the answer
// they would get without delegation.
func TestDelegationAcrossNodes(t *testing.T) {
	c, a, b, o := delegCluster(t)
	const rw = smb2.FileShareRead | smb2.FileShareWrite
	for i := range delegFiles {
		fid, err := a.Create(delegName("d", i))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Write(fid, 0, []byte("0123456789abcdef")); err != nil {
			t.Fatal(err)
		}
		a.CloseFile(fid)
		b.CloseFile(mustOpen(t, b, plainOpen(delegName("d", i), rw))) // node2 earns the delegations
	}

	t.Run("NoPeerCalls", func(t *testing.T) {
		before, local := peerSent(t, c.Nodes[1]), delegations(t, c.Nodes[1], "local")
		for range 2 {
			for i := range delegFiles {
				fid := mustOpen(t, b, plainOpen(delegName("d", i), rw))
				if _, err := b.Read(fid, 0, 4); err != nil {
					t.Fatal(err)
				}
				b.CloseFile(fid)
			}
		}
		if n := peerSent(t, c.Nodes[1]) - before; n != 0 {
			t.Errorf("%d plain opens, reads and closes through node2 sent %v peer RPCs, want 0", 2*delegFiles, n)
		}
		if delegations(t, c.Nodes[1], "local") == local {
			t.Error("node2 admitted no open under a delegation")
		}
	})

	t.Run("Conflicts", func(t *testing.T) {
		held := make([]smb2.FileID, delegFiles)
		for i := range delegFiles {
			held[i] = mustOpen(t, b, plainOpen(delegName("d", i), rw))
		}
		for i := range delegFiles {
			name := delegName("d", i)
			if _, err := o.CreateWith(plainOpen(name, 0)); !errors.Is(err, smb2.StatusSharingViolation) {
				t.Errorf("%s: no-sharing open through node3 while node2 holds it: %v, want STATUS_SHARING_VIOLATION", name, err)
			}
			del := plainOpen(name, smb2.FileShareRead|smb2.FileShareWrite|smb2.FileShareDelete)
			del.DesiredAccess = smb2.Delete
			if _, err := a.CreateWith(del); !errors.Is(err, smb2.StatusSharingViolation) {
				t.Errorf("%s: DELETE open through node1 while node2 holds it without FILE_SHARE_DELETE: %v, want STATUS_SHARING_VIOLATION", name, err)
			}
			// A lease through node3: granted, without write caching
			// (node2's open stays).
			lreq := plainOpen(name, rw)
			lreq.DesiredAccess = smb2.GenericRead | smb2.GenericWrite
			lreq.RequestedOplockLevel = smb2.OplockLevelLease
			lr := smb2.LeaseRequest{Key: [16]byte{byte(i + 1)}, State: smb2.LeaseRead | smb2.LeaseWrite | smb2.LeaseHandle, Version: 2, Epoch: 1}
			lreq.Contexts = []smb2.CreateContext{{Name: "RqLs", Data: lr.Append(nil)}}
			lresp, err := o.CreateWith(lreq)
			if err != nil {
				t.Fatalf("%s: lease open through node3: %v", name, err)
			}
			if st := grantedLease(lresp); st&smb2.LeaseWrite != 0 || st&smb2.LeaseRead == 0 {
				t.Errorf("%s: lease %#x through node3 while node2 holds the file open, want read caching and no write caching", name, st)
			}
			// A lock through node3 holds against node2's read.
			h, _ := o.Call(smb2.CmdLock, &smb2.LockRequest{FileID: lresp.FileID, Locks: []smb2.LockElement{{Offset: 0, Length: 8, Flags: smb2.LockFlagExclusive | smb2.LockFlagFailImmediately}}})
			if st := smb2.Status(h.Status); st != smb2.StatusSuccess {
				t.Fatalf("%s: lock: %v", name, st)
			}
			if _, err := b.Read(held[i], 0, 4); !errors.Is(err, smb2.StatusFileLockConflict) {
				t.Errorf("%s: read through node2 of a range locked through node3: %v, want STATUS_FILE_LOCK_CONFLICT", name, err)
			}
			o.CloseFile(lresp.FileID)
		}
		for i := range delegFiles {
			b.CloseFile(held[i])
		}
		// node2's closes released the opens at their owners.
		for i := range delegFiles {
			o.CloseFile(mustOpen(t, o, plainOpen(delegName("d", i), 0)))
		}
		var recalled float64
		for _, n := range c.Nodes {
			recalled += delegations(t, n, "recalled")
		}
		if recalled == 0 {
			t.Error("no owner recalled a delegation")
		}
	})

	t.Run("DeleteOnClose", func(t *testing.T) {
		const share = smb2.FileShareRead | smb2.FileShareWrite | smb2.FileShareDelete
		for i := range delegFiles {
			name := delegName("d", i)
			b.CloseFile(mustOpen(t, b, plainOpen(name, share)))
			fb := mustOpen(t, b, plainOpen(name, share))
			doc := plainOpen(name, share)
			doc.DesiredAccess, doc.CreateOptions = smb2.GenericRead|smb2.Delete, smb2.FileDeleteOnClose
			o.CloseFile(mustOpen(t, o, doc)) // the delete is pending while node2's open stays
			if _, err := b.CreateWith(plainOpen(name, share)); !errors.Is(err, smb2.StatusDeletePending) {
				t.Errorf("%s: open through node2 of a file with a delete pending: %v, want STATUS_DELETE_PENDING", name, err)
			}
			b.CloseFile(fb) // the last close deletes
			if _, err := a.CreateWith(plainOpen(name, share)); !errors.Is(err, smb2.StatusObjectNameNotFound) {
				t.Errorf("%s: open after the last close of a file deleted on close: %v, want STATUS_OBJECT_NAME_NOT_FOUND", name, err)
			}
		}
	})

	t.Run("Rename", func(t *testing.T) {
		const share = smb2.FileShareRead | smb2.FileShareWrite | smb2.FileShareDelete
		for i := range delegFiles {
			name := delegName("r", i)
			fid, err := a.Create(name)
			if err != nil {
				t.Fatal(err)
			}
			a.CloseFile(fid)
			b.CloseFile(mustOpen(t, b, plainOpen(name, rw)))
			fb := mustOpen(t, b, plainOpen(name, rw))
			ren := plainOpen(name, share)
			ren.DesiredAccess = smb2.GenericRead | smb2.Delete
			if _, err := o.CreateWith(ren); !errors.Is(err, smb2.StatusSharingViolation) {
				t.Errorf("%s: DELETE open for a rename while node2 holds it without FILE_SHARE_DELETE: %v, want STATUS_SHARING_VIOLATION", name, err)
			}
			b.CloseFile(fb)
			b.CloseFile(mustOpen(t, b, plainOpen(name, share)))
			fb = mustOpen(t, b, plainOpen(name, share))
			ro := mustOpen(t, o, ren)
			to := delegName("renamed", i)
			h, _ := o.Call(smb2.CmdSetInfo, &smb2.SetInfoRequest{InfoType: smb2.InfoFile, FileInfoClass: fscc.FileRenameInformation,
				Buffer: servertest.Body(&fscc.RenameInformation{FileName: to}), FileID: ro})
			if st := smb2.Status(h.Status); st != smb2.StatusSuccess {
				t.Errorf("%s: rename through node3 while node2's open shares delete: %v", name, st)
			}
			o.CloseFile(ro)
			b.CloseFile(fb)
			if _, err := b.CreateWith(plainOpen(to, share)); err != nil {
				t.Errorf("%s: open of the new name through node2: %v", to, err)
			}
		}
	})
}

// grantedLease is the lease state a CREATE response granted (0: none).
func grantedLease(resp *smb2.CreateResponse) uint32 {
	for _, cc := range resp.Contexts {
		if cc.Name == "RqLs" {
			var l smb2.LeaseResponse
			if l.Decode(cc.Data) == nil {
				return l.State
			}
		}
	}
	return 0
}

// TestDelegationNodeDies: node2 and node3 each hold delegated opens of
// files spread over the owners, sharing nothing but reads; node3 dies.
// The files node3 held open are released by their owners; the files it
// owned are rebuilt by their new owners with node2's delegated opens in
// them, which still refuse a no-sharing open.
func TestDelegationNodeDies(t *testing.T) {
	c := framework.NewCluster(t, framework.ClusterOptions{Nodes: 3, Metrics: true})
	c.MustSMBCtl(t, "share", "add", "data", t.TempDir())
	c.MustSMBCtl(t, "user", "add", "enzo", "--password", "Enzo-Pass-1")
	connect := func(n *framework.ClusterNode) *servertest.Conn {
		return clusterSession(t, n, "enzo", "Enzo-Pass-1", "data")
	}
	a, b, dying := connect(c.Nodes[0]), connect(c.Nodes[1]), connect(c.Nodes[2])
	for i := range delegFiles {
		for _, p := range []string{"kept", "gone"} {
			fid, err := a.Create(delegName(p, i))
			if err != nil {
				t.Fatal(err)
			}
			a.CloseFile(fid)
		}
		b.CloseFile(mustOpen(t, b, plainOpen(delegName("kept", i), smb2.FileShareRead)))
		mustOpen(t, b, plainOpen(delegName("kept", i), smb2.FileShareRead))
		dying.CloseFile(mustOpen(t, dying, plainOpen(delegName("gone", i), smb2.FileShareRead)))
		mustOpen(t, dying, plainOpen(delegName("gone", i), smb2.FileShareRead))
	}
	if delegations(t, c.Nodes[1], "local") == 0 || delegations(t, c.Nodes[2], "local") == 0 {
		t.Fatal("node2 or node3 admitted no open under a delegation")
	}
	c.Nodes[2].Kill(t)
	framework.WaitFor(t, clusterDeadline, "node3 down", func() bool {
		st, _ := c.NodeState(t, "node3")
		return st == "down"
	})
	// What node2 holds stays in force from the moment node3 is known
	// gone; what only node3 held is released once each owner has heard
	// of it (its own watch of the membership: a few milliseconds later).
	keptRefused := func() {
		t.Helper()
		for i := range delegFiles {
			if _, err := a.CreateWith(plainOpen(delegName("kept", i), 0)); !errors.Is(err, smb2.StatusSharingViolation) {
				t.Errorf("%s, held open through node2, opened without sharing through node1 after node3 died: %v, want STATUS_SHARING_VIOLATION", delegName("kept", i), err)
			}
		}
	}
	keptRefused()
	released := make([]bool, delegFiles)
	framework.WaitFor(t, clusterDeadline, "the files held open only through the dead node released", func() bool {
		all := true
		for i := range delegFiles {
			if released[i] {
				continue
			}
			resp, err := a.CreateWith(plainOpen(delegName("gone", i), 0))
			switch {
			case err == nil:
				a.CloseFile(resp.FileID)
				released[i] = true
			case errors.Is(err, smb2.StatusSharingViolation):
				all = false
			default:
				t.Fatalf("%s, held open only through the dead node: %v", delegName("gone", i), err)
			}
		}
		return all
	})
	keptRefused()
}

// dirOpen is a plain CREATE of the directory name: access (attributes
// only, as a client's look at a folder), no oplock or lease, sharing share.
func dirOpen(name string, access, share uint32) *smb2.CreateRequest {
	req := servertest.CreateRequest(name)
	req.DesiredAccess, req.ShareAccess, req.CreateDisposition = access, share, smb2.FileOpen
	req.CreateOptions = smb2.FileDirectoryFile
	return req
}

// TestDelegationOfDirectories: plain opens of folders other nodes own —
// the share's root among them, what smbtorture's path-contention bench
// and every client's look at a share open — are admitted under a
// delegation after the first; what the folders' owners decide for
// other opens meets them: a DELETE open that does not share with them,
// a rename of the folder above them, a delete made pending.
func TestDelegationOfDirectories(t *testing.T) {
	c, a, b, o := delegCluster(t)
	const all = smb2.FileShareRead | smb2.FileShareWrite | smb2.FileShareDelete
	const rw = smb2.FileShareRead | smb2.FileShareWrite
	names := []string{""} // the share's root
	for i := range delegFiles {
		top := fmt.Sprintf("top-%d", i)
		for _, name := range []string{top, top + `\sub`} {
			mk := dirOpen(name, smb2.GenericRead, all)
			mk.CreateDisposition = smb2.FileCreate
			a.CloseFile(mustOpen(t, a, mk))
		}
		names = append(names, top+`\sub`)
	}
	for _, name := range names {
		b.CloseFile(mustOpen(t, b, dirOpen(name, smb2.FileReadAttributes, all))) // node2 earns the delegations
	}

	t.Run("NoPeerCalls", func(t *testing.T) {
		before, local := peerSent(t, c.Nodes[1]), delegations(t, c.Nodes[1], "local")
		for range 2 {
			for _, name := range names {
				b.CloseFile(mustOpen(t, b, dirOpen(name, smb2.FileReadAttributes, all)))
			}
		}
		if n := peerSent(t, c.Nodes[1]) - before; n != 0 {
			t.Errorf("%d plain opens and closes of folders through node2 sent %v peer RPCs, want 0", 2*len(names), n)
		}
		if delegations(t, c.Nodes[1], "local") == local {
			t.Error("node2 admitted no open of a folder under a delegation")
		}
	})

	t.Run("Conflicts", func(t *testing.T) {
		for i := range delegFiles {
			top, sub := fmt.Sprintf("top-%d", i), fmt.Sprintf(`top-%d\sub`, i)
			const list = smb2.FileReadData | smb2.FileReadAttributes // FILE_LIST_DIRECTORY: not a look at attributes only
			b.CloseFile(mustOpen(t, b, dirOpen(sub, list, rw)))
			held := mustOpen(t, b, dirOpen(sub, list, rw))
			del := dirOpen(sub, smb2.Delete, all)
			if _, err := o.CreateWith(del); !errors.Is(err, smb2.StatusSharingViolation) {
				t.Errorf("%s: DELETE open through node3 while node2 holds the folder without FILE_SHARE_DELETE: %v, want STATUS_SHARING_VIOLATION", sub, err)
			}
			// The folder above cannot be renamed while node2 holds a
			// folder below it open.
			ren := mustOpen(t, o, dirOpen(top, smb2.Delete|smb2.FileReadAttributes, all))
			h, _ := o.Call(smb2.CmdSetInfo, &smb2.SetInfoRequest{InfoType: smb2.InfoFile, FileInfoClass: fscc.FileRenameInformation,
				Buffer: servertest.Body(&fscc.RenameInformation{FileName: top + "-renamed"}), FileID: ren})
			if st := smb2.Status(h.Status); st != smb2.StatusAccessDenied {
				t.Errorf("%s: rename through node3 while node2 holds %s open: %v, want STATUS_ACCESS_DENIED", top, sub, st)
			}
			b.CloseFile(held)
			h, _ = o.Call(smb2.CmdSetInfo, &smb2.SetInfoRequest{InfoType: smb2.InfoFile, FileInfoClass: fscc.FileRenameInformation,
				Buffer: servertest.Body(&fscc.RenameInformation{FileName: top + "-renamed"}), FileID: ren})
			if st := smb2.Status(h.Status); st != smb2.StatusSuccess {
				t.Errorf("%s: rename through node3 once node2 closed %s: %v", top, sub, st)
			}
			o.CloseFile(ren)
			if resp, err := b.CreateWith(dirOpen(top+`-renamed\sub`, smb2.FileReadAttributes, all)); err != nil {
				t.Errorf("%s: open through node2 of the folder below the new name: %v", top, err)
			} else {
				b.CloseFile(resp.FileID)
			}
		}
	})

	t.Run("DeletePending", func(t *testing.T) {
		for i := range delegFiles {
			sub := fmt.Sprintf(`top-%d-renamed\sub`, i)
			b.CloseFile(mustOpen(t, b, dirOpen(sub, smb2.FileReadAttributes, all)))
			held := mustOpen(t, b, dirOpen(sub, smb2.FileReadAttributes, all))
			doc := dirOpen(sub, smb2.Delete|smb2.FileReadAttributes, all)
			doc.CreateOptions |= smb2.FileDeleteOnClose
			o.CloseFile(mustOpen(t, o, doc)) // pending while node2's open stays
			if _, err := b.CreateWith(dirOpen(sub, smb2.FileReadAttributes, all)); !errors.Is(err, smb2.StatusDeletePending) {
				t.Errorf("%s: open through node2 of a folder with a delete pending: %v, want STATUS_DELETE_PENDING", sub, err)
			}
			b.CloseFile(held) // the last close deletes
			if _, err := a.CreateWith(dirOpen(sub, smb2.FileReadAttributes, all)); !errors.Is(err, smb2.StatusObjectNameNotFound) {
				t.Errorf("%s: open after the last close of a folder deleted on close: %v, want STATUS_OBJECT_NAME_NOT_FOUND", sub, err)
			}
		}
	})
}
