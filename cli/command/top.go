package command

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
)

var topVerbs = []verb{
	{name: "", nargs: 0, summary: "show request rates, throughput and p99 latency per node and share, the busiest clients and the hottest files, refreshed (-o json: --count snapshots)", define: defineTop},
}

// topView is one refresh of smbctl top: rates over the interval between
// two fetches of the nodes' counters (GetClusterStats). Its JSON names
// are stable.
type topView struct {
	Time     time.Time  `json:"time"`
	Interval float64    `json:"interval_seconds"`
	Nodes    []topNode  `json:"nodes"`
	Shares   []topShare `json:"shares"`
	Files    []topItem  `json:"files"`
	Clients  []topItem  `json:"clients"`
}

// topRates are a node's or share's rates over the interval.
type topRates struct {
	RequestsPerSec   float64 `json:"requests_per_sec"`
	ReadBytesPerSec  float64 `json:"read_bytes_per_sec"`
	WriteBytesPerSec float64 `json:"write_bytes_per_sec"`
	// P99Ms is the 99th percentile of the interval's request latency in
	// milliseconds, interpolated in its histogram bucket; 0 without
	// requests.
	P99Ms float64 `json:"p99_ms"`
}

type topNode struct {
	Node  string `json:"node"`
	Error string `json:"error,omitempty"`
	topRates
	Requests uint64 `json:"requests"` // since the node started
}

type topShare struct {
	Share string `json:"share"`
	topRates
}

// topItem is a file (share\path) or client (user@address) on one node.
type topItem struct {
	Key              string  `json:"key"`
	Node             string  `json:"node"`
	RequestsPerSec   float64 `json:"requests_per_sec"`
	ReadBytesPerSec  float64 `json:"read_bytes_per_sec"`
	WriteBytesPerSec float64 `json:"write_bytes_per_sec"`
	Requests         uint64  `json:"requests"` // since the node started, at least
}

func defineTop(fs *flag.FlagSet) action {
	interval := fs.Duration("interval", 2*time.Second, "refresh every `DURATION` (rates are over it)")
	count := fs.Int("count", 0, "stop after `N` refreshes (0: until interrupted; with -o json, 1)")
	n := fs.Int("top", 10, "show the `N` busiest clients and hottest files")
	return func(ctx context.Context, c *call) error {
		if *interval <= 0 || *count < 0 || *n <= 0 {
			return usagef("--interval, --count and --top must be positive")
		}
		if *count == 0 && c.p.format == "json" {
			*count = 1
		}
		return runTop(ctx, c, *interval, *count, *n)
	}
}

// runTop fetches the counters, then every interval fetches them again
// and prints the rates between the two.
func runTop(ctx context.Context, c *call, interval time.Duration, count, n int) error {
	cli := adminv1.NewClusterServiceClient(c.conn.cc)
	fetch := func() (*adminv1.GetClusterStatsResponse, error) {
		rctx, cancel := c.conn.rpcContext(ctx, 0)
		defer cancel()
		return cli.GetClusterStats(rctx, &adminv1.GetClusterStatsRequest{Top: uint32(max(n*2, 20))})
	}
	prev, err := fetch()
	if err != nil {
		return err
	}
	clear := c.p.format == "table" && isTTY(c.e.stdout)
	t := time.NewTicker(interval)
	defer t.Stop()
	for i := 0; count == 0 || i < count; i++ {
		select {
		case <-ctx.Done():
			return nil // interrupted: not an error
		case <-t.C:
		}
		cur, err := fetch()
		if err != nil {
			if ctx.Err() != nil {
				return nil // interrupted mid-fetch
			}
			return err
		}
		v := topOf(prev, cur, n)
		if clear {
			io.WriteString(c.e.stdout, "\x1b[H\x1b[2J")
		} else if i > 0 && c.p.format == "table" {
			io.WriteString(c.e.stdout, "\n")
		}
		if err := c.p.print(v); err != nil {
			return err
		}
		prev = cur
	}
	return nil
}

// topOf makes the rates between two fetches, the n hottest of each list.
func topOf(prev, cur *adminv1.GetClusterStatsResponse, n int) topView {
	v := topView{Time: time.Now().UTC(), Nodes: []topNode{}, Shares: []topShare{}, Files: []topItem{}, Clients: []topItem{}}
	before := map[string]*adminv1.NodeStats{}
	for _, ns := range prev.GetNodes() {
		before[ns.GetNode()] = ns
	}
	shares := map[string]*trafficDelta{}
	for _, ns := range cur.GetNodes() {
		row := topNode{Node: ns.GetNode(), Error: ns.GetError(), Requests: ns.GetTotal().GetRequests()}
		if ns.GetError() != "" {
			v.Nodes = append(v.Nodes, row)
			continue
		}
		old := before[ns.GetNode()]
		if old.GetError() != "" || old.GetStartTime().AsTime() != ns.GetStartTime().AsTime() {
			old = nil // restarted: its counters started again
		}
		secs := ns.GetTime().AsTime().Sub(old.GetTime().AsTime()).Seconds()
		if old == nil {
			secs = ns.GetTime().AsTime().Sub(ns.GetStartTime().AsTime()).Seconds()
		}
		secs = max(secs, 1e-3)
		v.Interval = max(v.Interval, secs)
		total := delta(old.GetTotal(), ns.GetTotal())
		row.topRates = total.rates(secs)
		v.Nodes = append(v.Nodes, row)
		for _, sh := range ns.GetShares() {
			d := delta(shareTraffic(old, sh.GetName()), sh.GetTraffic())
			if acc := shares[sh.GetName()]; acc != nil {
				acc.add(d, secs)
			} else {
				d.perSec = secs
				shares[sh.GetName()] = &d
			}
		}
		v.Files = append(v.Files, items(ns.GetNode(), old.GetTopFiles(), ns.GetTopFiles(), secs)...)
		v.Clients = append(v.Clients, items(ns.GetNode(), old.GetTopClients(), ns.GetTopClients(), secs)...)
	}
	for name, d := range shares {
		v.Shares = append(v.Shares, topShare{Share: name, topRates: d.rates(d.perSec)})
	}
	slices.SortFunc(v.Shares, func(a, b topShare) int { return strings.Compare(a.Share, b.Share) })
	v.Files, v.Clients = hottest(v.Files, n), hottest(v.Clients, n)
	return v
}

func shareTraffic(ns *adminv1.NodeStats, name string) *adminv1.TrafficStats {
	for _, sh := range ns.GetShares() {
		if sh.GetName() == name {
			return sh.GetTraffic()
		}
	}
	return nil
}

// trafficDelta is what happened between two TrafficStats.
type trafficDelta struct {
	requests, read, written uint64
	bounds                  []float64
	counts                  []uint64 // cumulative per bound
	perSec                  float64  // the interval, for shares summed over nodes
}

func delta(old, cur *adminv1.TrafficStats) trafficDelta {
	d := trafficDelta{
		requests: sub(cur.GetRequests(), old.GetRequests()), read: sub(cur.GetBytesRead(), old.GetBytesRead()),
		written: sub(cur.GetBytesWritten(), old.GetBytesWritten()), bounds: cur.GetBucketBounds(),
	}
	for i, c := range cur.GetBucketCounts() {
		var o uint64
		if oc := old.GetBucketCounts(); i < len(oc) && slices.Equal(old.GetBucketBounds(), cur.GetBucketBounds()) {
			o = oc[i]
		}
		d.counts = append(d.counts, sub(c, o))
	}
	return d
}

// add sums e (over secs) into d: the rates of one share on several nodes.
func (d *trafficDelta) add(e trafficDelta, secs float64) {
	d.requests += e.requests
	d.read += e.read
	d.written += e.written
	d.perSec = max(d.perSec, secs)
	if slices.Equal(d.bounds, e.bounds) {
		for i := range d.counts {
			d.counts[i] += e.counts[i]
		}
	}
}

func (d trafficDelta) rates(secs float64) topRates {
	return topRates{
		RequestsPerSec: round2(float64(d.requests) / secs), ReadBytesPerSec: round2(float64(d.read) / secs),
		WriteBytesPerSec: round2(float64(d.written) / secs), P99Ms: round2(quantile(0.99, d.requests, d.bounds, d.counts) * 1000),
	}
}

// quantile estimates the q-quantile of n observations from cumulative
// bucket counts, interpolating linearly within the bucket, as
// Prometheus's histogram_quantile does; past the last bound it is the
// last bound.
func quantile(q float64, n uint64, bounds []float64, counts []uint64) float64 {
	if n == 0 || len(bounds) == 0 {
		return 0
	}
	rank := q * float64(n)
	lo, below := 0.0, uint64(0)
	for i, b := range bounds {
		if float64(counts[i]) >= rank {
			in := counts[i] - below
			if in == 0 {
				return b
			}
			return lo + (b-lo)*(rank-float64(below))/float64(in)
		}
		lo, below = b, counts[i]
	}
	return bounds[len(bounds)-1]
}

func sub(a, b uint64) uint64 {
	if a < b {
		return 0 // a table entry evicted and taken again
	}
	return a - b
}

func round2(f float64) float64 { return math.Round(f*100) / 100 }

// items makes the rates of a node's top entries.
func items(node string, old, cur []*adminv1.TopEntry, secs float64) []topItem {
	before := map[string]*adminv1.TopEntry{}
	for _, e := range old {
		before[e.GetKey()] = e
	}
	out := make([]topItem, 0, len(cur))
	for _, e := range cur {
		o := before[e.GetKey()]
		out = append(out, topItem{
			Key: e.GetKey(), Node: node, Requests: e.GetRequests(),
			RequestsPerSec:   round2(float64(sub(e.GetRequests(), o.GetRequests())) / secs),
			ReadBytesPerSec:  round2(float64(sub(e.GetBytesRead(), o.GetBytesRead())) / secs),
			WriteBytesPerSec: round2(float64(sub(e.GetBytesWritten(), o.GetBytesWritten())) / secs),
		})
	}
	return out
}

// hottest orders items by request rate, then throughput, then requests,
// and keeps n.
func hottest(it []topItem, n int) []topItem {
	slices.SortStableFunc(it, func(a, b topItem) int {
		switch {
		case a.RequestsPerSec != b.RequestsPerSec:
			return cmpFloatDesc(a.RequestsPerSec, b.RequestsPerSec)
		case a.ReadBytesPerSec+a.WriteBytesPerSec != b.ReadBytesPerSec+b.WriteBytesPerSec:
			return cmpFloatDesc(a.ReadBytesPerSec+a.WriteBytesPerSec, b.ReadBytesPerSec+b.WriteBytesPerSec)
		case a.Requests != b.Requests:
			return cmpFloatDesc(float64(a.Requests), float64(b.Requests))
		}
		return strings.Compare(a.Key+a.Node, b.Key+b.Node)
	})
	return it[:min(n, len(it))]
}

func cmpFloatDesc(a, b float64) int {
	if a > b {
		return -1
	}
	return 1
}

func (v topView) table() table { return v.tables()[0] }

func (v topView) tables() []table {
	nodes := table{title: fmt.Sprintf("smbctl top — %s, rates over %.1fs", v.Time.Format(time.TimeOnly), v.Interval),
		header: []string{"NODE", "REQ/S", "READ/S", "WRITE/S", "P99", "ERROR"}}
	for _, n := range v.Nodes {
		if n.Error != "" {
			nodes.rows = append(nodes.rows, []string{n.Node, "-", "-", "-", "-", n.Error})
			continue
		}
		nodes.rows = append(nodes.rows, append([]string{n.Node}, append(rateCells(n.topRates), "-")...))
	}
	shares := table{header: []string{"SHARE", "REQ/S", "READ/S", "WRITE/S", "P99"}}
	for _, s := range v.Shares {
		shares.rows = append(shares.rows, append([]string{s.Share}, rateCells(s.topRates)...))
	}
	return []table{nodes, shares, itemTable("CLIENT", v.Clients), itemTable("FILE", v.Files)}
}

func rateCells(r topRates) []string {
	return []string{fmt.Sprintf("%.1f", r.RequestsPerSec), fmtRate(r.ReadBytesPerSec), fmtRate(r.WriteBytesPerSec), fmt.Sprintf("%.2fms", r.P99Ms)}
}

func itemTable(what string, it []topItem) table {
	t := table{header: []string{what, "NODE", "REQ/S", "READ/S", "WRITE/S", "REQUESTS"}}
	for _, i := range it {
		t.rows = append(t.rows, []string{i.Key, i.Node, fmt.Sprintf("%.1f", i.RequestsPerSec), fmtRate(i.ReadBytesPerSec), fmtRate(i.WriteBytesPerSec), fmt.Sprint(i.Requests)})
	}
	return t
}

func fmtRate(b float64) string { return fmtBytes(int64(b)) + "/s" }
