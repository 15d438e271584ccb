package command

import (
	"context"
	"flag"
	"fmt"
	"strings"

	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
)

// The witness service's registrations ([MS-SWN]) and the moves sent
// through them: `smbctl witness ls`, `smbctl client move`, `smbctl share
// move` and `smbctl session move` (share.go and session.go list them among
// their verbs).

var witnessVerbs = []verb{
	{name: "ls", nargs: 0, summary: "list the clients registered with the witness service", define: defineWitnessLs},
}

var clientVerbs = []verb{
	{name: "move", args: "CLIENT", nargs: 1, summary: "tell a witness client (computer name) to move to another node (CLIENT_MOVE)", define: defineClientMove},
}

func (c *call) witness() adminv1.WitnessServiceClient {
	return adminv1.NewWitnessServiceClient(c.conn.cc)
}

// registrationView is a witness registration as smbctl prints it; its
// JSON names are stable.
type registrationView struct {
	ID          string   `json:"id"`
	Client      string   `json:"client"`
	FromAddress string   `json:"client_address"`
	NetName     string   `json:"net_name"`
	Share       string   `json:"share"`
	IPAddress   string   `json:"ip_address"`
	AddressNode string   `json:"address_node"`
	Node        string   `json:"node"`
	WaitingOn   []string `json:"waiting_on"`
	Version     uint32   `json:"version"`
	Since       string   `json:"since,omitempty"`
}

func registrationOf(r *adminv1.WitnessRegistration) registrationView {
	w := r.GetWaitingOn()
	if w == nil {
		w = []string{}
	}
	return registrationView{ID: r.GetId(), Client: r.GetClientName(), NetName: r.GetNetName(), Share: r.GetShareName(),
		IPAddress: r.GetIpAddress(), AddressNode: r.GetAddressNode(), Node: r.GetNode(), WaitingOn: w,
		Version: r.GetVersion(), Since: fmtTime(r.GetCreateTime()), FromAddress: r.GetClientAddress()}
}

type registrationList []registrationView

func (l registrationList) table() table {
	t := table{header: []string{"CLIENT", "FROM", "NET NAME", "SHARE", "FOR", "NODE", "WAITING ON", "SINCE", "ID"}}
	for _, r := range l {
		target := r.IPAddress
		if r.AddressNode != "" {
			target += " (" + r.AddressNode + ")"
		}
		t.rows = append(t.rows, []string{dash(r.Client), dash(r.FromAddress), dash(r.NetName), dash(r.Share), dash(target), dash(r.Node),
			dash(strings.Join(r.WaitingOn, ",")), dash(r.Since), r.ID})
	}
	return t
}

// moved is a move's result: the registrations that were sent it.
type moved struct {
	Kind          string             `json:"kind"`
	What          string             `json:"what"`
	To            string             `json:"to"`
	Registrations []registrationView `json:"registrations"`
}

func (m moved) table() table {
	t := registrationList(m.Registrations).table()
	t.title = fmt.Sprintf("%s %s: sent %s to %d registration(s), to node %s", m.Kind, m.What, moveName(m.Kind), len(m.Registrations), m.To)
	return t
}

func defineSessionMove(fs *flag.FlagSet) action {
	to := toFlag(fs)
	return func(ctx context.Context, c *call) error {
		id, err := parseID("session id", c.args[0])
		if err != nil {
			return err
		}
		if *to == "" {
			return usagef("--to NODE is required")
		}
		ctx, cancel := c.conn.rpcContext(ctx, 0)
		defer cancel()
		resp, err := c.witness().MoveSession(ctx, &adminv1.MoveSessionRequest{SessionId: id, ToNode: *to})
		if err != nil {
			return err
		}
		return c.p.print(movedOf("session", fmt.Sprintf("0x%x", id), *to, resp.GetRegistrations()))
	}
}

func moveName(kind string) string {
	if kind == "share" {
		return "SHARE_MOVE"
	}
	return "CLIENT_MOVE"
}

func defineWitnessLs(fs *flag.FlagSet) action {
	return func(ctx context.Context, c *call) error {
		ctx, cancel := c.conn.rpcContext(ctx, 0)
		defer cancel()
		resp, err := c.witness().ListWitnessRegistrations(ctx, &adminv1.ListWitnessRegistrationsRequest{})
		if err != nil {
			return err
		}
		l := registrationList{}
		for _, r := range resp.GetRegistrations() {
			l = append(l, registrationOf(r))
		}
		return c.p.print(l)
	}
}

// toFlag registers the required --to NODE of a move.
func toFlag(fs *flag.FlagSet) *string {
	return fs.String("to", "", "the `NODE` to move to (required)")
}

func defineClientMove(fs *flag.FlagSet) action {
	return defineMove(fs, "client", func(ctx context.Context, c *call, what, to string) ([]*adminv1.WitnessRegistration, error) {
		resp, err := c.witness().MoveClient(ctx, &adminv1.MoveClientRequest{Client: what, ToNode: to})
		return resp.GetRegistrations(), err
	})
}

func defineShareMove(fs *flag.FlagSet) action {
	return defineMove(fs, "share", func(ctx context.Context, c *call, what, to string) ([]*adminv1.WitnessRegistration, error) {
		resp, err := c.witness().MoveShare(ctx, &adminv1.MoveShareRequest{Share: what, ToNode: to})
		return resp.GetRegistrations(), err
	})
}

// defineMove is a move of a kind of thing (its first argument) to the
// node of --to, made by move.
func defineMove(fs *flag.FlagSet, kind string,
	move func(ctx context.Context, c *call, what, to string) ([]*adminv1.WitnessRegistration, error)) action {
	to := toFlag(fs)
	return func(ctx context.Context, c *call) error {
		if *to == "" {
			return usagef("--to NODE is required")
		}
		ctx, cancel := c.conn.rpcContext(ctx, 0)
		defer cancel()
		regs, err := move(ctx, c, c.args[0], *to)
		if err != nil {
			return err
		}
		return c.p.print(movedOf(kind, c.args[0], *to, regs))
	}
}

func movedOf(kind, what, to string, regs []*adminv1.WitnessRegistration) moved {
	m := moved{Kind: kind, What: what, To: to, Registrations: []registrationView{}}
	for _, r := range regs {
		m.Registrations = append(m.Registrations, registrationOf(r))
	}
	return m
}
