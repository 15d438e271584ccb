package deploy

import (
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/node/metrics"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// coordinatorMetrics are the families only the coordinator serves
// (coordinator/coord/metrics.go).
var coordinatorMetrics = []string{"smbcluster_coordinator_rpc_duration_seconds"}

// TestDashboard: every metric the Grafana dashboard queries is one a
// node or the coordinator exports, with the suffixes its type has.
func TestDashboard(t *testing.T) {
	b, err := os.ReadFile("grafana/smbcluster.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("smbcluster.json: %v", err)
	}
	known := exported(t)
	for _, name := range coordinatorMetrics {
		for _, s := range []string{"_bucket", "_count", "_sum"} {
			known[name+s] = true
		}
	}
	seen := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, name := range regexp.MustCompile(`smbcluster_[a-z0-9_]+`).FindAllString(tg.Expr, -1) {
				seen++
				if !known[name] {
					t.Errorf("panel %q queries %s, which nothing exports", p.Title, name)
				}
			}
		}
	}
	if seen < 30 {
		t.Errorf("the dashboard queries %d metrics", seen)
	}
}

// exported lists the sample names a node exports once every kind of
// event happened.
func exported(t *testing.T) map[string]bool {
	m := metrics.NewNode()
	m.Request(smb2.CmdRead, smb2.StatusSuccess, time.Millisecond)
	m.Share("data").Read(metrics.PathZeroCopy, 1)
	m.AuthFailed(smb2.StatusLogonFailure)
	m.Etcd("Range", time.Millisecond, errors.New("x"))
	m.Peer("Call/OP_LOCK", time.Millisecond, errors.New("x"))
	m.ShardMoved("taken")
	m.Fenced("lease_lost")
	m.CountPeerCalls(func() uint64 { return 1 }, func() uint64 { return 1 })
	m.SetLocks(func() int64 { return 0 }, func() int64 { return 0 })
	m.SetSource(heldOne{})
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, f := range fams {
		name := f.GetName()
		if strings.HasSuffix(f.GetType().String(), "HISTOGRAM") {
			for _, s := range []string{"_bucket", "_count", "_sum"} {
				known[name+s] = true
			}
			continue
		}
		known[name] = true
	}
	return known
}

// heldOne is a node holding one of everything.
type heldOne struct{}

func (heldOne) Held(h *metrics.Held) {
	k := metrics.Kind{Dialect: 0x311, Signing: "required", Encryption: "none"}
	h.Sessions, h.Channels, h.Trees = map[metrics.Kind]int{k: 1}, map[metrics.Kind]int{k: 1}, map[string]int{"data": 1}
	h.Opens, h.DurableOpens = 1, 1
}
func (heldOne) EachFile(func(string, *metrics.IOCount))   {}
func (heldOne) EachClient(func(string, *metrics.IOCount)) {}
