#!/bin/bash
# threshold.sh — measures the thresholds of the zero-copy paths, one smbnode
# with the path for every request against one with it off, same machine,
# same files (tmpfs), runs interleaved. Prints medians of MiB/s and server
# CPU seconds per GiB for each block size.
#
#   read:  sendfile for every READ (--zero-copy-threshold 4096) against
#          pread + write (-1), block sizes 4k..1m
#   write: every WRITE's payload spliced from the socket into the file
#          (--splice-write-threshold 4096) against read into memory and
#          pwrite (-1), block sizes 64k..1m
#
#   bench/threshold.sh [read|write] [RUNS]   (needs bin/smbnode and bin/smbctl: make build)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=read
case ${1:-} in read | write) mode=$1; shift ;; esac
runs=${1:-3}
if [ "$mode" = read ]; then
	flag=--zero-copy-threshold sizes="4k 16k 32k 64k 256k 1m" on=sendfile off=copy
else
	flag=--splice-write-threshold sizes="64k 128k 256k 1m" on=splice off=copy
fi
dir=$(mktemp -d /dev/shm/smbcluster-zc.XXXXXX)
out=$(mktemp)
trap 'kill $pa $pb 2>/dev/null || true; rm -rf "$dir" "$out"' EXIT
bin/smbnode --listen 127.0.0.1:4611 --share bench="$dir" --user bench:pw $flag 4096 2>/dev/null & pa=$!
bin/smbnode --listen 127.0.0.1:4612 --share bench="$dir" --user bench:pw $flag -1 2>/dev/null & pb=$!
for port in 4611 4612; do
	for _ in $(seq 100); do (echo >/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
done
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }
for bs in $sizes; do
	for conns in 1 4; do
		for run in $(seq "$runs"); do
			for side in on off; do
				if [ $side = on ]; then port=4611 pid=$pa; else port=4612 pid=$pb; fi
				c0=$(cpu $pid)
				json=$(bin/smbctl bench --server 127.0.0.1:$port --share bench --user bench --password pw \
					--rw $mode --bs $bs --conns $conns --iodepth 16 --size 256m --runtime 3s --warmup 1s \
					--no-progress --keep -o json | tr -d "\n")
				c1=$(cpu $pid)
				echo "$side $bs $conns $c0 $c1 $json" >>"$out"
			done
		done
	done
done
python3 - "$out" "$on" "$off" $sizes <<'PY'
import json, statistics, sys, collections
on, off, sizes = sys.argv[2], sys.argv[3], sys.argv[4:]
cells = collections.defaultdict(list)
for line in open(sys.argv[1]):
    side, bs, conns, c0, c1, js = line.split(" ", 5)
    d = json.loads(js)
    gib = d["moved_bytes"] / 2**30
    cells[(bs, conns, side)].append((d["total"]["mib_s"], (int(c1) - int(c0)) / 100 / gib))
print(f"| bs | conns | {on} MiB/s | {off} MiB/s | ratio | {on} CPU s/GiB | {off} CPU s/GiB | CPU ratio |")
print("|---|--:|--:|--:|--:|--:|--:|--:|")
for bs in sizes:
    for conns in ["1", "4"]:
        s, c = cells[(bs, conns, "on")], cells[(bs, conns, "off")]
        ms, mc = statistics.median(x[0] for x in s), statistics.median(x[0] for x in c)
        cs, cc = statistics.median(x[1] for x in s), statistics.median(x[1] for x in c)
        print(f"| {bs} | {conns} | {ms:.0f} | {mc:.0f} | {ms/mc:.2f} | {cs:.3f} | {cc:.3f} | {cs/cc:.2f} |")
PY
