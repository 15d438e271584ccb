package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
)

// run is one record of runs.json, as bench/run.sh writes it.
type run struct {
	Server string   `json:"server"` // "ours" or "samba"
	Mode   string   `json:"mode"`   // plain, sign, encrypt
	RW     string   `json:"rw"`
	BS     string   `json:"bs"`
	Conns  int      `json:"conns"`
	Run    int      `json:"run"`
	Exit   int      `json:"exit"` // smbctl's exit code; -1: the server never started
	CPU    float64  `json:"cpu_s"`
	Result *outcome `json:"result"`
}

// outcome is the part of smbctl bench -o json the report uses.
type outcome struct {
	Total struct {
		MiBps   float64 `json:"mib_s"`
		IOPS    float64 `json:"iops"`
		Latency struct {
			P99 float64 `json:"p99"`
		} `json:"lat_us"`
	} `json:"total"`
	Moved     int64   `json:"moved_bytes"`
	ClientCPU float64 `json:"client_cpu_s"`
}

type cellKey struct {
	Mode, RW, BS string
	Conns        int
}

func (k cellKey) label() string { return fmt.Sprintf("%s %s %s x%d", k.Mode, k.RW, k.BS, k.Conns) }

// side is one server's medians in one cell.
type side struct {
	Runs      int     `json:"runs"`
	OK        int     `json:"ok"`
	MiBps     float64 `json:"mib_s"`
	IOPS      float64 `json:"iops"`
	P99us     float64 `json:"p99_us"`
	CPUPerGiB float64 `json:"cpu_s_per_gib"`
	// ClientCPUPerGiB is smbctl's CPU per GiB: when it nears the cores
	// left over, the client, not the server, limits the cell.
	ClientCPUPerGiB float64 `json:"client_cpu_s_per_gib"`
}

// cell is one row of the report.
type cell struct {
	Mode     string  `json:"mode"`
	RW       string  `json:"rw"`
	BS       string  `json:"bs"`
	Conns    int     `json:"conns"`
	Ours     side    `json:"ours"`
	Samba    side    `json:"samba"`
	RatioMiB float64 `json:"ratio_mib_s"` // median of paired ours/Samba, 0 if no pair
	RatioCPU float64 `json:"ratio_cpu"`   // same for CPU s/GiB
}

func main() {
	runsPath := flag.String("runs", "bench/results/runs.json", "runs `FILE`")
	metaPath := flag.String("meta", "", "machine/settings `FILE` (JSON object)")
	out := flag.String("out", "bench/results/latest", "output `PREFIX` (.md .json .csv .dat .gp)")
	flag.Parse()
	if err := report(*runsPath, *metaPath, *out); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func report(runsPath, metaPath, out string) error {
	runs, err := readRuns(runsPath)
	if err != nil {
		return err
	}
	meta := map[string]any{}
	if metaPath != "" {
		b, err := os.ReadFile(metaPath)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &meta); err != nil {
			return fmt.Errorf("%s: %w", metaPath, err)
		}
	}
	cells := summarize(runs)
	return writeAll(out, meta, cells)
}

func readRuns(path string) ([]run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var runs []run
	dec := json.NewDecoder(f)
	for {
		var r run
		if err := dec.Decode(&r); errors.Is(err, io.EOF) {
			return runs, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: record %d: %w", path, len(runs)+1, err)
		}
		runs = append(runs, r)
	}
}

// summarize groups runs by cell, in the order cells first appear.
func summarize(runs []run) []cell {
	var order []cellKey
	byCell := map[cellKey][]run{}
	for _, r := range runs {
		k := cellKey{r.Mode, r.RW, r.BS, r.Conns}
		if _, ok := byCell[k]; !ok {
			order = append(order, k)
		}
		byCell[k] = append(byCell[k], r)
	}
	cells := make([]cell, 0, len(order))
	for _, k := range order {
		rs := byCell[k]
		c := cell{Mode: k.Mode, RW: k.RW, BS: k.BS, Conns: k.Conns,
			Ours: sideOf(rs, "ours"), Samba: sideOf(rs, "samba")}
		c.RatioMiB, c.RatioCPU = pairedRatios(rs)
		cells = append(cells, c)
	}
	return cells
}

func ok(r run) bool { return r.Exit == 0 && r.Result != nil }

func cpuPerGiB(r run) float64 {
	if r.Result.Moved == 0 {
		return 0
	}
	return r.CPU / (float64(r.Result.Moved) / (1 << 30))
}

func sideOf(rs []run, server string) side {
	var s side
	var mib, iops, p99, cpu, client []float64
	for _, r := range rs {
		if r.Server != server {
			continue
		}
		s.Runs++
		if !ok(r) {
			continue
		}
		s.OK++
		mib = append(mib, r.Result.Total.MiBps)
		iops = append(iops, r.Result.Total.IOPS)
		p99 = append(p99, r.Result.Total.Latency.P99)
		cpu = append(cpu, cpuPerGiB(r))
		if r.Result.Moved > 0 {
			client = append(client, r.Result.ClientCPU/(float64(r.Result.Moved)/(1<<30)))
		}
	}
	s.ClientCPUPerGiB = median(client)
	s.MiBps, s.IOPS, s.P99us, s.CPUPerGiB = median(mib), median(iops), median(p99), median(cpu)
	return s
}

// pairedRatios returns the medians of ours/Samba over runs with the same
// run number where both succeeded.
func pairedRatios(rs []run) (mib, cpu float64) {
	byRun := map[int]map[string]run{}
	for _, r := range rs {
		if ok(r) {
			if byRun[r.Run] == nil {
				byRun[r.Run] = map[string]run{}
			}
			byRun[r.Run][r.Server] = r
		}
	}
	var m, c []float64
	for _, p := range byRun {
		o, okO := p["ours"]
		s, okS := p["samba"]
		if !okO || !okS {
			continue
		}
		if s.Result.Total.MiBps > 0 {
			m = append(m, o.Result.Total.MiBps/s.Result.Total.MiBps)
		}
		if sc := cpuPerGiB(s); sc > 0 {
			c = append(c, cpuPerGiB(o)/sc)
		}
	}
	return median(m), median(c)
}

// median returns the median of v, 0 for none.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}
