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
	Node             string     `json:"node"`
	Owner            string     `json:"owner"`
	PersistentFileID uint64     `json:"persistent_file_id"`
	SessionID        uint64     `json:"session_id"`
	User             string     `json:"user"`
	Share            string     `json:"share"`
	Path             string     `json:"path"`
	DesiredAccess    uint32     `json:"desired_access"`
	ShareAccess      uint32     `json:"share_access"`
	Oplock           string     `json:"oplock"`
	Durable          bool       `json:"durable"`
	OpenTime         string     `json:"open_time,omitempty"`
	Locks            []lockSpan `json:"locks"`
}

// lockSpan is a byte-range lock of an open.
type lockSpan struct {
	Offset    uint64 `json:"offset"`
	Length    uint64 `json:"length"`
	Exclusive bool   `json:"exclusive"`
}

func openOf(o *adminv1.Open) openView {
	v := openView{Node: o.GetNode(), Owner: o.GetOwnerNode(), PersistentFileID: o.GetPersistentFileId(), SessionID: o.GetSessionId(),
		User: o.GetUser(), Share: o.GetShare(), Path: o.GetPath(), DesiredAccess: o.GetDesiredAccess(),
		ShareAccess: o.GetShareAccess(), Oplock: o.GetOplock(), Durable: o.GetDurable(), OpenTime: fmtTime(o.GetOpenTime()),
		Locks: []lockSpan{}}
	for _, l := range o.GetLocks() {
		v.Locks = append(v.Locks, lockSpan{Offset: l.GetOffset(), Length: l.GetLength(), Exclusive: l.GetExclusive()})
	}
	return v
}

type openList []openView

func (l openList) table() table {
	t := table{header: []string{"NODE", "OWNER", "FILE-ID", "SESSION", "USER", "SHARE", "PATH", "ACCESS", "OPLOCK", "DURABLE", "LOCKS"}}
	for _, o := range l {
		t.rows = append(t.rows, []string{o.Node, dash(o.Owner), fmt.Sprintf("0x%x", o.PersistentFileID), fmt.Sprintf("0x%x", o.SessionID),
			dash(o.User), dash(o.Share), dash(o.Path), fmt.Sprintf("0x%08x", o.DesiredAccess), dash(o.Oplock), yesNo(o.Durable),
			fmt.Sprint(len(o.Locks))})
	}
	return t
}

// listOpens defines the filters of open ls and lock ls; the action it
// returns lists the opens they select.
func listOpens(fs *flag.FlagSet, what string) func(ctx context.Context, c *call) ([]*adminv1.Open, error) {
	node := fs.String("node", "", "only "+what+" on `NODE` (the node holding the open)")
	session := fs.String("session", "", "only "+what+" of session `ID`")
	share := fs.String("share", "", "only "+what+" on `SHARE`")
	return func(ctx context.Context, c *call) ([]*adminv1.Open, error) {
		req := &adminv1.ListOpensRequest{Node: *node, Share: *share}
		if *session != "" {
			id, err := parseID("--session", *session)
			if err != nil {
				return nil, err
			}
			req.SessionId = id
		}
		ctx, cancel := c.conn.rpcContext(ctx, 0)
		defer cancel()
		resp, err := c.sessions().ListOpens(ctx, req)
		if err != nil {
			return nil, err
		}
		return resp.GetOpens(), nil
	}
}

func defineOpenLs(fs *flag.FlagSet) action {
	list := listOpens(fs, "opens")
	return func(ctx context.Context, c *call) error {
		opens, err := list(ctx, c)
		if err != nil {
			return err
		}
		l := openList{}
		for _, o := range opens {
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
