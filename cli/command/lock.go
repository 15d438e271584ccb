package command

import (
	"context"
	"flag"
	"fmt"
)

var lockVerbs = []verb{
	{name: "ls", nargs: 0, summary: "list byte-range locks across the cluster", define: defineLockLs},
}

// lockView is a byte-range lock as smbctl prints it, with the open that
// holds it; its JSON names are stable.
type lockView struct {
	Node             string `json:"node"`
	Owner            string `json:"owner"`
	PersistentFileID uint64 `json:"persistent_file_id"`
	SessionID        uint64 `json:"session_id"`
	Share            string `json:"share"`
	Path             string `json:"path"`
	Offset           uint64 `json:"offset"`
	Length           uint64 `json:"length"`
	Exclusive        bool   `json:"exclusive"`
}

type lockList []lockView

func (l lockList) table() table {
	t := table{header: []string{"NODE", "OWNER", "FILE-ID", "SESSION", "SHARE", "PATH", "OFFSET", "LENGTH", "MODE"}}
	for _, k := range l {
		mode := "shared"
		if k.Exclusive {
			mode = "exclusive"
		}
		t.rows = append(t.rows, []string{k.Node, dash(k.Owner), fmt.Sprintf("0x%x", k.PersistentFileID),
			fmt.Sprintf("0x%x", k.SessionID), dash(k.Share), dash(k.Path), fmt.Sprint(k.Offset), fmt.Sprint(k.Length), mode})
	}
	return t
}

// defineLockLs lists the locks of the opens open ls lists, one row per
// lock, as the nodes holding the opens last published them.
func defineLockLs(fs *flag.FlagSet) action {
	list := listOpens(fs, "locks")
	return func(ctx context.Context, c *call) error {
		opens, err := list(ctx, c)
		if err != nil {
			return err
		}
		l := lockList{}
		for _, o := range opens {
			for _, k := range o.GetLocks() {
				l = append(l, lockView{Node: o.GetNode(), Owner: o.GetOwnerNode(), PersistentFileID: o.GetPersistentFileId(),
					SessionID: o.GetSessionId(), Share: o.GetShare(), Path: o.GetPath(),
					Offset: k.GetOffset(), Length: k.GetLength(), Exclusive: k.GetExclusive()})
			}
		}
		return c.p.print(l)
	}
}
