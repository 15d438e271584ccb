package service

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/smbcluster/smbcluster/coordinator/store"
	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"google.golang.org/protobuf/proto"
)

// statsTimeout bounds the fetch of one node's counters.
const statsTimeout = 3 * time.Second

// statsClient fetches the nodes' stats directly: no proxy from the
// environment stands between the coordinator and its nodes.
var statsClient = &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 2}}

// maxStatsBody bounds a node's /stats answer.
const maxStatsBody = 4 << 20

// GetClusterStats asks every admitted node that is up for its counters
// at the metrics address its live record publishes (GET /stats), all in
// parallel; a node that cannot answer gets an error instead.
func (s *clusterService) GetClusterStats(ctx context.Context, req *adminv1.GetClusterStatsRequest) (*adminv1.GetClusterStatsResponse, error) {
	items, err := store.List(ctx, s.b.st, statev1.NodesPrefix, func() *statev1.NodeRecord { return &statev1.NodeRecord{} })
	if err != nil {
		return nil, storeError(err, "nodes")
	}
	p, err := s.b.readPublished(ctx)
	if err != nil {
		return nil, err
	}
	top := req.Top
	if top == 0 {
		top = 10
	}
	out := make([]*adminv1.NodeStats, len(items))
	var wg sync.WaitGroup
	for i, it := range items {
		out[i] = &adminv1.NodeStats{Node: it.Record.Name}
		live := p.live[strings.ToLower(it.Record.Name)]
		switch {
		case live == nil:
			out[i].Error = "node is down"
		case live.MetricsAddress == "":
			out[i].Error = "no metrics address: the node runs without --metrics-addr"
		default:
			wg.Go(func() { fetchStats(ctx, live.MetricsAddress, top, out[i]) })
		}
	}
	wg.Wait()
	slices.SortFunc(out, func(a, b *adminv1.NodeStats) int { return strings.Compare(a.Node, b.Node) })
	return &adminv1.GetClusterStatsResponse{Nodes: out}, nil
}

// fetchStats fills ns from GET http://addr/stats, or sets its error.
func fetchStats(ctx context.Context, addr string, top uint32, ns *adminv1.NodeStats) {
	ctx, cancel := context.WithTimeout(ctx, statsTimeout)
	defer cancel()
	u := url.URL{Scheme: "http", Host: addr, Path: "/stats", RawQuery: "top=" + strconv.Itoa(int(top))}
	st, err := getStats(ctx, u.String())
	if err != nil {
		ns.Error = err.Error()
		return
	}
	node := ns.Node
	proto.Reset(ns)
	ns.Node = node
	ns.Time, ns.StartTime = st.Time, st.StartTime
	ns.Total = traffic(st.Total)
	for _, sh := range st.Shares {
		ns.Shares = append(ns.Shares, &adminv1.ShareStats{Name: sh.Name, Traffic: traffic(sh.Traffic)})
	}
	ns.TopFiles = entries(st.TopFiles)
	ns.TopClients = entries(st.TopClients)
}

func getStats(ctx context.Context, u string) (*statev1.NodeStats, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := statsClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching the node's stats: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxStatsBody))
	if err != nil {
		return nil, fmt.Errorf("fetching the node's stats: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching the node's stats: %s", resp.Status)
	}
	st := &statev1.NodeStats{}
	if err := proto.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("the node's stats: %w", err)
	}
	return st, nil
}

func traffic(t *statev1.TrafficStats) *adminv1.TrafficStats {
	if t == nil {
		return nil
	}
	return &adminv1.TrafficStats{
		Requests: t.Requests, BytesRead: t.BytesRead, BytesWritten: t.BytesWritten,
		BucketBounds: t.BucketBounds, BucketCounts: t.BucketCounts,
	}
}

func entries(es []*statev1.TopEntry) []*adminv1.TopEntry {
	out := make([]*adminv1.TopEntry, 0, len(es))
	for _, e := range es {
		out = append(out, &adminv1.TopEntry{Key: e.Key, Requests: e.Requests, BytesRead: e.BytesRead, BytesWritten: e.BytesWritten})
	}
	return out
}
