// Command report turns the runs make bench recorded (bench/results/runs.json,
// one JSON object per smbctl bench run, ours and Samba paired by run number)
// into per-cell medians and ours/Samba ratios: latest.md, latest.json,
// latest.csv, and latest.dat + latest.gp for a gnuplot PNG.
//
// Invariant: it only reports numbers; it never judges them against
// thresholds, and a failed run is shown as failed, never dropped silently.
package main
