package command

import (
	"context"
	"flag"
	"fmt"

	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
)

// The cluster's network name, its client access point: `smbctl netname
// get|offline|online`, the operator's way to what a --cluster-admin does
// through clusapi ([MS-CMRP] OfflineResource / OnlineResource).

var netnameVerbs = []verb{
	{name: "get", nargs: 0, summary: "show whether the cluster's network name is online, and who last changed it", define: defineNetNameGet},
	{name: "offline", nargs: 0, summary: "take the network name offline: every node refuses new trees of disk shares (STATUS_NETWORK_NAME_DELETED) and witness clients hear RESOURCE_CHANGE unavailable", define: defineNetNameSet(true)},
	{name: "online", nargs: 0, summary: "bring the network name back online (witness clients hear RESOURCE_CHANGE available)", define: defineNetNameSet(false)},
}

// netNameView is the network name's state as smbctl prints it; its JSON
// names are stable.
type netNameView struct {
	State      string `json:"state"` // online, offline
	ChangedBy  string `json:"changed_by,omitempty"`
	Node       string `json:"node,omitempty"`
	ChangeTime string `json:"change_time,omitempty"`
}

func netNameViewOf(n *adminv1.NetName) netNameView {
	v := netNameView{State: "online", ChangedBy: n.GetChangedBy(), Node: n.GetNode(), ChangeTime: fmtTime(n.GetChangeTime())}
	if n.GetOffline() {
		v.State = "offline"
	}
	return v
}

func (v netNameView) table() table {
	by := dash(v.ChangedBy)
	if v.Node != "" {
		by += " on " + v.Node
	}
	return table{title: fmt.Sprintf("Network name: %s\nChanged by: %s\nChanged: %s", v.State, by, dash(v.ChangeTime))}
}

func defineNetNameGet(fs *flag.FlagSet) action {
	return func(ctx context.Context, c *call) error {
		ctx, cancel := c.conn.rpcContext(ctx, 0)
		defer cancel()
		resp, err := c.cluster().GetNetName(ctx, &adminv1.GetNetNameRequest{})
		if err != nil {
			return err
		}
		return c.p.print(netNameViewOf(resp.GetNetName()))
	}
}

func defineNetNameSet(offline bool) func(fs *flag.FlagSet) action {
	return func(fs *flag.FlagSet) action {
		return func(ctx context.Context, c *call) error {
			ctx, cancel := c.conn.rpcContext(ctx, 0)
			defer cancel()
			resp, err := c.cluster().SetNetName(ctx, &adminv1.SetNetNameRequest{Offline: offline})
			if err != nil {
				return err
			}
			return c.p.print(netNameViewOf(resp.GetNetName()))
		}
	}
}
