package server_test

import (
	"testing"

	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// TestDirectoryLeasingCapability: SMB2_GLOBAL_CAP_DIRECTORY_LEASING is
// answered only to a 3.x client that offers it (impacket, which does not,
// breaks on it), and never for 2.1.
func TestDirectoryLeasingCapability(t *testing.T) {
	srv := servertest.Start(t, servertest.Options{})
	for _, tc := range []struct {
		dialect uint16
		offer   bool
		want    bool
	}{
		{smb2.Dialect311, true, true},
		{smb2.Dialect300, true, true},
		{smb2.Dialect311, false, false},
		{smb2.Dialect210, true, false},
	} {
		c := servertest.Dial(t, srv.Addr)
		if !tc.offer {
			c.Capabilities &^= smb2.CapDirectoryLeasing
		}
		if err := c.Negotiate(tc.dialect); err != nil {
			t.Fatal(err)
		}
		got := c.NegResponse.Capabilities&smb2.CapDirectoryLeasing != 0
		if got != tc.want {
			t.Errorf("%s, client offers it %v: capability %v, want %v", servertest.DialectName(tc.dialect), tc.offer, got, tc.want)
		}
	}
}
