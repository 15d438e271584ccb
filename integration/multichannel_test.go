package integration

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/smbcluster/smbcluster/integration/framework"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// TestMultichannelOnClusterNode: a multichannel client of node 1 of three
// does what the Linux client does (mount -t cifs -o multichannel,
// max_channels=4): it asks for the server's interfaces and binds its
// further channels on the addresses offered, round robin. Node 1 offers
// every live node, and every bind succeeds, on whichever node it lands
// (node/handoff): the session lives on. A bind that no node can place is
// refused with STATUS_USER_SESSION_DELETED and logged with the client's
// address and the reason.
func TestMultichannelOnClusterNode(t *testing.T) {
	c := framework.NewCluster(t, framework.ClusterOptions{Nodes: 3})
	n1, n2 := c.Nodes[0], c.Nodes[1]
	const user, password = "mia", "Mia-Pass-1"
	c.MustSMBCtl(t, "user", "add", user, "--password", password)
	var s *servertest.Conn
	framework.WaitFor(t, clusterDeadline, "mia logs in on node1", func() bool {
		s = dialSession(t, n1.Addr, user, password)
		return s != nil
	})
	for _, n := range c.Nodes {
		framework.WaitFor(t, clusterDeadline, n.Name+" up", func() bool {
			st, _ := c.NodeState(t, n.Name)
			return st == "up"
		})
	}
	// Every live record is in etcd now. (Draining node1 to refresh its
	// offer would move its public address and end s.)
	var offered []string
	framework.WaitFor(t, clusterDeadline, "node1 to offer its address", func() bool {
		offered = offeredIPs(t, s)
		return slices.Contains(offered, "127.0.0.1")
	})
	if want := []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}; !slices.Equal(offered, want) {
		t.Errorf("node1 offers %v, want %v", offered, want)
	}

	const maxChannels = 4
	port := strconv.Itoa(c.Port)
	for i := 1; i < maxChannels; i++ {
		addr := net.JoinHostPort(offered[i%len(offered)], port)
		ch := servertest.Dial(t, addr)
		ch.ClientGUID = s.ClientGUID
		if err := ch.Negotiate(smb2.Dialect311); err != nil {
			t.Fatalf("channel %d on %s: %v", i+1, addr, err)
		}
		if err := ch.Bind(s.Session, user, password); err != nil {
			t.Fatalf("binding channel %d on %s: %v", i+1, addr, err)
		}
		if err := ch.Echo(); err != nil {
			t.Errorf("ECHO on channel %d: %v", i+1, err)
		}
	}
	if _, err := s.TreeConnect("IPC$"); err != nil {
		t.Errorf("the session after %d channels were bound: %v", maxChannels, err)
	}

	// A bind of a session no node holds is refused, and the node says why.
	other := servertest.Dial(t, n2.Addr)
	other.ClientGUID = s.ClientGUID
	if err := other.Negotiate(smb2.Dialect311); err != nil {
		t.Fatal(err)
	}
	gone := *s.Session
	gone.ID ^= 0x5a5a
	if err := other.Bind(&gone, user, password); err != smb2.StatusUserSessionDeleted {
		t.Errorf("bind on node2 of a session no node holds: %v, want STATUS_USER_SESSION_DELETED", err)
	}
	local := other.NetConn().LocalAddr().String()
	framework.WaitFor(t, clusterDeadline, "node2 to log the refused bind", func() bool {
		for _, l := range strings.Split(n2.Log(), "\n") {
			if strings.Contains(l, "level=INFO") && strings.Contains(l, "channel bind refused") &&
				strings.Contains(l, "remote="+local) && strings.Contains(l, "no such session") {
				return true
			}
		}
		return false
	})
}
