package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// cell is one line of the cells file bench/cluster.sh writes.
type cell struct {
	Cell     string          `json:"cell"`  // files, files-read, hot(-own, -other), write-BS(-own), leasebreak
	Place    string          `json:"place"` // one, spread (open/close); one, cross (leasebreak)
	Exit     int             `json:"exit"`  // smbctl's exit code
	Result   json.RawMessage `json:"result"`
	Etcd     *writes         `json:"etcd"`
	PeerRPCs *int64          `json:"peer_rpcs"` // nil: the nodes export no counter
	// Delegated counts the opens the nodes admitted under an admission
	// delegation (node/peer deleg.go): only opens of remote files are.
	Delegated *int64 `json:"delegated"`
	// Returns counts the peer RPCs among PeerRPCs that gave an idle
	// delegation back, seconds after the opens (of earlier cells,
	// perhaps) that earned it.
	Returns int64 `json:"returns"`
}

// calls is the cell's peer RPCs but the returns of delegations.
func (c cell) calls() int64 { return *c.PeerRPCs - c.Returns }

// remoteOpens is how many of a cell's operations reached another node's
// file: the peer RPCs, and the opens admitted under a delegation.
func (c cell) remoteOpens() int64 {
	n := c.calls()
	if c.Delegated != nil {
		n += *c.Delegated
	}
	return n
}

// openOut is the part of smbctl bench --rw open -o json the report uses.
type openOut struct {
	Rate    float64 `json:"ops_s"`
	Total   int64   `json:"total_ops"`
	Latency lat     `json:"lat_us"`
}

type lat struct {
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9"`
	Max  float64 `json:"max"`
}

// breakOut is the part of smbctl bench --rw leasebreak -o json it uses.
type breakOut struct {
	Holder   string `json:"holder_server"`
	Other    string `json:"other_server"`
	Tries    int    `json:"tries"`
	Granted  string `json:"granted"`
	Waited   int    `json:"waited"`
	Late     int    `json:"late"`
	Missing  int    `json:"missing"`
	BreakLat lat    `json:"break_lat_us"`
	OpenLat  lat    `json:"open_lat_us"`
}

// meta describes the run.
type meta struct {
	Date, Commit, CPUModel, Runtime, Warmup string
	CPUs, Conns, Files, Nodes, Breaks       int
	PeerRPCSource                           string
}

func reportCmd(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	cellsPath := fs.String("cells", "", "cells file (JSON lines)")
	metaPath := fs.String("meta", "", "meta JSON")
	out := fs.String("out", "", "output prefix: PREFIX.md")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cells, err := readCells(*cellsPath)
	if err != nil {
		return err
	}
	var m meta
	b, err := os.ReadFile(*metaPath)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("%s: %w", *metaPath, err)
	}
	f, err := os.Create(*out + ".md")
	if err != nil {
		return err
	}
	writeReport(f, m, cells)
	return f.Close()
}

func readCells(path string) ([]cell, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var cells []cell
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var c cell
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		cells = append(cells, c)
	}
	return cells, sc.Err()
}

// workloads are the open/close cells in report order, with their labels.
var workloads = []struct{ name, label string }{
	{"files", "open+close, own files"},
	{"files-read", "open+4 KiB read+close, own files"},
	{"hot", "open+close, one hot file"},
	{"hot-own", "open+close, one hot file node 1 owns"},
	{"hot-other", "open+close, one hot file another node owns"},
}

// ownLabel is the label of workload wl, with its hot file's owner as
// the cells measured it: the one-node run of a file node 1 owns makes
// (next to) no peer RPC and admits no open under a delegation. The
// script picked the file by its owner; this shows a shard that moved in
// between.
func ownLabel(cells []cell, wl struct{ name, label string }) string {
	if wl.name != "hot-own" && wl.name != "hot-other" {
		return wl.label
	}
	c := find(cells, wl.name, "one")
	o, ok := openOf(c)
	if !ok || c.PeerRPCs == nil {
		return wl.label
	}
	if float64(c.remoteOpens())/float64(o.Total) < 0.5 {
		return "open+close, one hot file node 1 owns"
	}
	return "open+close, one hot file another node owns"
}

// ioOut is the part of smbctl bench --rw write -o json the report uses.
type ioOut struct {
	Write struct {
		Ops     int64   `json:"ops"`
		MiBps   float64 `json:"mib_s"`
		IOPS    float64 `json:"iops"`
		Latency lat     `json:"lat_us"`
	} `json:"write"`
	BlockSize int `json:"bs"`
	Conns     int `json:"conns"`
}

// writeCells are the write cells in report order, with their labels.
var writeCells = []struct{ name, place, label string }{
	{"write-4k-own", "one", "4 KiB, file node 1 owns, all on node 1"},
	{"write-4k", "one", "4 KiB, file another node owns, all on node 1"},
	{"write-4k", "spread", "4 KiB, file another node owns, spread"},
	{"write-64k-own", "one", "64 KiB, file node 1 owns, all on node 1"},
	{"write-64k", "one", "64 KiB, file another node owns, all on node 1"},
	{"write-64k", "spread", "64 KiB, file another node owns, spread"},
}

func writeReport(w io.Writer, m meta, cells []cell) {
	fmt.Fprintf(w, "# make bench-cluster — opens and lease breaks over a %d-node local cluster\n\n", m.Nodes)
	fmt.Fprintf(w, "%s, commit %s, %d CPUs (%s). Local cluster (`deploy/localcluster`: embedded etcd, "+
		"coordinator, %d nodes on 127.0.0.1–%d, one process), `smbctl bench` with %d connections, "+
		"iodepth 1, %s measured after %s warmup per cell; %d files per worker.\n\n",
		m.Date, m.Commit, m.CPUs, m.CPUModel, m.Nodes, m.Nodes, m.Conns, m.Runtime, m.Warmup, m.Files)
	writeOpens(w, m, cells)
	writeWrites(w, m, cells)
	writeBreaks(w, cells)
	writeTargets(w, cells)
}

func find(cells []cell, name, place string) *cell {
	for i := range cells {
		if cells[i].Cell == name && cells[i].Place == place {
			return &cells[i]
		}
	}
	return nil
}

func openOf(c *cell) (openOut, bool) {
	var o openOut
	if c == nil || c.Exit != 0 || json.Unmarshal(c.Result, &o) != nil || o.Total == 0 {
		return o, false
	}
	return o, true
}

func writeOpens(w io.Writer, m meta, cells []cell) {
	fmt.Fprintf(w, "## Open/close\n\nOne operation is an open (CREATE of an existing file, read access, "+
		"no lease), the optional read, and a close. *one node*: every connection on node 1; "+
		"*spread*: connection i on node i mod %d. etcd keys are the puts and deletes etcd applied "+
		"from before the run until %s after it (sessions, channels and the nodes' live records included), "+
		"divided by every operation of the run, warmup included.\n\n", m.Nodes, "the nodes' next publish")
	fmt.Fprintln(w, "| workload | clients | ops/s | p50 | p99 | p99.9 | etcd keys/op | of them opens/ | etcd txns | peer RPCs/op |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, wl := range workloads {
		wl.label = ownLabel(cells, wl)
		for _, place := range []string{"one", "spread"} {
			c := find(cells, wl.name, place)
			if c == nil {
				continue
			}
			label := map[string]string{"one": "one node", "spread": "spread"}[place]
			o, ok := openOf(c)
			if !ok {
				fmt.Fprintf(w, "| %s | %s | failed (exit %d) | | | | | | | |\n", wl.label, label, c.Exit)
				continue
			}
			keys, opens, txns := "-", "-", "-"
			if e := c.Etcd; e != nil {
				keys = fmt.Sprintf("%.4f (%d)", float64(e.Keys)/float64(o.Total), e.Keys)
				opens = fmt.Sprintf("%.4f (%d)", float64(e.ByPrefix["opens"])/float64(o.Total), e.ByPrefix["opens"])
				txns = fmt.Sprint(e.Revisions)
			}
			peer := "0 †"
			if c.PeerRPCs != nil {
				peer = fmt.Sprintf("%.3f", float64(*c.PeerRPCs)/float64(o.Total))
			}
			fmt.Fprintf(w, "| %s | %s | %.0f | %s | %s | %s | %s | %s | %s | %s |\n", wl.label, label, o.Rate,
				us(o.Latency.P50), us(o.Latency.P99), us(o.Latency.P999), keys, opens, txns, peer)
		}
	}
	fmt.Fprintf(w, "\n† %s\n\n", m.PeerRPCSource)
}

func writeWrites(w io.Writer, m meta, cells []cell) {
	var rows []string
	for _, wc := range writeCells {
		c := find(cells, wc.name, wc.place)
		if c == nil {
			continue
		}
		var o ioOut
		if c.Exit != 0 || json.Unmarshal(c.Result, &o) != nil || o.Write.Ops == 0 {
			rows = append(rows, fmt.Sprintf("| %s | failed (exit %d) | | | | |", wc.label, c.Exit))
			continue
		}
		peer, label := "-", wc.label
		if c.PeerRPCs != nil {
			peer = fmt.Sprintf("%.4f (%d)", float64(*c.PeerRPCs)/float64(o.Write.Ops), *c.PeerRPCs)
			// An open of a remote file costs 2–3 calls or none under a
			// delegation, of a local one at most one (to the share
			// root's owner).
			remote := c.calls() >= 2*int64(o.Conns) || c.Delegated != nil && *c.Delegated > 0
			if wc.place == "one" && remote == strings.Contains(wc.label, "node 1 owns") {
				label += " (**measured otherwise**: the shard moved)"
			}
		}
		rows = append(rows, fmt.Sprintf("| %s | %.0f | %.0f | %s | %s | %s |", label, o.Write.IOPS, o.Write.MiBps,
			us(o.Write.Latency.P50), us(o.Write.Latency.P99), peer))
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "## Writes across nodes\n\n%d connections at iodepth 16 write one file (`smbctl bench --rw write`), "+
		"opened once per connection: through node 1 to a file node 1 owns, through node 1 to a file another "+
		"node owns, and spread (connection i on node i mod %d) over the latter. Peer RPCs are counted "+
		"over the whole run, warmup included, per measured WRITE.\n\n", m.Conns, m.Nodes)
	fmt.Fprintln(w, "| writes | IOPS | MiB/s | p50 | p99 | peer RPCs/WRITE |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		fmt.Fprintln(w, r)
	}
	fmt.Fprintln(w)
}

func writeBreaks(w io.Writer, cells []cell) {
	fmt.Fprintln(w, "## Lease break")
	fmt.Fprintln(w, "\nA holder opens a file with a Read-Write-Handle lease; a second client opens it for "+
		"writing without a lease, which must break the holder's lease to Read-Handle. Latency: from the "+
		"conflicting CREATE being sent to the holder receiving the LEASE_BREAK notification (one "+
		"process, one clock); the holder acknowledges at once. *waited*: the conflicting open was held "+
		"until the acknowledgment; *late*: the break came after it completed; *missing*: no break within "+
		"50 ms of its completion.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| holder → other | tries | granted | waited | late | missing | break p50 | break p99 | break max | open p50 | open p99 |")
	fmt.Fprintln(w, "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, place := range []string{"one", "cross"} {
		c := find(cells, "leasebreak", place)
		if c == nil {
			continue
		}
		var b breakOut
		if c.Exit != 0 || json.Unmarshal(c.Result, &b) != nil || b.Tries == 0 {
			fmt.Fprintf(w, "| %s | failed (exit %d) | | | | | | | | | |\n", place, c.Exit)
			continue
		}
		p50, p99, mx := "-", "-", "-"
		if b.Waited+b.Late > 0 {
			p50, p99, mx = us(b.BreakLat.P50), us(b.BreakLat.P99), us(b.BreakLat.Max)
		}
		fmt.Fprintf(w, "| %s → %s | %d | %s | %d | %d | %d | %s | %s | %s | %s | %s |\n", b.Holder, b.Other, b.Tries,
			b.Granted, b.Waited, b.Late, b.Missing, p50, p99, mx, us(b.OpenLat.P50), us(b.OpenLat.P99))
	}
	fmt.Fprintln(w)
}

func writeTargets(w io.Writer, cells []cell) {
	fmt.Fprintln(w, "## Against the targets")
	fmt.Fprintln(w, "\nFor scale, Samba with CTDB measured on this machine (figures quoted from the "+
		"coherence issue; this script does not run Samba; three nodes, smbtorture "+
		"`smb2.bench.path-contention-shared` and `oplock1`, 4 connections): spread over three nodes it "+
		"reaches 27 % of its one-node rate; a cross-node oplock break takes about 2.5 ms.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| target | measured |")
	fmt.Fprintln(w, "|---|---|")
	for _, wl := range workloads {
		wl.label = ownLabel(cells, wl)
		one, ok1 := openOf(find(cells, wl.name, "one"))
		sp, ok2 := openOf(find(cells, wl.name, "spread"))
		m := "not measured"
		if ok1 && ok2 && one.Rate > 0 {
			m = fmt.Sprintf("%.0f %% (%.0f / %.0f ops/s)", 100*sp.Rate/one.Rate, sp.Rate, one.Rate)
		}
		if !ok1 && !ok2 && find(cells, wl.name, "one") == nil {
			continue // not run
		}
		fmt.Fprintf(w, "| spread ≥ 80 %% of one node: %s | %s |\n", wl.label, m)
	}
	m := "not measured"
	if c := find(cells, "files", "spread"); c != nil && c.Etcd != nil {
		if o, ok := openOf(c); ok {
			m = fmt.Sprintf("%.4f keys/op (%d over %d ops; %d under opens/)", float64(c.Etcd.Keys)/float64(o.Total),
				c.Etcd.Keys, o.Total, c.Etcd.ByPrefix["opens"])
		}
	}
	fmt.Fprintf(w, "| zero etcd writes per uncontended open (own files, spread) | %s |\n", m)
	m = "not measured"
	if c := find(cells, "leasebreak", "cross"); c != nil {
		var b breakOut
		if c.Exit == 0 && json.Unmarshal(c.Result, &b) == nil && b.Tries > 0 {
			switch {
			case b.Missing == b.Tries:
				m = fmt.Sprintf("**no break arrived** (%d of %d conflicting opens completed while the holder kept its lease)", b.Missing, b.Tries)
			case b.Missing > 0:
				m = fmt.Sprintf("p99 %s, but %d of %d breaks missing", us(b.BreakLat.P99), b.Missing, b.Tries)
			default:
				m = "p99 " + us(b.BreakLat.P99)
			}
		}
	}
	fmt.Fprintf(w, "| cross-node lease break p99 ≤ 5 ms | %s |\n", m)
}

// us formats microseconds.
func us(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2f s", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.2f ms", v/1e3)
	}
	return fmt.Sprintf("%.0f µs", v)
}
