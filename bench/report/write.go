package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
)

func writeAll(prefix string, meta map[string]any, cells []cell) error {
	b, err := json.MarshalIndent(map[string]any{"meta": meta, "cells": cells}, "", "  ")
	if err != nil {
		return err
	}
	files := map[string]string{
		".md":   markdown(meta, cells),
		".json": string(b) + "\n",
		".csv":  csvText(cells),
		".dat":  plotData(cells),
		".gp":   plotScript(prefix),
	}
	for ext, text := range files {
		if err := os.WriteFile(prefix+ext, []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func num(v float64, prec int) string {
	if v == 0 {
		return "–"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

func ratio(v float64) string {
	if v == 0 {
		return "–"
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + "×"
}

// okText shows a side's median, or how many of its runs failed.
func okText(s side, v float64, prec int) string {
	if s.OK == 0 && s.Runs > 0 {
		return "fail"
	}
	t := num(v, prec)
	if s.OK < s.Runs {
		t += fmt.Sprintf(" (%d/%d ok)", s.OK, s.Runs)
	}
	return t
}

func markdown(meta map[string]any, cells []cell) string {
	var b strings.Builder
	b.WriteString("# smbcluster node vs Samba — loopback benchmark\n\n")
	for _, k := range []string{"date", "commit", "kernel", "cpus", "cpu_model", "filesystem", "samba",
		"runs", "runtime", "warmup", "size", "iodepth", "client", "pin", "metrics", "ours_restarts"} {
		if v, ok := meta[k]; ok {
			fmt.Fprintf(&b, "- %s: %v\n", k, v)
		}
	}
	for _, k := range []string{"tcp1", "tcp4"} {
		if t, ok := meta[k].(map[string]any); ok {
			fmt.Fprintf(&b, "- loopback TCP, %v stream(s): %.0f MiB/s\n", t["streams"], t["mib_s"])
		}
	}
	if n, ok := meta["ours_note"].(string); ok && n != "" {
		fmt.Fprintf(&b, "- **our node: %s**\n", n)
	}
	b.WriteString("\nMedians of the runs per cell; ratios are medians of ours/Samba over paired runs " +
		"(same run number, order alternating). CPU = server user+system seconds per GiB moved " +
		"(Samba: every smbd process of the instance). p99 in µs. Failed runs: errors.log. " +
		"The client shares the machine: latest.csv/json also give smbctl's own CPU s/GiB.\n\n")
	b.WriteString("| mode | rw | bs | conns | ours MiB/s | Samba MiB/s | ours/Samba | ours IOPS | Samba IOPS | " +
		"ours p99 | Samba p99 | ours CPU s/GiB | Samba CPU s/GiB | CPU ours/Samba |\n")
	b.WriteString("|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, c := range cells {
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			c.Mode, c.RW, c.BS, c.Conns,
			okText(c.Ours, c.Ours.MiBps, 1), okText(c.Samba, c.Samba.MiBps, 1), ratio(c.RatioMiB),
			okText(c.Ours, c.Ours.IOPS, 0), okText(c.Samba, c.Samba.IOPS, 0),
			okText(c.Ours, c.Ours.P99us, 0), okText(c.Samba, c.Samba.P99us, 0),
			okText(c.Ours, c.Ours.CPUPerGiB, 2), okText(c.Samba, c.Samba.CPUPerGiB, 2), ratio(c.RatioCPU))
	}
	return b.String()
}

func csvText(cells []cell) string {
	var b strings.Builder
	w := csv.NewWriter(&b)
	w.Write([]string{"mode", "rw", "bs", "conns", "ours_ok", "ours_runs", "ours_mib_s", "ours_iops",
		"ours_p99_us", "ours_cpu_s_per_gib", "ours_client_cpu_s_per_gib", "samba_ok", "samba_runs", "samba_mib_s",
		"samba_iops", "samba_p99_us", "samba_cpu_s_per_gib", "samba_client_cpu_s_per_gib", "ratio_mib_s", "ratio_cpu"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	for _, c := range cells {
		row := []string{c.Mode, c.RW, c.BS, strconv.Itoa(c.Conns)}
		for _, s := range []side{c.Ours, c.Samba} {
			row = append(row, strconv.Itoa(s.OK), strconv.Itoa(s.Runs), f(s.MiBps), f(s.IOPS), f(s.P99us), f(s.CPUPerGiB), f(s.ClientCPUPerGiB))
		}
		w.Write(append(row, f(c.RatioMiB), f(c.RatioCPU)))
	}
	w.Flush()
	return b.String()
}

// plotData is gnuplot's input: label, ours MiB/s, Samba MiB/s.
func plotData(cells []cell) string {
	var b strings.Builder
	b.WriteString("# cell ours_mib_s samba_mib_s\n")
	for _, c := range cells {
		fmt.Fprintf(&b, "%q %.3f %.3f\n", c.Mode+" "+c.RW+" "+c.BS+" x"+strconv.Itoa(c.Conns), c.Ours.MiBps, c.Samba.MiBps)
	}
	return b.String()
}

func plotScript(prefix string) string {
	return fmt.Sprintf(`set terminal pngcairo size 1600,700 noenhanced font ",9"
set output %q
set title "smbcluster node vs Samba: median MiB/s per cell (loopback)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set ylabel "MiB/s"
set logscale y
set yrange [1:*]
set xtics rotate by -60 scale 0
set key top left
set grid ytics
plot %q using 2:xtic(1) title "ours", '' using 3 title "Samba"
`, prefix+".png", prefix+".dat")
}
