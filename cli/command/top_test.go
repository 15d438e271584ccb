package command

import (
	"math"
	"testing"
	"time"

	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func TestQuantile(t *testing.T) {
	bounds := []float64{0.001, 0.01, 0.1}
	// 100 requests: 90 under 1 ms, 9 in (1, 10] ms, 1 in (10, 100] ms.
	counts := []uint64{90, 99, 100}
	if got := quantile(0.99, 100, bounds, counts); math.Abs(got-0.01) > 1e-9 {
		t.Errorf("p99 = %v, want 0.01", got)
	}
	if got := quantile(0.5, 100, bounds, counts); math.Abs(got-0.001*50/90) > 1e-9 {
		t.Errorf("p50 = %v, want %v", got, 0.001*50/90)
	}
	if got := quantile(0.99, 0, bounds, counts); got != 0 {
		t.Errorf("p99 of nothing = %v", got)
	}
}

// TestTopOf: rates are the differences over the nodes' own interval;
// a share's rates sum over nodes; files are ordered by rate; a node in
// error is listed with its error; a restarted node counts from its start.
func TestTopOf(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	start := timestamppb.New(t0.Add(-time.Hour))
	traffic := func(req, rd uint64, counts ...uint64) *adminv1.TrafficStats {
		return &adminv1.TrafficStats{Requests: req, BytesRead: rd, BucketBounds: []float64{0.001, 0.01}, BucketCounts: counts}
	}
	node := func(name string, at time.Time, req, rd uint64, counts []uint64, files ...*adminv1.TopEntry) *adminv1.NodeStats {
		return &adminv1.NodeStats{Node: name, Time: timestamppb.New(at), StartTime: start, Total: traffic(req, rd, counts...),
			Shares: []*adminv1.ShareStats{{Name: "data", Traffic: traffic(req, rd, counts...)}}, TopFiles: files}
	}
	prev := &adminv1.GetClusterStatsResponse{Nodes: []*adminv1.NodeStats{
		node("n1", t0, 100, 1000, []uint64{100, 100}, &adminv1.TopEntry{Key: `data\hot`, Requests: 50}, &adminv1.TopEntry{Key: `data\cold`, Requests: 40}),
		node("n2", t0, 0, 0, []uint64{0, 0}),
		{Node: "n3", Error: "node is down"},
	}}
	cur := &adminv1.GetClusterStatsResponse{Nodes: []*adminv1.NodeStats{
		node("n1", t0.Add(2*time.Second), 300, 5000, []uint64{298, 300}, &adminv1.TopEntry{Key: `data\hot`, Requests: 250}, &adminv1.TopEntry{Key: `data\cold`, Requests: 41}),
		node("n2", t0.Add(2*time.Second), 100, 0, []uint64{100, 100}),
		{Node: "n3", Error: "node is down"},
	}}
	v := topOf(prev, cur, 10)
	if len(v.Nodes) != 3 || v.Nodes[0].RequestsPerSec != 100 || v.Nodes[0].ReadBytesPerSec != 2000 || v.Nodes[2].Error != "node is down" {
		t.Fatalf("nodes %+v", v.Nodes)
	}
	// n1: 200 requests, 198 under 1 ms: p99 (rank 198) is the first bound.
	if v.Nodes[0].P99Ms != 1 {
		t.Errorf("n1 p99 = %v ms, want 1", v.Nodes[0].P99Ms)
	}
	if len(v.Shares) != 1 || v.Shares[0].RequestsPerSec != 150 {
		t.Errorf("shares %+v, want data at 150 req/s (n1 100 + n2 50)", v.Shares)
	}
	if len(v.Files) != 2 || v.Files[0].Key != `data\hot` || v.Files[0].RequestsPerSec != 100 || v.Files[1].RequestsPerSec != 0.5 {
		t.Errorf("files %+v", v.Files)
	}
}
