package share_test

import (
	"testing"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// TestClusterShareCaps: in a cluster (server.Config.Cluster) a disk
// share answers an SMB 3.x TREE_CONNECT with SMB2_SHARE_CAP_CLUSTER but
// not SCALEOUT, a CA share with CONTINUOUS_AVAILABILITY too, and an SMB
// 2.1 client gets none ([MS-SMB2] 3.3.5.7).
func TestClusterShareCaps(t *testing.T) {
	s := servertest.Start(t, servertest.Options{Configure: func(c *server.Config) { c.Cluster = true }})
	caps := func(dialect uint16, share string) uint32 {
		c := servertest.Dial(t, s.Addr)
		if err := c.Negotiate(dialect); err != nil {
			t.Fatal(err)
		}
		if err := c.SessionSetup(servertest.Alice, servertest.AlicePassword); err != nil {
			t.Fatal(err)
		}
		tc, err := c.TreeConnect(share)
		if err != nil {
			t.Fatal(err)
		}
		return tc.Capabilities
	}
	const cluster = smb2.ShareCapCluster
	if got := caps(smb2.Dialect311, servertest.ShareName); got != cluster {
		t.Errorf("disk share: capabilities %#x, want CLUSTER only", got)
	}
	if got := caps(smb2.Dialect311, servertest.CAShareName); got&(cluster|smb2.ShareCapContinuousAvailability) != cluster|smb2.ShareCapContinuousAvailability {
		t.Errorf("CA share: capabilities %#x", got)
	}
	if got := caps(smb2.Dialect210, servertest.ShareName); got != 0 {
		t.Errorf("SMB 2.1: capabilities %#x", got)
	}
}
