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

var nodeVerbs = []verb{
	{name: "add", args: "NAME", nargs: 1, summary: "admit a node and print its join token (shown once)", define: defineNodeAdd},
	{name: "rm", args: "NAME", nargs: 1, summary: "revoke a node's admission (--force if it is up)", define: defineNodeRm},
	{name: "drain", args: "NAME", nargs: 1, summary: "stop offering a node to clients and move its public addresses to other nodes; with --timeout, wait for its sessions to leave", define: defineNodeDrain},
	{name: "resume", args: "NAME", nargs: 1, summary: "offer a drained node to clients again (its public addresses return to it)", define: defineNodeResume},
	{name: "ls", nargs: 0, summary: "list nodes", define: defineNodeLs},
	{name: "get", args: "NAME", nargs: 1, summary: "show one node", define: defineNodeGet},
}

func (c *call) nodes() adminv1.NodeServiceClient { return adminv1.NewNodeServiceClient(c.conn.cc) }

// nodeView is a node as smbctl prints it; its JSON names are stable.
type nodeView struct {
	Name          string   `json:"name"`
	Addresses     []string `json:"addresses"`
	Serving       []string `json:"serving,omitempty"` // while up: the public addresses it holds now
	State         string   `json:"state"`             // admitted, up or down
	Draining      bool     `json:"draining"`
	DrainDeadline string   `json:"drain_deadline,omitempty"`
	Epoch         uint64   `json:"epoch"`
	Version       string   `json:"version,omitempty"`
	Sessions      uint32   `json:"sessions"`
	AdmitTime     string   `json:"admit_time,omitempty"`
	StartTime     string   `json:"start_time,omitempty"`
}

func nodeOf(n *adminv1.Node) nodeView {
	state := strings.ToLower(strings.TrimPrefix(n.GetState().String(), "NODE_STATE_"))
	return nodeView{Name: n.GetName(), Addresses: append([]string{}, n.GetAddresses()...), Serving: n.GetServing(), State: state,
		Draining: n.GetDraining(), DrainDeadline: fmtTime(n.GetDrainDeadline()), Epoch: n.GetEpoch(),
		Version: n.GetVersion(), Sessions: n.GetSessionCount(), AdmitTime: fmtTime(n.GetAdmitTime()),
		StartTime: fmtTime(n.GetStartTime())}
}

// stateCell is the STATE column: "up", "up,draining" …
func (n nodeView) stateCell() string {
	if n.Draining {
		return n.State + ",draining"
	}
	return n.State
}

func (n nodeView) table() table {
	return kv("", "Name", n.Name, "State", n.stateCell(), "Addresses", strings.Join(n.Addresses, ", "),
		"Serving", strings.Join(n.Serving, ", "),
		"Epoch", strconv.FormatUint(n.Epoch, 10), "Sessions", strconv.FormatUint(uint64(n.Sessions), 10),
		"Version", n.Version, "Drain deadline", n.DrainDeadline, "Admitted", n.AdmitTime, "Started", n.StartTime)
}

type nodeList []nodeView

func (l nodeList) table() table {
	t := table{header: []string{"NAME", "STATE", "ADDRESSES", "SERVING", "EPOCH", "SESSIONS", "VERSION"}}
	for _, n := range l {
		t.rows = append(t.rows, []string{n.Name, n.stateCell(), dash(strings.Join(n.Addresses, ",")), dash(strings.Join(n.Serving, ",")),
			strconv.FormatUint(n.Epoch, 10), strconv.FormatUint(uint64(n.Sessions), 10), dash(n.Version)})
	}
	return t
}

// nodeAdded is node add's result: the join token is shown only here.
type nodeAdded struct {
	Node      nodeView `json:"node"`
	JoinToken string   `json:"join_token"`
}

func (a nodeAdded) table() table {
	return kv(fmt.Sprintf("Node %q admitted. Its join token is shown only once: save it in a file and start the node with\n"+
		"  smbnode --etcd ENDPOINTS --name %s --join-token-file FILE\n", a.Node.Name, a.Node.Name),
		"Name", a.Node.Name, "Addresses", strings.Join(a.Node.Addresses, ", "), "Join token", a.JoinToken)
}

func defineNodeAdd(fs *flag.FlagSet) action {
	var addrs stringList
	fs.Var(&addrs, "address", "public SMB `HOST:PORT` clients reach the node at, served by another node while it is down or draining (repeat or comma-separate; port 445 if omitted)")
	return func(ctx context.Context, c *call) error {
		ctx, cancel := c.conn.rpcContext(ctx, 0)
		defer cancel()
		resp, err := c.nodes().AddNode(ctx, &adminv1.AddNodeRequest{Name: c.args[0], Addresses: addrs})
		if err != nil {
			return err
		}
		return c.p.print(nodeAdded{Node: nodeOf(resp.GetNode()), JoinToken: resp.GetJoinToken()})
	}
}

func defineNodeRm(fs *flag.FlagSet) action {
	force := fs.Bool("force", false, "remove the node even if it is up")
	return func(ctx context.Context, c *call) error {
		ctx, cancel := c.conn.rpcContext(ctx, 0)
		defer cancel()
		if _, err := c.nodes().RemoveNode(ctx, &adminv1.RemoveNodeRequest{Name: c.args[0], Force: *force}); err != nil {
			return err
		}
		return c.p.print(done{Kind: "node", Name: c.args[0], Action: "removed"})
	}
}

// maxDrainWait matches the coordinator's limit on a drain's timeout.
const maxDrainWait = 24 * time.Hour

func defineNodeDrain(fs *flag.FlagSet) action {
	timeout := fs.Duration("timeout", 0, "wait up to `DURATION` for the node's sessions to leave (0: mark draining and return)")
	return func(ctx context.Context, c *call) error {
		if *timeout < 0 || *timeout > maxDrainWait {
			return usagef("--timeout %v: want 0 to %v", *timeout, maxDrainWait)
		}
		ctx, cancel := c.conn.rpcContext(ctx, *timeout)
		defer cancel()
		resp, err := c.nodes().DrainNode(ctx, &adminv1.DrainNodeRequest{Name: c.args[0], Timeout: durationpb.New(*timeout)})
		if err != nil {
			return err
		}
		n := nodeOf(resp.GetNode())
		if err := c.p.print(n); err != nil {
			return err
		}
		if *timeout > 0 && !resp.GetDrained() {
			return incomplete(fmt.Sprintf("node %q still has %d session(s) after %v; it stays draining (smbctl session ls --node %s)",
				n.Name, n.Sessions, *timeout, n.Name))
		}
		return nil
	}
}

func defineNodeResume(fs *flag.FlagSet) action {
	return func(ctx context.Context, c *call) error {
		ctx, cancel := c.conn.rpcContext(ctx, 0)
		defer cancel()
		resp, err := c.nodes().ResumeNode(ctx, &adminv1.ResumeNodeRequest{Name: c.args[0]})
		if err != nil {
			return err
		}
		return c.p.print(nodeOf(resp.GetNode()))
	}
}

func defineNodeLs(fs *flag.FlagSet) action {
	return func(ctx context.Context, c *call) error {
		ctx, cancel := c.conn.rpcContext(ctx, 0)
		defer cancel()
		resp, err := c.nodes().ListNodes(ctx, &adminv1.ListNodesRequest{})
		if err != nil {
			return err
		}
		l := nodeList{}
		for _, n := range resp.GetNodes() {
			l = append(l, nodeOf(n))
		}
		return c.p.print(l)
	}
}

func defineNodeGet(fs *flag.FlagSet) action {
	return func(ctx context.Context, c *call) error {
		ctx, cancel := c.conn.rpcContext(ctx, 0)
		defer cancel()
		resp, err := c.nodes().GetNode(ctx, &adminv1.GetNodeRequest{Name: c.args[0]})
		if err != nil {
			return err
		}
		return c.p.print(nodeOf(resp.GetNode()))
	}
}
