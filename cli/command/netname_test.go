package command

import "testing"

// TestNetName: the network name's state, taken offline and back by
// smbctl (the record every node follows), in table and JSON.
func TestNetName(t *testing.T) {
	c := newCoord(t)
	c.want(ExitOK, "netname", "get")
	c.want(ExitOK, "netname", "offline")
	c.want(ExitOK, "netname", "get", "-o", "json")
	c.want(ExitOK, "netname", "online")
	c.want(ExitUsage, "netname", "offline", "extra")
	golden(t, "admin/netname.golden", c.out.String())
}
