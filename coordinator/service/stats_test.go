package service

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"google.golang.org/protobuf/proto"
)

// TestGetClusterStats: the coordinator reads /stats at each live node's
// published metrics address, asks for the top it was asked, and reports
// why it could not for the others.
func TestGetClusterStats(t *testing.T) {
	e := newEnv(t)
	var asked string
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = r.URL.String()
		b, _ := proto.Marshal(&statev1.NodeStats{Node: "n1",
			Total:    &statev1.TrafficStats{Requests: 42, BytesRead: 4096, BucketBounds: []float64{0.001}, BucketCounts: []uint64{40}},
			Shares:   []*statev1.ShareStats{{Name: "data", Traffic: &statev1.TrafficStats{Requests: 42}}},
			TopFiles: []*statev1.TopEntry{{Key: `data\hot`, Requests: 40}}, TopClients: []*statev1.TopEntry{{Key: "ivan@127.0.0.1", Requests: 42}}})
		w.Write(b)
	}))
	defer good.Close()
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer broken.Close()
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		if _, err := e.nodes.AddNode(e.ctx, &adminv1.AddNodeRequest{Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	live := func(name, addr string) {
		e.put(statev1.NodeLiveKey(name), &statev1.NodeLiveRecord{Name: name, Epoch: 1, MetricsAddress: addr})
	}
	live("n1", strings.TrimPrefix(good.URL, "http://"))
	live("n2", "")
	live("n4", strings.TrimPrefix(broken.URL, "http://"))
	resp, err := e.cluster.GetClusterStats(e.ctx, &adminv1.GetClusterStatsRequest{Top: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Nodes) != 4 {
		t.Fatalf("%d nodes, want 4: %v", len(resp.Nodes), resp)
	}
	n1, n2, n3, n4 := resp.Nodes[0], resp.Nodes[1], resp.Nodes[2], resp.Nodes[3]
	if n1.Node != "n1" || n1.Error != "" || n1.Total.GetRequests() != 42 || n1.Total.GetBucketCounts()[0] != 40 ||
		len(n1.Shares) != 1 || n1.TopFiles[0].GetKey() != `data\hot` || n1.TopClients[0].GetRequests() != 42 {
		t.Errorf("n1: %v", n1)
	}
	if asked != "/stats?top=3" {
		t.Errorf("asked %q, want /stats?top=3", asked)
	}
	if !strings.Contains(n2.Error, "--metrics-addr") || !strings.Contains(n3.Error, "down") || !strings.Contains(n4.Error, "500") {
		t.Errorf("errors: n2 %q, n3 %q, n4 %q", n2.Error, n3.Error, n4.Error)
	}
}
