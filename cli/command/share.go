package command

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"

	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
)

var shareVerbs = []verb{
	{name: "add", args: "NAME PATH", nargs: 2, summary: "create a share of directory PATH on every node", define: defineShareAdd},
	{name: "rm", args: "NAME", nargs: 1, summary: "delete a share (its tree connects are disconnected)", define: defineShareRm},
	{name: "set", args: "NAME", nargs: 1, summary: "change the fields given as flags", define: defineShareSet},
	{name: "ls", nargs: 0, summary: "list shares", define: defineShareLs},
	{name: "get", args: "NAME", nargs: 1, summary: "show one share", define: defineShareGet},
	{name: "move", args: "NAME", nargs: 1, summary: "tell the share's witness clients it is on another node (SHARE_MOVE)", define: defineShareMove},
}

func (c *call) shares() adminv1.ShareServiceClient { return adminv1.NewShareServiceClient(c.conn.cc) }

// shareView is a share as smbctl prints it; its JSON names are stable.
type shareView struct {
	Name                   string `json:"name"`
	Path                   string `json:"path"`
	Comment                string `json:"comment"`
	ReadOnly               bool   `json:"read_only"`
	EncryptData            bool   `json:"encrypt_data"`
	Hidden                 bool   `json:"hidden"`
	ContinuousAvailability bool   `json:"continuous_availability"`
	CreateTime             string `json:"create_time,omitempty"`
	UpdateTime             string `json:"update_time,omitempty"`
	Revision               int64  `json:"revision"`
	SkipStorageCheck       bool   `json:"skip_storage_check"`
	VolumeID               string `json:"volume_id"`
	// Views is how each live node serves the share.
	Views []shareNodeView `json:"views"`
}

// shareNodeView is one node's view of a share: state serving, checking,
// refused or unchecked.
type shareNodeView struct {
	Node     string `json:"node"`
	State    string `json:"state"`
	Reason   string `json:"reason,omitempty"`
	Since    string `json:"since,omitempty"`
	ZeroCopy bool   `json:"zero_copy"`
}

func shareOf(s *adminv1.Share) shareView {
	sv := shareView{Name: s.GetName(), Path: s.GetPath(), Comment: s.GetComment(), ReadOnly: s.GetReadOnly(),
		EncryptData: s.GetEncryptData(), Hidden: s.GetHidden(), ContinuousAvailability: s.GetContinuousAvailability(),
		CreateTime: fmtTime(s.GetCreateTime()), UpdateTime: fmtTime(s.GetUpdateTime()), Revision: s.GetRevision(),
		SkipStorageCheck: s.GetSkipStorageCheck(), VolumeID: fmt.Sprintf("%016x", s.GetVolumeId()), Views: []shareNodeView{}}
	for _, v := range s.GetViews() {
		sv.Views = append(sv.Views, shareNodeView{Node: v.GetNode(), State: v.GetState(), Reason: v.GetReason(),
			Since: fmtTime(v.GetSince()), ZeroCopy: v.GetZeroCopy()})
	}
	return sv
}

// nodes is the NODES column: each node's state, "node1 serving,
// node2 refused"; "-" when no node serves the share.
func (s shareView) nodes() string {
	var f []string
	for _, v := range s.Views {
		f = append(f, v.Node+" "+v.State)
	}
	return dash(strings.Join(f, ", "))
}

// flags is the FLAGS column: "read-only,encrypt" or "-".
func (s shareView) flags() string {
	var f []string
	for _, x := range []struct {
		on   bool
		name string
	}{{s.ReadOnly, "read-only"}, {s.EncryptData, "encrypt"}, {s.Hidden, "hidden"}, {s.ContinuousAvailability, "ca"}, {s.SkipStorageCheck, "unchecked-storage"}} {
		if x.on {
			f = append(f, x.name)
		}
	}
	return dash(strings.Join(f, ","))
}

func (s shareView) table() table {
	t := kv("", "Name", s.Name, "Path", s.Path, "Comment", s.Comment, "Flags", s.flags(), "Volume", s.VolumeID,
		"Created", s.CreateTime, "Updated", s.UpdateTime, "Revision", strconv.FormatInt(s.Revision, 10))
	for _, v := range s.Views {
		state := v.State
		if !v.ZeroCopy && v.State != "refused" {
			state += " (no zero-copy)"
		}
		if v.Reason != "" {
			state += ": " + v.Reason
		}
		t.rows = append(t.rows, []string{"Node " + v.Node, state})
	}
	return t
}

type shareList []shareView

func (l shareList) table() table {
	t := table{header: []string{"NAME", "PATH", "FLAGS", "NODES", "COMMENT"}}
	for _, s := range l {
		t.rows = append(t.rows, []string{s.Name, s.Path, s.flags(), s.nodes(), dash(s.Comment)})
	}
	return t
}

// shareFlags are the share fields settable by flag; set maps each flag
// name to its update_mask field.
type shareFlags struct {
	path, comment                           string
	readOnly, encrypt, hidden, availability bool
	skipCheck                               bool
}

var shareMask = map[string]string{"path": "path", "comment": "comment", "read-only": "read_only",
	"encrypt": "encrypt_data", "hidden": "hidden", "continuous-availability": "continuous_availability",
	"skip-storage-check": "skip_storage_check"}

func (f *shareFlags) register(fs *flag.FlagSet, withPath bool) {
	if withPath {
		fs.StringVar(&f.path, "path", "", "the shared directory's absolute `PATH`")
	}
	fs.StringVar(&f.comment, "comment", "", "`TEXT` clients see")
	fs.BoolVar(&f.readOnly, "read-only", false, "refuse writes")
	fs.BoolVar(&f.encrypt, "encrypt", false, "require SMB3 encryption")
	fs.BoolVar(&f.hidden, "hidden", false, "leave the share out of share lists")
	fs.BoolVar(&f.availability, "continuous-availability", false, "offer persistent handles")
	fs.BoolVar(&f.skipCheck, "skip-storage-check", false,
		"UNSAFE: serve without checking that every node's mount of the share is coherent with the others' (stale data, files keyed apart)")
}

func (f *shareFlags) share(name string) *adminv1.Share {
	return &adminv1.Share{Name: name, Path: f.path, Comment: f.comment, ReadOnly: f.readOnly,
		EncryptData: f.encrypt, Hidden: f.hidden, ContinuousAvailability: f.availability,
		SkipStorageCheck: f.skipCheck}
}

func defineShareAdd(fs *flag.FlagSet) action {
	var f shareFlags
	f.register(fs, false)
	return func(ctx context.Context, c *call) error {
		f.path = c.args[1]
		ctx, cancel := c.conn.rpcContext(ctx, 0)
		defer cancel()
		resp, err := c.shares().CreateShare(ctx, &adminv1.CreateShareRequest{Share: f.share(c.args[0])})
		if err != nil {
			return err
		}
		return c.p.print(shareOf(resp.GetShare()))
	}
}

func defineShareSet(fs *flag.FlagSet) action {
	var f shareFlags
	f.register(fs, true)
	rev := fs.Int64("if-revision", 0, "fail unless the share is still at `REVISION` (from share get)")
	return func(ctx context.Context, c *call) error {
		mask := &fieldmaskpb.FieldMask{}
		fs.Visit(func(fl *flag.Flag) {
			if field, ok := shareMask[fl.Name]; ok {
				mask.Paths = append(mask.Paths, field)
			}
		})
		if len(mask.Paths) == 0 {
			return usagef("nothing to change: give --path, --comment, --read-only, --encrypt, --hidden, --continuous-availability or --skip-storage-check (=false to clear)")
		}
		sh := f.share(c.args[0])
		sh.Revision = *rev
		ctx, cancel := c.conn.rpcContext(ctx, 0)
		defer cancel()
		resp, err := c.shares().UpdateShare(ctx, &adminv1.UpdateShareRequest{Share: sh, UpdateMask: mask})
		if err != nil {
			return err
		}
		return c.p.print(shareOf(resp.GetShare()))
	}
}

func defineShareRm(fs *flag.FlagSet) action {
	return func(ctx context.Context, c *call) error {
		ctx, cancel := c.conn.rpcContext(ctx, 0)
		defer cancel()
		if _, err := c.shares().DeleteShare(ctx, &adminv1.DeleteShareRequest{Name: c.args[0]}); err != nil {
			return err
		}
		return c.p.print(done{Kind: "share", Name: c.args[0], Action: "removed"})
	}
}

func defineShareLs(fs *flag.FlagSet) action {
	return func(ctx context.Context, c *call) error {
		ctx, cancel := c.conn.rpcContext(ctx, 0)
		defer cancel()
		resp, err := c.shares().ListShares(ctx, &adminv1.ListSharesRequest{})
		if err != nil {
			return err
		}
		l := shareList{}
		for _, s := range resp.GetShares() {
			l = append(l, shareOf(s))
		}
		return c.p.print(l)
	}
}

func defineShareGet(fs *flag.FlagSet) action {
	return func(ctx context.Context, c *call) error {
		ctx, cancel := c.conn.rpcContext(ctx, 0)
		defer cancel()
		resp, err := c.shares().GetShare(ctx, &adminv1.GetShareRequest{Name: c.args[0]})
		if err != nil {
			return err
		}
		return c.p.print(shareOf(resp.GetShare()))
	}
}
