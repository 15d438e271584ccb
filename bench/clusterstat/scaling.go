package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// tortureWorkloads are the smbtorture cells (bench/cluster.sh runs them
// through a forwarder: one, every connection to node 1; spread, the
// connections round-robin over the nodes).
var tortureWorkloads = []struct{ name, label string }{
	{"torture-oplock1", "smbtorture smb2.bench.oplock1"},
	{"torture-path-contention-shared", "smbtorture smb2.bench.path-contention-shared"},
}

// scalingRun is one cluster size's cells.
type scalingRun struct {
	nodes int
	cells []cell
	meta  meta
}

// scalingCmd writes, for runs at several cluster sizes, each workload's
// spread rate as a share of its one-node rate.
func scalingCmd(args []string) error {
	fs := flag.NewFlagSet("scaling", flag.ContinueOnError)
	runs := fs.String("runs", "", "comma-separated N:CELLS:META, one per cluster size")
	out := fs.String("out", "", "output prefix: PREFIX.md")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var rs []scalingRun
	for _, r := range strings.Split(*runs, ",") {
		parts := strings.SplitN(r, ":", 3)
		if len(parts) != 3 {
			return fmt.Errorf("scaling: run %q is not N:CELLS:META", r)
		}
		n, err := strconv.Atoi(parts[0])
		if err != nil {
			return fmt.Errorf("scaling: run %q: %w", r, err)
		}
		cells, err := readCells(parts[1])
		if err != nil {
			return err
		}
		var m meta
		b, err := os.ReadFile(parts[2])
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("%s: %w", parts[2], err)
		}
		rs = append(rs, scalingRun{n, cells, m})
	}
	if len(rs) == 0 {
		return fmt.Errorf("scaling: no runs")
	}
	f, err := os.Create(*out + ".md")
	if err != nil {
		return err
	}
	writeScaling(f, rs)
	return f.Close()
}

func writeScaling(w io.Writer, rs []scalingRun) {
	m := rs[0].meta
	fmt.Fprintf(w, "# make bench-cluster — spread against one node, by cluster size\n\n")
	fmt.Fprintf(w, "%s, commit %s, %d CPUs (%s). One run per cluster size, in the order of the columns "+
		"(`deploy/localcluster`, nodes on 127.0.0.1–N, one process); %d connections, iodepth 1 (qdepth 1 for smbtorture), "+
		"%s measured per cell. Each cell is *spread* ops/s as a share of *one node* ops/s, measured back to back: "+
		"one node has every connection on node 1, spread has connection i on node i mod N (smbctl bench), or "+
		"through a forwarder handing each new connection to the next node (smbtorture; one node: the same forwarder, "+
		"every connection to node 1). The target is ≥ 80 %% at every size.\n\n",
		m.Date, m.Commit, m.CPUs, m.CPUModel, m.Conns, m.Runtime)
	fmt.Fprint(w, "| workload |")
	for _, r := range rs {
		fmt.Fprintf(w, " %d nodes |", r.nodes)
	}
	fmt.Fprint(w, "\n|---|")
	for range rs {
		fmt.Fprint(w, "---:|")
	}
	fmt.Fprintln(w)
	all := append(append([]struct{ name, label string }{}, workloads...), tortureWorkloads...)
	for _, wl := range all {
		var row strings.Builder
		seen := false
		for _, r := range rs {
			one, ok1 := openOf(find(r.cells, wl.name, "one"))
			sp, ok2 := openOf(find(r.cells, wl.name, "spread"))
			seen = seen || find(r.cells, wl.name, "one") != nil
			switch {
			case ok1 && ok2 && one.Rate > 0:
				fmt.Fprintf(&row, " %.0f %% (%.0f / %.0f) |", 100*sp.Rate/one.Rate, sp.Rate, one.Rate)
			default:
				row.WriteString(" – |")
			}
		}
		if seen {
			fmt.Fprintf(w, "| %s |%s\n", wl.label, row.String())
		}
	}
}
