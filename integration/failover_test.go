package integration

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/smbcluster/smbcluster/integration/framework"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// TestOwnerFailover: clients on two nodes hold opens and locks of files
// owned by all three nodes; the third node is killed. Once its lease has
// expired and its shards were taken over, the survivors' conflicts still
// hold — a conflicting open or lock through the other survivor is refused
// — and the files the dead node's client had open can be opened again.
func TestOwnerFailover(t *testing.T) {
	c := framework.NewCluster(t, framework.ClusterOptions{Nodes: 3})
	c.MustSMBCtl(t, "share", "add", "data", t.TempDir())
	c.MustSMBCtl(t, "user", "add", "ines", "--password", "Ines-Pass-1")
	connect := func(n *framework.ClusterNode) *servertest.Conn {
		return clusterSession(t, n, "ines", "Ines-Pass-1", "data")
	}
	a, b, dead := connect(c.Nodes[0]), connect(c.Nodes[1]), connect(c.Nodes[2])
	lock := func(s *servertest.Conn, fid smb2.FileID, flags uint32) smb2.Status {
		h, _ := s.Call(smb2.CmdLock, &smb2.LockRequest{FileID: fid, Locks: []smb2.LockElement{{Offset: 0, Length: 10, Flags: flags}}})
		return smb2.Status(h.Status)
	}
	const files = 24 // spread over the shards, and so over all three owners
	for i := range files {
		// a holds kept-i without sharing; a and b both hold locked-i, a
		// with an exclusive lock; the dead node's client holds gone-i
		// without sharing.
		excl := servertest.CreateRequest(fmt.Sprintf("kept-%d.txt", i))
		excl.ShareAccess = 0
		if _, err := a.CreateWith(excl); err != nil {
			t.Fatal(err)
		}
		fa, err := a.Create(fmt.Sprintf("locked-%d.txt", i))
		if err != nil {
			t.Fatal(err)
		}
		if st := lock(a, fa, smb2.LockFlagExclusive|smb2.LockFlagFailImmediately); st != smb2.StatusSuccess {
			t.Fatalf("lock: %v", st)
		}
		gone := servertest.CreateRequest(fmt.Sprintf("gone-%d.txt", i))
		gone.ShareAccess = 0
		if _, err := dead.CreateWith(gone); err != nil {
			t.Fatal(err)
		}
	}
	c.Nodes[2].Kill(t)
	framework.WaitFor(t, clusterDeadline, "node3 down", func() bool {
		st, _ := c.NodeState(t, "node3")
		return st == "down"
	})
	// b's requests wait while a file's shard has no owner, then meet the
	// rebuilt state.
	for i := range files {
		if _, err := b.Create(fmt.Sprintf("kept-%d.txt", i)); !errors.Is(err, smb2.StatusSharingViolation) {
			t.Errorf("kept-%d.txt, open without sharing through node1, opened through node2 after node3 died: %v, want STATUS_SHARING_VIOLATION", i, err)
		}
		fb, err := b.Create(fmt.Sprintf("locked-%d.txt", i))
		if err != nil {
			t.Fatal(err)
		}
		if st := lock(b, fb, smb2.LockFlagExclusive|smb2.LockFlagFailImmediately); st != smb2.StatusLockNotGranted {
			t.Errorf("locked-%d.txt: a lock through node2 of the range node1's client holds, after node3 died: %v, want STATUS_LOCK_NOT_GRANTED", i, st)
		}
		b.CloseFile(fb)
		fg, err := b.Create(fmt.Sprintf("gone-%d.txt", i))
		if err != nil {
			t.Errorf("gone-%d.txt, open only through the dead node: %v", i, err)
			continue
		}
		b.CloseFile(fg)
	}
}

// TestOwnerPausedPastTTL: an owner stopped (SIGSTOP) past its lease TTL
// loses its shards to the survivors, which rebuild them; resumed, it
// answers for none of them — the survivors' conflicts still hold — and
// serves again only once it has rejoined.
func TestOwnerPausedPastTTL(t *testing.T) {
	c := framework.NewCluster(t, framework.ClusterOptions{Nodes: 3})
	c.MustSMBCtl(t, "share", "add", "data", t.TempDir())
	c.MustSMBCtl(t, "user", "add", "jon", "--password", "Jon-Pass-1")
	connect := func(n *framework.ClusterNode) *servertest.Conn {
		return clusterSession(t, n, "jon", "Jon-Pass-1", "data")
	}
	a, b := connect(c.Nodes[0]), connect(c.Nodes[1])
	const files = 24
	for i := range files {
		excl := servertest.CreateRequest(fmt.Sprintf("kept-%d.txt", i))
		excl.ShareAccess = 0
		if _, err := a.CreateWith(excl); err != nil {
			t.Fatal(err)
		}
	}
	paused := c.Nodes[2]
	if err := paused.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	framework.WaitFor(t, clusterDeadline, "node3 down", func() bool {
		st, _ := c.NodeState(t, "node3")
		return st == "down"
	})
	check := func(when string) {
		for i := range files {
			if _, err := b.Create(fmt.Sprintf("kept-%d.txt", i)); !errors.Is(err, smb2.StatusSharingViolation) {
				t.Errorf("%s: kept-%d.txt opened through node2 while node1's client holds it without sharing: %v", when, i, err)
			}
		}
	}
	check("node3 paused")
	if err := paused.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	check("node3 resumed")
	framework.WaitFor(t, clusterDeadline, "node3 up again", func() bool {
		st, _ := c.NodeState(t, "node3")
		return st == "up"
	})
	check("node3 rejoined")
	s := connect(paused)
	if _, err := s.Create("kept-0.txt"); !errors.Is(err, smb2.StatusSharingViolation) {
		t.Errorf("through the rejoined node3: %v, want STATUS_SHARING_VIOLATION", err)
	}
}
