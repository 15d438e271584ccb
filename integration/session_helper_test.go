package integration

import (
	"net"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/integration/framework"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// clusterSession is a raw SMB 3.1.1 client of user on node n, connected
// to share: it waits (clusterDeadline at most) until the node serves the
// user and the share, which it learns from etcd, and its address (which
// a node that has just joined takes over from the node that served it
// meanwhile).
func clusterSession(t *testing.T, n *framework.ClusterNode, user, password, share string) *servertest.Conn {
	t.Helper()
	var s *servertest.Conn
	framework.WaitFor(t, clusterDeadline, user+"'s session on "+n.Name, func() bool {
		nc, err := net.DialTimeout("tcp", n.Addr, time.Second)
		if err != nil {
			return false
		}
		s = servertest.NewConn(t, nc)
		if s.Negotiate(smb2.Dialect311) != nil || s.SessionSetup(user, password) != nil {
			s.Close()
			return false
		}
		if _, err := s.TreeConnect(share); err != nil {
			s.Close()
			return false
		}
		return true
	})
	return s
}
