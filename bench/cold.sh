#!/usr/bin/env bash
# bench/cold.sh — READs of data that is not in memory: our node against a
# private Samba on a disk-backed directory, the file's pages dropped from
# the page cache (posix_fadvise DONTNEED) before every run. It shows what
# serving requests in the connection's reader costs when the disk is slow,
# and what handing uncached READs to goroutines (Request.MayWait) buys.
# Samba gets "aio read size = 1" here (its reads go to its thread pool),
# the fair setting for a disk.
#
#   bench/cold.sh [DIR]     DIR on a real disk (default /var/tmp; not tmpfs)
#
# Settings: COLD_RUNS=3 COLD_RUNTIME=5s COLD_SIZE=1g COLD_BS="4k 64k"
#   COLD_CONNS="1 4" COLD_IODEPTH=16 COLD_OUT=bench/results/cold.md
# Needs root and Debian's samba (like make bench).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
. bench/lib.sh # wait_port, start_samba
GO=${GO:-go}
BASE=${1:-/var/tmp}
RUNS=${COLD_RUNS:-3}
RUNTIME=${COLD_RUNTIME:-5s}
SIZE=${COLD_SIZE:-1g}
BSS=${COLD_BS:-4k 64k}
CONNS=${COLD_CONNS:-1 4}
IODEPTH=${COLD_IODEPTH:-16}
OUTFILE=${COLD_OUT:-$ROOT/bench/results/cold.md}
PORT_OURS=${COLD_PORT_OURS:-14460}
PORT_SAMBA=${COLD_PORT_SAMBA:-14461}
USER_NAME=bench
PASS=bench-Passw0rd

log() { printf '%s cold: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "$*"; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (Samba must serve files as root, like smbnode)"
SMBD=$(command -v smbd || true)
[ -n "$SMBD" ] || die "smbd not found: apt-get install samba"
fstype=$(df -PT "$BASE" | awk 'NR==2{print $2}')
[ "$fstype" != tmpfs ] || die "$BASE is on tmpfs: its pages cannot be dropped; give a directory on a disk"

WORK=$(mktemp -d "$BASE/smbcold.XXXXXX")
OURS_PID="" SAMBA_PID=""
cleanup() {
	set +e
	[ -n "$OURS_PID" ] && kill "$OURS_PID" 2>/dev/null && wait "$OURS_PID" 2>/dev/null
	[ -n "$SAMBA_PID" ] && kill "$SAMBA_PID" 2>/dev/null && wait "$SAMBA_PID" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$WORK/ours" "$WORK/samba/share" "$WORK/samba/shareenc"

mkdir -p bin
$GO build -o bin/smbctl ./cli
$GO build -o bin/smbnode ./node
cp bin/smbnode "$WORK/cold-ournode"
"$WORK/cold-ournode" --listen "127.0.0.1:$PORT_OURS" --user "$USER_NAME:$PASS" \
	--share "bench=$WORK/ours" --log-level warn >"$WORK/ours.log" 2>&1 &
OURS_PID=$!
wait_port "$PORT_OURS" || die "smbnode did not start: $(tail -c 600 "$WORK/ours.log")"
SAMBA_AIO_READ_SIZE=1 start_samba

# bench PORT USER RW BS CONNS RUNTIME: one smbctl bench run, JSON on stdout.
bench() {
	SMBCTL_PASSWORD=$PASS bin/smbctl bench --server "127.0.0.1:$1" --share bench --user "$2" \
		--rw "$3" --bs "$4" --conns "$5" --iodepth "$IODEPTH" --size "$SIZE" --runtime "$6" \
		--warmup 0s --keep --no-progress -o json
}

# evict FILE: write back and drop its pages; fail if they stay cached.
evict() {
	python3 - "$1" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.fsync(fd)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
os.close(fd)
PY
}

log "laying out $SIZE files on $fstype ($WORK)"
bench "$PORT_OURS" "$USER_NAME" write 1m 1 2s >/dev/null
bench "$PORT_SAMBA" "$SAMBA_USER" write 1m 1 2s >/dev/null
ours_file=$WORK/ours/smbctl-bench.dat
samba_file=$WORK/samba/share/smbctl-bench.dat

raw=$(mktemp)
for bs in $BSS; do
	for conns in $CONNS; do
		for run in $(seq "$RUNS"); do
			order="ours samba"
			[ $((run % 2)) = 0 ] && order="samba ours"
			for side in $order; do
				if [ "$side" = ours ]; then
					evict "$ours_file"
					json=$(bench "$PORT_OURS" "$USER_NAME" randread "$bs" "$conns" "$RUNTIME" | tr -d '\n')
				else
					evict "$samba_file"
					json=$(bench "$PORT_SAMBA" "$SAMBA_USER" randread "$bs" "$conns" "$RUNTIME" | tr -d '\n')
				fi
				echo "$side $bs $conns $run $json" >>"$raw"
				log "$side randread $bs x$conns run $run done"
			done
		done
	done
done

mkdir -p "$(dirname "$OUTFILE")"
python3 - "$raw" "$fstype" "$(git rev-parse --short HEAD)" "$(smbd --version)" "$RUNS" "$RUNTIME" "$SIZE" "$IODEPTH" >"$OUTFILE" <<'PY'
import collections, json, statistics, sys, datetime
raw, fstype, commit, samba, runs, runtime, size, iodepth = sys.argv[1:]
cells = collections.defaultdict(dict)
for line in open(raw):
    side, bs, conns, run, js = line.split(" ", 4)
    t = json.loads(js)["total"]
    cells[(bs, int(conns))].setdefault(side, {})[int(run)] = (t["iops"], t["mib_s"], t["lat_us"]["p99"])
print("# Cold READs: smbcluster node vs Samba, page cache dropped before each run\n")
print(f"- date: {datetime.datetime.utcnow().isoformat(timespec='seconds')}Z")
print(f"- commit: {commit}\n- samba: {samba} (aio read size = 1)\n- filesystem: {fstype}")
print(f"- runs: {runs} of {runtime}, no warmup, randread, file {size}, iodepth {iodepth}\n")
print("Medians per cell; ratio = median of the paired ours/Samba IOPS ratios.\n")
print("| bs | conns | ours IOPS | Samba IOPS | ours/Samba | ours MiB/s | Samba MiB/s | ours p99 µs | Samba p99 µs |")
print("|---|--:|--:|--:|--:|--:|--:|--:|--:|")
def key(c):
    n = c[0]
    return (int(n[:-1]) * (1024 if n.endswith("m") else 1), c[1])
for cell in sorted(cells, key=key):
    o, s = cells[cell].get("ours", {}), cells[cell].get("samba", {})
    med = lambda d, i: statistics.median(v[i] for v in d.values()) if d else 0
    ratios = [o[r][0] / s[r][0] for r in o if r in s and s[r][0] > 0]
    ratio = f"{statistics.median(ratios):.2f}×" if ratios else "-"
    print(f"| {cell[0]} | {cell[1]} | {med(o,0):.0f} | {med(s,0):.0f} | {ratio} | {med(o,1):.1f} | {med(s,1):.1f} | {med(o,2):.0f} | {med(s,2):.0f} |")
PY
rm -f "$raw"
cat "$OUTFILE"
