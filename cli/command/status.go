package command

import (
	"context"
	"flag"
	"fmt"
	"strconv"

	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
)

var statusVerbs = []verb{
	{name: "", nargs: 0, summary: "show the cluster's nodes, counts and etcd health (exit 6 if etcd is unhealthy)", define: defineStatus},
}

type etcdMemberView struct {
	Endpoint    string `json:"endpoint"`
	Healthy     bool   `json:"healthy"`
	Leader      bool   `json:"leader"`
	Version     string `json:"version"`
	DBSizeBytes int64  `json:"db_size_bytes"`
	Error       string `json:"error,omitempty"`
}

type etcdView struct {
	Healthy  bool             `json:"healthy"`
	Revision int64            `json:"revision"`
	Members  []etcdMemberView `json:"members"`
}

// statusView is the cluster status as smbctl prints it; its JSON names
// are stable.
type statusView struct {
	CoordinatorVersion string   `json:"coordinator_version"`
	Nodes              nodeList `json:"nodes"`
	NodesUp            uint32   `json:"nodes_up"`
	Shares             uint32   `json:"shares"`
	Users              uint32   `json:"users"`
	Sessions           uint32   `json:"sessions"`
	Opens              uint32   `json:"opens"`
	Etcd               etcdView `json:"etcd"`
}

func statusOf(r *adminv1.GetStatusResponse) statusView {
	v := statusView{CoordinatorVersion: r.GetCoordinatorVersion(), Nodes: nodeList{}, NodesUp: r.GetNodesUp(),
		Shares: r.GetShareCount(), Users: r.GetUserCount(), Sessions: r.GetSessionCount(), Opens: r.GetOpenCount(),
		Etcd: etcdView{Healthy: r.GetEtcd().GetHealthy(), Revision: r.GetEtcd().GetRevision(), Members: []etcdMemberView{}}}
	for _, n := range r.GetNodes() {
		v.Nodes = append(v.Nodes, nodeOf(n))
	}
	for _, m := range r.GetEtcd().GetMembers() {
		v.Etcd.Members = append(v.Etcd.Members, etcdMemberView{Endpoint: m.GetEndpoint(), Healthy: m.GetHealthy(),
			Leader: m.GetLeader(), Version: m.GetVersion(), DBSizeBytes: m.GetDbSizeBytes(), Error: m.GetError()})
	}
	return v
}

func (s statusView) table() table { return s.tables()[0] }

func (s statusView) tables() []table {
	health := "unhealthy"
	if s.Etcd.Healthy {
		health = "healthy"
	}
	summary := kv("", "Coordinator", s.CoordinatorVersion,
		"Nodes", fmt.Sprintf("%d (%d up)", len(s.Nodes), s.NodesUp),
		"Shares", strconv.FormatUint(uint64(s.Shares), 10), "Users", strconv.FormatUint(uint64(s.Users), 10),
		"Sessions", strconv.FormatUint(uint64(s.Sessions), 10), "Opens", strconv.FormatUint(uint64(s.Opens), 10),
		"Etcd", fmt.Sprintf("%s, revision %d, %d member(s)", health, s.Etcd.Revision, len(s.Etcd.Members)))
	members := table{header: []string{"ETCD ENDPOINT", "HEALTHY", "LEADER", "VERSION", "DB SIZE", "ERROR"}}
	for _, m := range s.Etcd.Members {
		members.rows = append(members.rows, []string{m.Endpoint, yesNo(m.Healthy), yesNo(m.Leader), dash(m.Version),
			fmtBytes(m.DBSizeBytes), dash(m.Error)})
	}
	return []table{summary, members, s.Nodes.table()}
}

func defineStatus(fs *flag.FlagSet) action {
	return func(ctx context.Context, c *call) error {
		ctx, cancel := c.conn.rpcContext(ctx, 0)
		defer cancel()
		resp, err := adminv1.NewClusterServiceClient(c.conn.cc).GetStatus(ctx, &adminv1.GetStatusRequest{})
		if err != nil {
			return err
		}
		s := statusOf(resp)
		if err := c.p.print(s); err != nil {
			return err
		}
		if !s.Etcd.Healthy {
			return exitError{"etcd is unhealthy: check the etcd members listed above", ExitUnavailable}
		}
		return nil
	}
}
