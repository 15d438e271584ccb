package command

import (
	"context"
	"flag"
	"fmt"

	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
	"google.golang.org/protobuf/types/known/durationpb"
)

var openVerbs = []verb{
	{name: "ls", nargs: 0, summary: "list open files across the cluster", define: defineOpenLs},
	{name: "close", args: "NODE FILE-ID", nargs: 2, summary: "close an open file on the node holding it", define: defineOpenClose},
}

// openView is an open as smbctl prints it; its JSON names are stable.
type openView struct {
	Node             string `json:"node"`
	PersistentFileID uint64 `json:"persistent_file_id"`
	SessionID        uint64 `json:"session_id"`
	User             string `json:"user"`
	Share            string `json:"share"`
	Path             string `json:"path"`
	DesiredAccess    uint32 `json:"desired_access"`
	ShareAccess      uint32 `json:"share_access"`
	Oplock           string `json:"oplock"`
	Durable          bool   `json:"durable"`
	OpenTime         string `json:"open_time,omitempty"`
}

func openOf(o *adminv1.Open) openView {
	return openView{Node: o.GetNode(), PersistentFileID: o.GetPersistentFileId(), SessionID: o.GetSessionId(),
		User: o.GetUser(), Share: o.GetShare(), Path: o.GetPath(), DesiredAccess: o.GetDesiredAccess(),
		ShareAccess: o.GetShareAccess(), Oplock: o.GetOplock(), Durable: o.GetDurable(), OpenTime: fmtTime(o.GetOpenTime())}
}

type openList []openView

func (l openList) table() table {
	t := table{header: []string{"NODE", "FILE-ID", "SESSION", "USER", "SHARE", "PATH", "ACCESS", "OPLOCK", "DURABLE"}}
	for _, o := range l {
		t.rows = append(t.rows, []string{o.Node, fmt.Sprintf("0x%x", o.PersistentFileID), fmt.Sprintf("0x%x", o.SessionID),
			dash(o.User), dash(o.Share), dash(o.Path), fmt.Sprintf("0x%08x", o.DesiredAccess), dash(o.Oplock), yesNo(o.Durable)})
	}
	return t
}

func defineOpenLs(fs *flag.FlagSet) action {
	node := fs.String("node", "", "only opens on `NODE`")
	session := fs.String("session", "", "only opens of session `ID`")
	share := fs.String("share", "", "only opens on `SHARE`")
	return func(ctx context.Context, c *call) error {
		req := &adminv1.ListOpensRequest{Node: *node, Share: *share}
		if *session != "" {
			id, err := parseID("--session", *session)
			if err != nil {
				return err
			}
			req.SessionId = id
		}
		ctx, cancel := c.conn.rpcContext(ctx, 0)
		defer cancel()
		resp, err := c.sessions().ListOpens(ctx, req)
		if err != nil {
			return err
		}
		l := openList{}
		for _, o := range resp.GetOpens() {
			l = append(l, openOf(o))
		}
		return c.p.print(l)
	}
}

func defineOpenClose(fs *flag.FlagSet) action {
	timeout := closeTimeoutFlag(fs, "open")
	return func(ctx context.Context, c *call) error {
		node := c.args[0]
		fid, err := parseID("file id", c.args[1])
		if err != nil {
			return err
		}
		if err := checkCloseTimeout(*timeout); err != nil {
			return err
		}
		ctx, cancel := c.conn.rpcContext(ctx, *timeout)
		defer cancel()
		resp, err := c.sessions().CloseOpen(ctx, &adminv1.CloseOpenRequest{Node: node, PersistentFileId: fid,
			Timeout: durationpb.New(*timeout)})
		if err != nil {
			return err
		}
		res := closed{Kind: "open", ID: fmt.Sprintf("0x%x on %s", fid, node), Closed: resp.GetClosed()}
		if err := c.p.print(res); err != nil {
			return err
		}
		if *timeout > 0 && !res.Closed {
			return incomplete(fmt.Sprintf("open %s still exists after %v (smbctl open ls --node %s)", res.ID, *timeout, node))
		}
		return nil
	}
}
