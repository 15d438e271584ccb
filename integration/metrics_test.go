package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/smbcluster/smbcluster/cli/smbc"
	"github.com/smbcluster/smbcluster/integration/framework"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// scrape is one parse of a /metrics page.
type scrape map[string]*dto.MetricFamily

// scrapeMetrics GETs http://addr/metrics and parses it with Prometheus's
// own text parser.
func scrapeMetrics(t testing.TB, addr string) (scrape, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

func mustScrape(t testing.TB, addr string) scrape {
	t.Helper()
	s, err := scrapeMetrics(t, addr)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// value sums the series of family name whose labels include want
// (counters, gauges; histograms: the sample count).
func (s scrape) value(name string, want ...string) float64 {
	f := s[name]
	if f == nil {
		return 0
	}
	sum := 0.0
	for _, m := range f.Metric {
		if !hasLabels(m, want) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

func hasLabels(m *dto.Metric, want []string) bool {
	for i := 0; i+1 < len(want); i += 2 {
		found := false
		for _, l := range m.Label {
			if l.GetName() == want[i] && l.GetValue() == want[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// delta checks that a metric moved by exactly want between two scrapes.
func delta(t *testing.T, before, after scrape, want float64, name string, labels ...string) {
	t.Helper()
	if got := after.value(name, labels...) - before.value(name, labels...); got != want {
		t.Errorf("%s%v moved by %v, want %v", name, labels, got, want)
	}
}

// TestMetrics drives real clients through one node and reads /metrics
// with the Prometheus text parser: requests, bytes by data path,
// sessions, authentication failures, locks and breaks move by what the
// test did; the histograms have the documented buckets; scrapes under
// load succeed.
func TestMetrics(t *testing.T) {
	framework.RequireTool(t, "smbclient")
	maddr := framework.FreeAddr(t, "127.0.0.1")
	n := framework.Start(t, framework.Options{Args: []string{"--metrics-addr", maddr}})

	t.Run("smbclient", func(t *testing.T) {
		dir := t.TempDir()
		data := bytes.Repeat([]byte("0123456789abcdef"), 300000/16)
		if err := os.WriteFile(filepath.Join(dir, "up.bin"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		before := mustScrape(t, maddr)
		c := framework.SMBClient{Node: n, User: user, Password: password()}
		if r := c.Script(t, dir, shareNm, "put up.bin", "get up.bin down.bin"); r.ExitCode != 0 {
			t.Fatalf("smbclient: %s", r)
		}
		after := mustScrape(t, maddr)
		delta(t, before, after, 1, "smbcluster_sessions_established_total")
		delta(t, before, after, float64(len(data)), "smbcluster_share_bytes_total", "share", shareNm, "op", "write")
		delta(t, before, after, float64(len(data)), "smbcluster_share_bytes_total", "share", shareNm, "op", "read")
		if after.value("smbcluster_smb_requests_total", "command", "WRITE", "status", "STATUS_SUCCESS") <= before.value("smbcluster_smb_requests_total", "command", "WRITE", "status", "STATUS_SUCCESS") {
			t.Error("no WRITE counted")
		}

		before = after
		bad := framework.SMBClient{Node: n, User: user, Password: password() + "-wrong"}
		if r := bad.Script(t, dir, shareNm, "ls"); r.ExitCode == 0 {
			t.Fatalf("a wrong password was accepted: %s", r)
		}
		after = mustScrape(t, maddr)
		if got := after.value("smbcluster_auth_failures_total", "status", "STATUS_LOGON_FAILURE") - before.value("smbcluster_auth_failures_total", "status", "STATUS_LOGON_FAILURE"); got < 1 {
			t.Errorf("auth failures moved by %v, want at least 1", got)
		}
		delta(t, before, after, 0, "smbcluster_sessions_established_total")
		if !strings.Contains(n.Log(), `msg="logon failed"`) || !strings.Contains(n.Log(), "user="+user) {
			t.Errorf("no warning naming the user of the failed logon in the log:\n%s", n.Log())
		}
	})

	t.Run("smbc", func(t *testing.T) {
		// smbctl bench's client, one request per call: 16 WRITEs and 9
		// READs of 4 KiB (buffered), a 64 KiB READ (sendfile) and a
		// 256 KiB WRITE (spliced into the file).
		before := mustScrape(t, maddr)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c, err := smbc.Dial(ctx, smbc.Options{Addr: n.Addr, Share: shareNm, User: user, Password: password()})
		if err != nil {
			t.Fatal(err)
		}
		f, err := c.OpenFile("smbc.bin", true)
		if err != nil {
			t.Fatal(err)
		}
		block := make([]byte, 4096)
		for i := range 16 {
			if _, err := f.WriteAt(block, int64(i)*4096); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 9 {
			if _, err := f.ReadAt(block, int64(i)*4096); err != nil {
				t.Fatal(err)
			}
		}
		big := make([]byte, 256<<10)
		if _, err := f.WriteAt(big, 64<<10); err != nil {
			t.Fatal(err)
		}
		if _, err := f.ReadAt(big[:64<<10], 0); err != nil {
			t.Fatal(err)
		}
		f.Close()
		c.Close()
		after := mustScrape(t, maddr)
		delta(t, before, after, 1, "smbcluster_sessions_established_total")
		delta(t, before, after, 17, "smbcluster_smb_requests_total", "command", "WRITE", "status", "STATUS_SUCCESS")
		delta(t, before, after, 10, "smbcluster_smb_requests_total", "command", "READ", "status", "STATUS_SUCCESS")
		delta(t, before, after, 17, "smbcluster_smb_request_duration_seconds", "command", "WRITE")
		delta(t, before, after, 16*4096, "smbcluster_share_bytes_total", "share", shareNm, "op", "write", "path", "buffered")
		delta(t, before, after, 256<<10, "smbcluster_share_bytes_total", "share", shareNm, "op", "write", "path", "spliced")
		delta(t, before, after, 9*4096, "smbcluster_share_bytes_total", "share", shareNm, "op", "read", "path", "buffered")
		delta(t, before, after, 64<<10, "smbcluster_share_bytes_total", "share", shareNm, "op", "read", "path", "zerocopy")
		if got := after.value("smbcluster_credits_granted_total") - before.value("smbcluster_credits_granted_total"); got < 27 {
			t.Errorf("credits granted moved by %v, want at least one per request", got)
		}
	})

	t.Run("locks", func(t *testing.T) {
		a := servertest.Connect(t, n.Addr, user, password(), shareNm)
		b := servertest.Connect(t, n.Addr, user, password(), shareNm)
		fa, err := a.Create("locked.bin")
		if err != nil {
			t.Fatal(err)
		}
		fb, err := b.Create("locked.bin")
		if err != nil {
			t.Fatal(err)
		}
		before := mustScrape(t, maddr)
		lock := func(c *servertest.Conn, fid smb2.FileID, flags uint32) smb2.Status {
			h, _ := c.Call(smb2.CmdLock, &smb2.LockRequest{FileID: fid, Locks: []smb2.LockElement{{Offset: 0, Length: 100, Flags: flags}}})
			return smb2.Status(h.Status)
		}
		if st := lock(a, fa, smb2.LockFlagExclusive|smb2.LockFlagFailImmediately); st != smb2.StatusSuccess {
			t.Fatalf("lock: %v", st)
		}
		// b's blocking lock waits for a's range.
		lh := b.Header(smb2.CmdLock)
		if _, err := b.Post(lh, servertest.Body(&smb2.LockRequest{FileID: fb, Locks: []smb2.LockElement{{Offset: 50, Length: 1, Flags: smb2.LockFlagExclusive}}})); err != nil {
			t.Fatal(err)
		}
		framework.WaitFor(t, 10*time.Second, "the blocked lock in /metrics", func() bool {
			s := mustScrape(t, maddr)
			return s.value("smbcluster_locks_blocked") == 1 && s.value("smbcluster_locks_held") == before.value("smbcluster_locks_held")+1
		})
		if st := lock(a, fa, smb2.LockFlagUnlock); st != smb2.StatusSuccess {
			t.Fatalf("unlock: %v", st)
		}
		for {
			hs, _, err := b.Recv()
			if err != nil {
				t.Fatal(err)
			}
			if hs[0].MessageID == lh.MessageID && smb2.Status(hs[0].Status) != smb2.StatusPending {
				if st := smb2.Status(hs[0].Status); st != smb2.StatusSuccess {
					t.Fatalf("blocked lock: %v", st)
				}
				break
			}
		}
		after := mustScrape(t, maddr)
		delta(t, before, after, 3, "smbcluster_smb_requests_total", "command", "LOCK", "status", "STATUS_SUCCESS")
		delta(t, before, after, 1, "smbcluster_lock_wait_seconds")
		delta(t, before, after, 1, "smbcluster_locks_held")
		delta(t, before, after, 0, "smbcluster_locks_blocked")
		// Both sessions and their opens are held now.
		if after.value("smbcluster_sessions", "dialect", "3.1.1") < 2 || after.value("smbcluster_channels", "dialect", "3.1.1") < 2 ||
			after.value("smbcluster_open_files") < 2 || after.value("smbcluster_tree_connects", "share", shareNm) < 2 {
			t.Errorf("held state: sessions %v channels %v opens %v trees %v", after.value("smbcluster_sessions", "dialect", "3.1.1"),
				after.value("smbcluster_channels", "dialect", "3.1.1"), after.value("smbcluster_open_files"), after.value("smbcluster_tree_connects", "share", shareNm))
		}
		a.CloseFile(fa)
		b.CloseFile(fb)
	})

	t.Run("breaks", func(t *testing.T) {
		a := servertest.Connect(t, n.Addr, user, password(), shareNm)
		b := servertest.Connect(t, n.Addr, user, password(), shareNm)
		before := mustScrape(t, maddr)
		req := servertest.CreateRequest("oplock.bin")
		req.RequestedOplockLevel = smb2.OplockLevelBatch
		ra, err := a.CreateWith(req)
		if err != nil || ra.OplockLevel != smb2.OplockLevelBatch {
			t.Fatalf("batch oplock: %v", err)
		}
		bh := b.Header(smb2.CmdCreate)
		if _, err := b.Post(bh, servertest.Body(servertest.CreateRequest("oplock.bin"))); err != nil {
			t.Fatal(err)
		}
		msg, err := a.ReadFrame()
		var h smb2.Header
		if err != nil || h.Decode(msg) != nil || h.Command != smb2.CmdOplockBreak {
			t.Fatalf("no oplock break: %v", err)
		}
		ah, _ := a.Call(smb2.CmdOplockBreak, &smb2.OplockBreakAck{OplockLevel: smb2.OplockLevelII, FileID: ra.FileID})
		if st := smb2.Status(ah.Status); st != smb2.StatusSuccess {
			t.Fatalf("acknowledgment: %v", st)
		}
		if hs, _, err := b.Recv(); err != nil || smb2.Status(hs[0].Status) != smb2.StatusSuccess {
			t.Fatalf("the conflicting open: %v", err)
		}
		after := mustScrape(t, maddr)
		delta(t, before, after, 1, "smbcluster_breaks_sent_total", "kind", "oplock")
		delta(t, before, after, 1, "smbcluster_breaks_acknowledged_total", "kind", "oplock")
		delta(t, before, after, 1, "smbcluster_break_duration_seconds", "kind", "oplock")
		delta(t, before, after, 0, "smbcluster_breaks_timed_out_total")
	})

	t.Run("buckets", func(t *testing.T) {
		s := mustScrape(t, maddr)
		want := []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 35, math.Inf(1)}
		for _, name := range []string{"smbcluster_smb_request_duration_seconds", "smbcluster_share_request_duration_seconds", "smbcluster_break_duration_seconds", "smbcluster_lock_wait_seconds"} {
			f := s[name]
			if f == nil || f.GetType() != dto.MetricType_HISTOGRAM || len(f.Metric) == 0 {
				t.Errorf("%s: no histogram", name)
				continue
			}
			var got []float64
			for _, b := range f.Metric[0].Histogram.Bucket {
				got = append(got, b.GetUpperBound())
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s buckets %v, want %v", name, got, want)
			}
		}
	})

	t.Run("load", func(t *testing.T) {
		// smbctl bench runs; /metrics answers meanwhile, and its counters
		// only grow.
		ctl := framework.BuildSMBCtl(t)
		done := make(chan framework.Result, 1)
		go func() {
			done <- framework.Run(t, "", ctl, "bench", "--server", n.Addr, "--share", shareNm, "--user", user, "--password", password(),
				"--rw", "mixed", "--bs", "4k", "--size", "4m", "--conns", "2", "--runtime", "3s", "--warmup", "0s", "-o", "json")
		}()
		var last float64
		scrapes := 0
		var r framework.Result
	loop:
		for {
			select {
			case r = <-done:
				break loop
			default:
			}
			s, err := scrapeMetrics(t, maddr)
			if err != nil {
				t.Fatalf("scrape under load: %v", err)
			}
			v := s.value("smbcluster_smb_request_duration_seconds")
			if v < last {
				t.Fatalf("request count went back from %v to %v", last, v)
			}
			last = v
			scrapes++
		}
		if r.ExitCode != 0 {
			t.Fatalf("bench: %s", r)
		}
		var out struct {
			Total struct{ Ops int64 } `json:"total"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil || out.Total.Ops == 0 {
			t.Fatalf("bench output: %v\n%s", err, r)
		}
		final := mustScrape(t, maddr)
		if got := final.value("smbcluster_smb_request_duration_seconds") - last; scrapes < 2 || final.value("smbcluster_smb_request_duration_seconds") < float64(out.Total.Ops) {
			t.Errorf("%d scrapes under load; %v requests counted after the last, bench did %d", scrapes, got, out.Total.Ops)
		}
		t.Logf("%d scrapes during %d bench operations", scrapes, out.Total.Ops)
	})
}

// TestTop: smbctl top -o json against three nodes under load reports
// every node with its rates, and the file the test made hot as the
// hottest; the coordinator's /metrics counted the calls.
func TestTop(t *testing.T) {
	c := framework.NewCluster(t, framework.ClusterOptions{Nodes: 3, Metrics: true})
	dir := t.TempDir()
	c.MustSMBCtl(t, "share", "add", "data", dir)
	c.MustSMBCtl(t, "user", "add", "ivan", "--password", "Ivan-Pass-1")
	for _, name := range []string{"hot.bin", "cold.bin"} {
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, 64<<10), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for _, node := range c.Nodes {
		var conn *smbc.Conn
		framework.WaitFor(t, clusterDeadline, "a session on "+node.Name, func() bool {
			var err error
			conn, err = smbc.Dial(ctx, smbc.Options{Addr: node.Addr, Share: "data", User: "ivan", Password: "Ivan-Pass-1"})
			return err == nil
		})
		t.Cleanup(func() { conn.Close() })
		hot, err := conn.OpenFile("hot.bin", false)
		if err != nil {
			t.Fatal(err)
		}
		cold, err := conn.OpenFile("cold.bin", false)
		if err != nil {
			t.Fatal(err)
		}
		// Ten reads of the hot file for one of the cold, until the test ends.
		wg.Go(func() {
			buf := make([]byte, 4096)
			for i := 0; ctx.Err() == nil; i++ {
				f := hot
				if i%11 == 10 {
					f = cold
				}
				if _, err := f.ReadAt(buf, 0); err != nil {
					return
				}
			}
		})
	}
	var top struct {
		Nodes []struct {
			Node            string  `json:"node"`
			Error           string  `json:"error"`
			RequestsPerSec  float64 `json:"requests_per_sec"`
			ReadBytesPerSec float64 `json:"read_bytes_per_sec"`
		} `json:"nodes"`
		Shares []struct {
			Share          string  `json:"share"`
			RequestsPerSec float64 `json:"requests_per_sec"`
			P99Ms          float64 `json:"p99_ms"`
		} `json:"shares"`
		Files []struct {
			Key, Node      string
			RequestsPerSec float64 `json:"requests_per_sec"`
		} `json:"files"`
		Clients []struct {
			Key string `json:"key"`
		} `json:"clients"`
	}
	c.SMBCtlJSON(t, &top, "top", "--interval", "1s", "--top", "5")
	if len(top.Nodes) != 3 {
		t.Fatalf("top lists %d nodes, want 3: %+v", len(top.Nodes), top)
	}
	for _, nd := range top.Nodes {
		if nd.Error != "" || nd.RequestsPerSec <= 0 || nd.ReadBytesPerSec <= 0 {
			t.Errorf("node %s: %+v, want rates and no error", nd.Node, nd)
		}
	}
	if len(top.Files) == 0 || top.Files[0].Key != `data\hot.bin` {
		t.Errorf("hottest files %+v, want data\\hot.bin first", top.Files)
	}
	if len(top.Shares) == 0 || top.Shares[0].Share != "data" || top.Shares[0].RequestsPerSec <= 0 || top.Shares[0].P99Ms <= 0 {
		t.Errorf("shares %+v", top.Shares)
	}
	if len(top.Clients) == 0 || !strings.HasPrefix(top.Clients[0].Key, `ivan@127.0.0.`) && !strings.Contains(top.Clients[0].Key, `\ivan@127.0.0.`) {
		t.Errorf("busiest clients %+v, want ivan", top.Clients)
	}
	s := mustScrape(t, c.CoordMetricsAddr)
	if s.value("smbcluster_coordinator_rpc_duration_seconds", "method", "GetClusterStats", "code", "OK") < 2 {
		t.Errorf("the coordinator's /metrics counted no GetClusterStats")
	}
	// The cluster parts: every node called etcd; the shards were taken
	// (64 at least once between them); the two nodes that do not own
	// hot.bin's shard admitted their opens of it at its owner.
	var taken, admits float64
	for _, n := range c.Nodes {
		s := mustScrape(t, n.MetricsAddr)
		if s.value("smbcluster_etcd_request_duration_seconds") == 0 {
			t.Errorf("%s counted no etcd call", n.Name)
		}
		taken += s.value("smbcluster_shard_ownership_changes_total", "direction", "taken")
		admits += s.value("smbcluster_peer_rpc_duration_seconds", "method", "Admit")
	}
	if taken < 64 || admits < 2 {
		t.Errorf("shards taken %v (want at least 64), peer Admits %v (want at least 2)", taken, admits)
	}
}
