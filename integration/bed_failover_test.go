package integration

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"testing"
	"time"

	gosmb2 "github.com/cloudsoda/go-smb2"
	"github.com/smbcluster/smbcluster/integration/framework"
)

// TestBedFailover: a client writes a file through node1's public address
// and node1 is killed (SIGKILL) in the middle; the address moves to a
// survivor's host (ip addr on its veth), the client logs on again through
// the same address, finishes the file and reads back every byte it wrote,
// those acknowledged before the kill too. node1 is started again and gets
// its address back.
func TestBedFailover(t *testing.T) {
	for _, backend := range bedBackends {
		t.Run(backend, func(t *testing.T) {
			b := bedFor(t, backend, false)
			bedFailover(t, b)
		})
	}
}

func bedFailover(t *testing.T, b *framework.Bed) {
	addr := b.PublicAddr(0)
	ip, _, _ := net.SplitHostPort(addr)
	bedConnect(t, b.Nodes[0]).Close()
	const chunk, chunks, killAt = 256 << 10, 16, 6
	want := make([]byte, chunk*chunks)
	io.ReadFull(randomReader(uint64(time.Now().UnixNano())), want)
	name := fmt.Sprintf("bed-failover-%d.bin", time.Now().UnixNano())

	var c *bedClient
	defer func() {
		if c != nil {
			c.close()
		}
	}()
	var killed time.Time
	for i := 0; i < chunks; {
		if i == killAt && killed.IsZero() {
			b.KillNode(t, 0)
			killed = time.Now()
		}
		if c == nil {
			var err error
			framework.WaitFor(t, b.LeaseTTL+failoverSlack+10*time.Second, "gina logged on through "+addr, func() bool {
				c, err = dialBed(addr, name)
				return err == nil
			})
		}
		if _, err := c.f.WriteAt(want[i*chunk:(i+1)*chunk], int64(i*chunk)); err != nil {
			if killed.IsZero() {
				t.Fatalf("write of chunk %d before the kill: %v", i, err)
			}
			c.close()
			c = nil
			continue // write it again through the survivor
		}
		i++
	}
	t.Logf("the client wrote on %v after the kill", time.Since(killed).Round(time.Millisecond))
	got := make([]byte, len(want))
	if _, err := c.f.ReadAt(got, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		n := 0
		for j := range got {
			if got[j] != want[j] {
				n++
			}
		}
		t.Fatalf("read back through the moved address: %d of %d bytes differ", n, len(want))
	}
	c.close()
	c = nil

	// The address is on a survivor's veth, not on node1's host.
	var on string
	for i, h := range b.Hosts {
		if slices.Contains(b.HostIPs(t, h), ip) {
			if i == 0 {
				t.Errorf("%s is still on node1's host", ip)
			}
			on = h.Name
		}
	}
	if on == "" {
		t.Errorf("%s is on no host's interface", ip)
	}
	t.Logf("%s moved to host %s", ip, on)

	b.RestartNode(t, 0)
	framework.WaitFor(t, clusterDeadline, ip+" back on node1's host only", func() bool {
		for i, h := range b.Hosts {
			if slices.Contains(b.HostIPs(t, h), ip) != (i == 0) {
				return false
			}
		}
		return true
	})
}

// bedClient is a go-smb2 client with one file open.
type bedClient struct {
	*faultSession
	f *gosmb2.File
}

// dialBed logs gina on through addr and opens name for writing (creating
// it).
func dialBed(addr, name string) (*bedClient, error) {
	c, err := dialFault(addr)
	if err != nil {
		return nil, err
	}
	f, err := c.fs.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		c.close()
		return nil, err
	}
	return &bedClient{faultSession: c, f: f}, nil
}

func (c *bedClient) close() {
	c.f.Close()
	c.faultSession.close()
}

// TestBedEtcdMemberRestart: the bed's etcd is three members; with its
// leader killed the other two elect a new one and the cluster is
// administered as before; the member started again rejoins. (The
// framework's fault functions, for the fault tests of separate hosts.)
func TestBedEtcdMemberRestart(t *testing.T) {
	b := bedFor(t, "local", false)
	var leader int
	framework.WaitFor(t, clusterDeadline, "an etcd leader", func() bool {
		leader = b.EtcdLeader(t)
		return leader >= 0
	})
	m := b.EtcdMembers[leader]
	m.Kill()
	framework.WaitFor(t, clusterDeadline, "a new etcd leader", func() bool {
		l := b.EtcdLeader(t)
		return l >= 0 && l != leader
	})
	b.MustSMBCtl(t, "share", "ls")
	m.Restart(t)
	framework.WaitFor(t, clusterDeadline, "the restarted member back", func() bool {
		return b.EtcdMemberHealthy(t, leader)
	})
	for _, n := range b.Nodes {
		if st, _ := b.NodeState(t, n.Name); st != "up" {
			t.Errorf("%s is %s after the etcd leader was killed", n.Name, st)
		}
	}
}
