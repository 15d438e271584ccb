package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/cli/smbc"
	"github.com/smbcluster/smbcluster/integration/framework"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// Durable opens across a node's death (issue: a node dies, the clients
// carry on). A client opens a 200 MiB file through node 1 with a durable
// v2 handle and an RWH lease, locks one range exclusively and writes half
// the file; node 1 dies (kill -9, or SIGSTOP past its lease); the client
// reconnects the open through node 2 (DH2C on a new connection, its
// ClientGuid kept), finishes the writes, and the file's checksum is the
// data's. A second client on node 3 is refused the locked range and an
// open that conflicts with the first client's share access before and
// after the failover: the file's owner kept the durable open's state in
// force throughout.

const (
	failoverFileSize = 200 << 20
	failoverChunk    = 1 << 20
	lockedOff        = 4096
	lockedLen        = 4096
)

func TestDurableFailoverKill(t *testing.T) {
	durableFailover(t, failoverKill, false)
}

// TestDurableFailoverPersistent: the same with a persistent handle on a
// share with continuous availability.
func TestDurableFailoverPersistent(t *testing.T) {
	durableFailover(t, failoverKill, true)
}

func TestDurableFailoverStop(t *testing.T) {
	durableFailover(t, failoverStop, false)
}

// TestDurableFailoverAddress: the client reconnects to the address it
// used, node 1's, which a survivor serves once node 1 is dead (public
// addresses move), and resumes its durable open there.
func TestDurableFailoverAddress(t *testing.T) {
	durableFailoverThrough(t, failoverKill, false, 0)
}

type failoverMode int

const (
	failoverKill failoverMode = iota // kill -9 of node 1
	failoverStop                     // SIGSTOP of node 1 past its lease, SIGCONT after
)

func durableFailover(t *testing.T, mode failoverMode, persistent bool) {
	durableFailoverThrough(t, mode, persistent, 1)
}

// durableFailoverThrough runs the scenario, the client reconnecting
// through the address of node number via (0: node 1's own, moved).
func durableFailoverThrough(t *testing.T, mode failoverMode, persistent bool, via int) {
	c := framework.NewCluster(t, framework.ClusterOptions{Nodes: 3})
	dir := t.TempDir()
	if persistent {
		c.MustSMBCtl(t, "share", "add", "data", dir, "--continuous-availability")
	} else {
		c.MustSMBCtl(t, "share", "add", "data", dir)
	}
	c.MustSMBCtl(t, "user", "add", "kim", "--password", "Kim-Pass-1")
	durableScenario(t, durableRun{c: c, share: "data", file: "big.bin", size: failoverFileSize,
		mode: mode, persistent: persistent, via: via,
		kill:     func() { c.Nodes[0].Kill(t) },
		readBack: func() ([]byte, error) { return os.ReadFile(filepath.Join(dir, "big.bin")) }})
}

// durableRun is one durable failover: node 1 of c holds a durable (or
// persistent) open of file in share with a lease and a lock, writes half
// of size bytes, is killed (kill) or stopped past its lease; the client
// reconnects through node number via, writes the rest; readBack reads
// the file as the storage has it. User kim exists.
type durableRun struct {
	c          *framework.Cluster
	share      string
	file       string
	size       int
	mode       failoverMode
	persistent bool
	via        int
	kill       func()
	readBack   func() ([]byte, error)
}

func durableScenario(t *testing.T, run durableRun) {
	c, persistent, mode, via := run.c, run.persistent, run.mode, run.via
	data := make([]byte, run.size)
	rand.Read(data)

	var guid [16]byte
	rand.Read(guid[:])
	dial := func(n *framework.ClusterNode) *smbc.Conn {
		var cn *smbc.Conn
		framework.WaitFor(t, clusterDeadline, "kim's connection to "+n.Name, func() bool {
			var err error
			cn, err = smbc.Dial(context.Background(), smbc.Options{Addr: n.Addr, Share: run.share, User: "kim",
				Password: "Kim-Pass-1", ClientGUID: guid})
			return err == nil
		})
		return cn
	}
	a := dial(c.Nodes[0])
	var leaseNow atomic.Uint32 // the lease state a keeps
	go ackBreaks(a, &leaseNow)
	opts := smbc.DurableOptions{LeaseState: smb2.LeaseRead | smb2.LeaseWrite | smb2.LeaseHandle,
		Timeout: time.Minute, ShareAccess: smb2.FileShareRead | smb2.FileShareWrite, Persistent: persistent}
	rand.Read(opts.CreateGUID[:])
	rand.Read(opts.LeaseKey[:])
	f, d, err := a.OpenDurable(run.file, opts)
	if err != nil {
		t.Fatal(err)
	}
	if d.Lease != opts.LeaseState {
		t.Fatalf("lease granted %#x, want RWH", d.Lease)
	}
	leaseNow.Store(d.Lease)
	if ca := a.ShareCapabilities()&smb2.ShareCapContinuousAvailability != 0; ca != persistent || d.Persistent != persistent {
		t.Fatalf("share with continuous availability %v, persistent handle granted %v; want %v", ca, d.Persistent, persistent)
	}
	if persistent {
		// A persistent handle's record is in etcd before its CREATE is
		// answered: a node dying right after the answer loses nothing.
		var opens []struct {
			Node    string `json:"node"`
			Durable bool   `json:"durable"`
		}
		c.SMBCtlJSON(t, &opens, "open", "ls")
		if !slices.ContainsFunc(opens, func(o struct {
			Node    string `json:"node"`
			Durable bool   `json:"durable"`
		}) bool {
			return o.Node == "node1" && o.Durable
		}) {
			t.Fatalf("the persistent open is not in the cluster's records once its CREATE was answered: %+v", opens)
		}
	}
	if err := f.Lock(lockedOff, lockedLen, true); err != nil {
		t.Fatal(err)
	}
	writeRange(t, f, data, 0, run.size/2)

	b := clusterSession(t, c.Nodes[2], "kim", "Kim-Pass-1", run.share)
	refused := func(when string) {
		t.Helper()
		excl := servertest.CreateRequest(run.file)
		excl.ShareAccess = smb2.FileShareRead // refuses a's write access
		if _, err := b.CreateWith(excl); !errors.Is(err, smb2.StatusSharingViolation) {
			t.Errorf("%s: node3's open conflicting with the durable open's share access: %v, want STATUS_SHARING_VIOLATION", when, err)
		}
		compat := servertest.CreateRequest(run.file)
		compat.DesiredAccess = smb2.GenericRead | smb2.GenericWrite
		resp, err := b.CreateWith(compat)
		if err != nil {
			t.Fatalf("%s: node3's compatible open: %v", when, err)
		}
		fb := resp.FileID
		defer b.CloseFile(fb)
		h, _ := b.Call(smb2.CmdLock, &smb2.LockRequest{FileID: fb, Locks: []smb2.LockElement{
			{Offset: lockedOff, Length: 1, Flags: smb2.LockFlagShared | smb2.LockFlagFailImmediately}}})
		if st := smb2.Status(h.Status); st != smb2.StatusLockNotGranted {
			t.Errorf("%s: node3's lock of the range the durable open holds: %v, want STATUS_LOCK_NOT_GRANTED", when, st)
		}
	}
	refused("before the failover")
	// The durable open's record, with its lock and its lease as the
	// breaks above left it, is in etcd before node 1 goes (published at
	// the grant and within a second of a change). The lease has no
	// handle caching left: node3's conflicting open broke it.
	framework.WaitFor(t, clusterDeadline, "the durable open's record up to date", func() bool {
		var opens []struct {
			Node    string `json:"node"`
			Durable bool   `json:"durable"`
			Oplock  string `json:"oplock"`
			Locks   []struct {
				Offset uint64 `json:"offset"`
			} `json:"locks"`
		}
		c.SMBCtlJSON(t, &opens, "open", "ls")
		for _, o := range opens {
			if o.Node == "node1" && o.Durable && o.Oplock == leaseName(leaseNow.Load()) &&
				len(o.Locks) == 1 && o.Locks[0].Offset == lockedOff {
				return true
			}
		}
		return false
	})

	switch mode {
	case failoverKill:
		run.kill()
	case failoverStop:
		if err := c.Nodes[0].Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	// A write the client sends node 1 while it is stopped waits in its
	// socket: resumed, node 1 must not write it (the open is node 2's by
	// then) nor answer it.
	stale := make(chan error, 1)
	if mode == failoverStop {
		junk := bytes.Repeat([]byte{0xee}, failoverChunk)
		go func() {
			_, err := f.WriteAt(junk, 0)
			stale <- err
		}()
	}
	// Node 1 is gone from the cluster (its lease expired): the owner of
	// the file keeps the durable open's share modes and lock in force.
	framework.WaitFor(t, clusterDeadline, "node1 down", func() bool {
		st, _ := c.NodeState(t, "node1")
		return st == "down"
	})
	refused("node1 down, before the reconnect")
	// The client reconnects (through node 2, or through node 1's address
	// now that a survivor serves it) until the open is found there.
	a2 := dial(c.Nodes[via])
	go ackBreaks(a2, &leaseNow)
	var f2 *smbc.File
	framework.WaitFor(t, clusterDeadline, "the durable open reconnected through "+c.Nodes[via].Addr, func() bool {
		f2, err = a2.Reconnect(d)
		return err == nil
	})
	for _, n := range c.Nodes[1:] {
		for _, l := range strings.Split(n.Log(), "\n") {
			if strings.Contains(l, "durable open of a node that left") {
				t.Logf("%s: %s", n.Name, l)
			}
		}
	}
	refused("after the failover")
	// Every write through node 1 was answered: the client writes the
	// second half, and the first half must be node 1's writes.
	writeRange(t, f2, data, run.size/2, run.size)
	if mode == failoverStop {
		if err := c.Nodes[0].Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		if err := <-stale; err == nil {
			t.Errorf("node1, resumed after its lease expired, answered a WRITE sent while it was stopped")
		}
		framework.WaitFor(t, clusterDeadline, "node1 up again", func() bool {
			st, _ := c.NodeState(t, "node1")
			return st == "up"
		})
		refused("node1 rejoined")
	}
	if err := f2.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := run.readBack()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(data) || sha256.Sum256(got) != sha256.Sum256(data) {
		i := 0
		for i < len(got) && i < len(data) && got[i] == data[i] {
			i++
		}
		t.Fatalf("%s: %d bytes, first difference at %d; want the %d bytes written", run.file, len(got), i, len(data))
	}
}

// writeRange writes data[from:to] through f in 1 MiB writes.
func writeRange(t *testing.T, f *smbc.File, data []byte, from, to int) {
	t.Helper()
	for off := from; off < to; off += failoverChunk {
		end := min(off+failoverChunk, to)
		if n, err := f.WriteAt(data[off:end], int64(off)); err != nil || n != end-off {
			t.Fatalf("write at %d: %d, %v", off, n, err)
		}
	}
}

// ackBreaks acknowledges every lease break c receives, keeping what the
// server breaks to, and stores the state kept in now.
func ackBreaks(c *smbc.Conn, now *atomic.Uint32) {
	for b := range c.Breaks() {
		if !b.Lease {
			continue
		}
		now.Store(b.New)
		if b.AckRequired {
			c.AckLeaseBreak(b.Key, b.New)
		}
	}
}

// leaseName is a lease state as smbctl open ls shows it.
func leaseName(st uint32) string {
	s := "lease:"
	for _, f := range []struct {
		bit uint32
		c   string
	}{{smb2.LeaseRead, "R"}, {smb2.LeaseWrite, "W"}, {smb2.LeaseHandle, "H"}} {
		if st&f.bit != 0 {
			s += f.c
		}
	}
	return s
}
