package command

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
	"google.golang.org/protobuf/types/known/durationpb"
)

var sessionVerbs = []verb{
	{name: "ls", nargs: 0, summary: "list SMB sessions across the cluster", define: defineSessionLs},
	{name: "close", args: "ID", nargs: 1, summary: "end a session on every node it has a channel on", define: defineSessionClose},
	{name: "move", args: "ID", nargs: 1, summary: "tell the session's client, through its witness registration, to move to another node (CLIENT_MOVE)", define: defineSessionMove},
}

// maxCloseWait matches the coordinator's limit on a close's timeout.
const maxCloseWait = 5 * time.Minute

func (c *call) sessions() adminv1.SessionServiceClient {
	return adminv1.NewSessionServiceClient(c.conn.cc)
}

type channelView struct {
	Node          string `json:"node"`
	ClientAddress string `json:"client_address"`
}

// sessionView is a session as smbctl prints it; its JSON names are stable.
type sessionView struct {
	SessionID        uint64        `json:"session_id"`
	User             string        `json:"user"`
	Domain           string        `json:"domain"`
	ClientAddress    string        `json:"client_address"`
	ClientGUID       string        `json:"client_guid"`
	Dialect          string        `json:"dialect"`
	Signing          bool          `json:"signing"`
	SigningAlgorithm string        `json:"signing_algorithm"`
	Encryption       bool          `json:"encryption"`
	Cipher           string        `json:"cipher"`
	Node             string        `json:"node"`
	Channels         []channelView `json:"channels"`
	CreateTime       string        `json:"create_time,omitempty"`
}

func sessionOf(s *adminv1.Session) sessionView {
	v := sessionView{SessionID: s.GetSessionId(), User: s.GetUser(), Domain: s.GetDomain(),
		ClientAddress: s.GetClientAddress(), ClientGUID: s.GetClientGuid(), Dialect: s.GetDialect(),
		Signing: s.GetSigning(), SigningAlgorithm: s.GetSigningAlgorithm(), Encryption: s.GetEncryption(),
		Cipher: s.GetCipher(), Node: s.GetNode(), Channels: []channelView{}, CreateTime: fmtTime(s.GetCreateTime())}
	for _, ch := range s.GetChannels() {
		v.Channels = append(v.Channels, channelView{Node: ch.GetNode(), ClientAddress: ch.GetClientAddress()})
	}
	return v
}

type sessionList []sessionView

func (l sessionList) table() table {
	t := table{header: []string{"ID", "USER", "CLIENT", "DIALECT", "SIGNING", "ENCRYPTION", "NODE", "CHANNELS"}}
	for _, s := range l {
		user := s.User
		if s.Domain != "" {
			user = s.Domain + `\` + s.User
		}
		t.rows = append(t.rows, []string{fmt.Sprintf("0x%x", s.SessionID), dash(user), dash(s.ClientAddress),
			dash(s.Dialect), onOrNo(s.Signing, s.SigningAlgorithm), onOrNo(s.Encryption, s.Cipher), dash(s.Node),
			channelsCell(s.Channels)})
	}
	return t
}

// onOrNo is "no", or the algorithm in use ("yes" if unnamed).
func onOrNo(on bool, algorithm string) string {
	switch {
	case !on:
		return "no"
	case algorithm == "":
		return "yes"
	}
	return algorithm
}

// channelsCell counts channels per node: "n1:1,n2:2".
func channelsCell(chs []channelView) string {
	var order []string
	count := map[string]int{}
	for _, ch := range chs {
		if count[ch.Node] == 0 {
			order = append(order, ch.Node)
		}
		count[ch.Node]++
	}
	var parts []string
	for _, n := range order {
		parts = append(parts, n+":"+strconv.Itoa(count[n]))
	}
	return dash(strings.Join(parts, ","))
}

// closed is a close's result.
type closed struct {
	Kind   string `json:"kind"`
	ID     string `json:"id"`
	Closed bool   `json:"closed"` // gone before the timeout; false: requested only
}

func (c closed) table() table {
	if c.Closed {
		return table{title: fmt.Sprintf("%s %s closed", c.Kind, c.ID)}
	}
	return table{title: fmt.Sprintf("%s %s: close requested", c.Kind, c.ID)}
}

// parseID reads a session or file id in decimal or 0x hex.
func parseID(what, s string) (uint64, error) {
	id, err := strconv.ParseUint(s, 0, 64)
	if err != nil || id == 0 {
		return 0, usagef("%s %q: want a non-zero number, decimal or 0x hex (as listed by ls)", what, s)
	}
	return id, nil
}

// closeTimeoutFlag registers --timeout for a close.
func closeTimeoutFlag(fs *flag.FlagSet, what string) *time.Duration {
	return fs.Duration("timeout", 0, "wait up to `DURATION` for the "+what+" to go (0: request and return)")
}

func checkCloseTimeout(d time.Duration) error {
	if d < 0 || d > maxCloseWait {
		return usagef("--timeout %v: want 0 to %v", d, maxCloseWait)
	}
	return nil
}

func defineSessionLs(fs *flag.FlagSet) action {
	node := fs.String("node", "", "only sessions with a channel on `NODE`")
	user := fs.String("user", "", "only `USER`'s sessions")
	return func(ctx context.Context, c *call) error {
		ctx, cancel := c.conn.rpcContext(ctx, 0)
		defer cancel()
		resp, err := c.sessions().ListSessions(ctx, &adminv1.ListSessionsRequest{Node: *node, User: *user})
		if err != nil {
			return err
		}
		l := sessionList{}
		for _, s := range resp.GetSessions() {
			l = append(l, sessionOf(s))
		}
		return c.p.print(l)
	}
}

func defineSessionClose(fs *flag.FlagSet) action {
	timeout := closeTimeoutFlag(fs, "session")
	return func(ctx context.Context, c *call) error {
		id, err := parseID("session id", c.args[0])
		if err != nil {
			return err
		}
		if err := checkCloseTimeout(*timeout); err != nil {
			return err
		}
		ctx, cancel := c.conn.rpcContext(ctx, *timeout)
		defer cancel()
		resp, err := c.sessions().CloseSession(ctx, &adminv1.CloseSessionRequest{SessionId: id, Timeout: durationpb.New(*timeout)})
		if err != nil {
			return err
		}
		res := closed{Kind: "session", ID: fmt.Sprintf("0x%x", id), Closed: resp.GetClosed()}
		if err := c.p.print(res); err != nil {
			return err
		}
		if *timeout > 0 && !res.Closed {
			return incomplete(fmt.Sprintf("session %s still exists after %v (smbctl session ls)", res.ID, *timeout))
		}
		return nil
	}
}
