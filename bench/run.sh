#!/usr/bin/env bash
# bench/run.sh — `make bench`: smbctl bench against our smbnode and a private
# Samba smbd on loopback, paired run by run, medians and ratios written to
# bench/results/latest.{md,json,csv} (and latest.png when gnuplot exists).
#
# Settings (environment):
#   BENCH_RUNS=3 BENCH_RUNTIME=5s BENCH_WARMUP=1s BENCH_SIZE=256m BENCH_IODEPTH=16
#   BENCH_BS="4k 64k 1m" BENCH_RW="read write mixed" BENCH_CONNS="1 2 4"
#   BENCH_EXTRA=1 (signed and encrypted 1 MiB reads)  BENCH_OUT=bench/results
#   BENCH_CLIENT=native (smbctl bench --client: native or go-smb2)
#   BENCH_PIN=0 (1: both servers on the last CPU, smbctl on the others, as
#   if client and server were separate machines; default: the scheduler
#   places them)
#   BENCH_PORT_OURS=14450 BENCH_PORT_SAMBA=14451
#   BENCH_METRICS=0 (1: our node serves /metrics on 127.0.0.1:BENCH_METRICS_PORT,
#   default 14452, so that its cost is in the figures; compare with a run of 0)
# Needs root (Samba serves the files as root, like our node) and Debian's
# samba package; nss_wrapper (libnss-wrapper) gives smbd its user without
# touching /etc/passwd.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
. bench/lib.sh # wait_port, start_samba, cpu_ticks
GO=${GO:-go}
RUNS=${BENCH_RUNS:-3}
RUNTIME=${BENCH_RUNTIME:-5s}
WARMUP=${BENCH_WARMUP:-1s}
SIZE=${BENCH_SIZE:-256m}
IODEPTH=${BENCH_IODEPTH:-16}
BSS=${BENCH_BS:-4k 64k 1m}
RWS=${BENCH_RW:-read write mixed}
CONNS=${BENCH_CONNS:-1 2 4}
EXTRA=${BENCH_EXTRA:-1}
CLIENT=${BENCH_CLIENT:-native}
PIN=${BENCH_PIN:-0}
OUT=${BENCH_OUT:-$ROOT/bench/results}
PORT_OURS=${BENCH_PORT_OURS:-14450}
PORT_SAMBA=${BENCH_PORT_SAMBA:-14451}
METRICS=${BENCH_METRICS:-0}
METRICS_ARGS=()
if [ "$METRICS" = 1 ]; then
	METRICS_ARGS=(--metrics-addr "127.0.0.1:${BENCH_METRICS_PORT:-14452}")
fi
USER_NAME=bench
PASS=bench-Passw0rd
CLK_TCK=$(getconf CLK_TCK)

log() { printf '%s bench: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "$*"; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (Samba must serve files as root, like smbnode)"
SPIN=() CPIN=() PINNOTE=none
if [ "$PIN" = 1 ]; then
	ncpu=$(nproc)
	[ "$ncpu" -ge 2 ] || die "BENCH_PIN=1 needs at least 2 CPUs"
	SERVER_CPUS=$((ncpu - 1)) CLIENT_CPUS=0-$((ncpu - 2))
	SPIN=(taskset -c "$SERVER_CPUS") CPIN=(taskset -c "$CLIENT_CPUS")
	PINNOTE="servers on CPU $SERVER_CPUS, smbctl on CPU $CLIENT_CPUS"
fi
SMBD=$(command -v smbd || true)
[ -n "$SMBD" ] || die "smbd not found: apt-get install samba"

# --- work directory: a tmpfs when /dev/shm has room, else a temp dir ------
need_kb=$((4 * 1024 * 1024))
if [ -d /dev/shm ] && [ "$(df -Pk /dev/shm | awk 'NR==2{print $4}')" -gt "$need_kb" ]; then
	WORK=$(mktemp -d /dev/shm/smbbench.XXXXXX)
	FSNOTE="tmpfs (/dev/shm)"
else
	WORK=$(mktemp -d /tmp/smbbench.XXXXXX)
	FSNOTE="$(df -PT /tmp | awk 'NR==2{print $2}') ($WORK, /dev/shm too small)"
fi
OURS_PID="" SAMBA_PID=""
cleanup() {
	local rc=$?
	set +e
	[ -n "$OURS_PID" ] && kill "$OURS_PID" 2>/dev/null && wait "$OURS_PID" 2>/dev/null
	[ -n "$SAMBA_PID" ] && kill "$SAMBA_PID" 2>/dev/null && wait "$SAMBA_PID" 2>/dev/null
	if [ -f "$WORK/samba/pid/samba-dcerpcd.pid" ]; then
		kill "$(cat "$WORK/samba/pid/samba-dcerpcd.pid")" 2>/dev/null
	fi
	rm -rf "$WORK"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$OUT" "$WORK/ours" "$WORK/oursenc" "$WORK/samba/share" "$WORK/samba/shareenc"
log "work directory $WORK on $FSNOTE"

# --- build ------------------------------------------------------------------
mkdir -p bin
VERSION=$(git describe --always --dirty 2>/dev/null || echo dev)
$GO build -ldflags "-X github.com/smbcluster/smbcluster/cli/command.Version=$VERSION" -o bin/smbctl ./cli
OURS_NOTE=""
if ! $GO build -o bin/smbnode ./node 2>"$WORK/ours-build.log"; then
	OURS_NOTE="bin/smbnode did not build: $(head -c 600 "$WORK/ours-build.log" | tr '\n' ' ')"
	log "$OURS_NOTE"
fi


# --- our node -----------------------------------------------------------------
# The node's log is kept in $OUT/ours.log; if it dies, the run that notices
# records how (exit status, log tail) in errors.log and starts it again.
OURS_RESTARTS=0
start_ours() {
	echo "=== $(date +%T) starting smbnode" >>"$OUT/ours.log"
	# A private copy whose name lacks "smbnode": on a shared machine other
	# people's `pkill smbnode` cleanups killed the benchmarked node mid-run.
	cp bin/smbnode "$WORK/bench-ournode"
	"${SPIN[@]}" "$WORK/bench-ournode" --listen "127.0.0.1:$PORT_OURS" --user "$USER_NAME:$PASS" \
		--share "bench=$WORK/ours" --share "benchenc=$WORK/oursenc,encrypt" \
		--log-level warn "${METRICS_ARGS[@]}" >>"$OUT/ours.log" 2>&1 &
	OURS_PID=$!
	if ! wait_port "$PORT_OURS"; then
		OURS_NOTE="smbnode did not start listening: $(tail -c 600 "$OUT/ours.log" | tr '\n' ' ')"
		log "$OURS_NOTE"
		kill "$OURS_PID" 2>/dev/null || true
		OURS_PID=""
	fi
}

# check_ours: restart smbnode if it died since the last run.
check_ours() {
	[ -n "$OURS_PID" ] || return 0
	kill -0 "$OURS_PID" 2>/dev/null && return 0
	local st=0
	wait "$OURS_PID" || st=$?
	OURS_RESTARTS=$((OURS_RESTARTS + 1))
	printf 'smbnode (pid %s) died before this run (exit status %s); log tail: %s\n' "$OURS_PID" "$st" \
		"$(tail -c 1500 "$OUT/ours.log" | tr '\n' ' ')" >>"$OUT/errors.log"
	log "smbnode died (exit status $st), restarting; see $OUT/ours.log"
	start_ours
}
: >"$OUT/ours.log"
: >"$OUT/errors.log"
[ -z "$OURS_NOTE" ] && start_ours

# --- private Samba --------------------------------------------------------------
start_samba
if [ "$PIN" = 1 ]; then # every smbd process; the ones serving connections fork from them later
	for p in $(pgrep -f -- "--configfile=$WORK/samba/smb.conf"); do taskset -a -p -c "$SERVER_CPUS" "$p" >/dev/null; done
fi
SAMBA_VERSION=$("$SMBD" --version)


RUNS_FILE=$OUT/runs.json
: >"$RUNS_FILE"

# one SERVER MODE RW BS CONNS RUN: one smbctl bench run, appended to runs.json.
one() {
	local server=$1 mode=$2 rw=$3 bs=$4 conns=$5 run=$6 port pid share user args=()
	if [ "$server" = ours ]; then
		check_ours
		port=$PORT_OURS pid=$OURS_PID user=$USER_NAME
		[ -n "$pid" ] || { printf '{"server":"ours","mode":"%s","rw":"%s","bs":"%s","conns":%s,"run":%s,"exit":-1}\n' \
			"$mode" "$rw" "$bs" "$conns" "$run" >>"$RUNS_FILE"; return; }
	else
		port=$PORT_SAMBA pid=$SAMBA_PID user=$SAMBA_USER
	fi
	share=bench
	case $mode in
	sign) args+=(--sign) ;;
	encrypt) args+=(--encrypt) share=benchenc ;;
	esac
	local before after rc=0 res
	before=$(cpu_ticks "$pid")
	res=$(SMBCTL_PASSWORD=$PASS "${CPIN[@]}" bin/smbctl bench --server "127.0.0.1:$port" --share "$share" \
		--user "$user" --rw "$rw" --bs "$bs" --conns "$conns" --iodepth "$IODEPTH" --size "$SIZE" \
		--client "$CLIENT" --runtime "${RT:-$RUNTIME}" --warmup "${WU:-$WARMUP}" --keep --no-progress -o json "${args[@]}" \
		2>"$WORK/err") || rc=$?
	after=$(cpu_ticks "$pid")
	if [ "$rc" != 0 ]; then
		printf '%s %s %s %s %s conns=%s run=%s exit=%s: %s\n' "$(date +%T)" "$server" "$mode" "$rw" "$bs" "$conns" "$run" \
			"$rc" "$(tr '\n' ' ' <"$WORK/err")" >>"$OUT/errors.log"
		log "$server $mode $rw $bs x$conns failed (exit $rc): $(head -c 300 "$WORK/err")"
		[ -n "$res" ] || res=null
	fi
	printf '{"server":"%s","mode":"%s","rw":"%s","bs":"%s","conns":%s,"run":%s,"exit":%s,"cpu_s":%s,"result":%s}\n' \
		"$server" "$mode" "$rw" "$bs" "$conns" "$run" "$rc" \
		"$(awk -v a="$before" -v b="$after" -v hz="$CLK_TCK" 'BEGIN{printf "%.3f", (b-a)/hz}')" \
		"$(tr -d '\n' <<<"$res")" >>"$RUNS_FILE"
}

# pair MODE RW BS CONNS: BENCH_RUNS paired runs, alternating who goes first.
pair() {
	local r
	for r in $(seq "$RUNS"); do
		if [ $((r % 2)) = 1 ]; then
			one ours "$@" "$r"; one samba "$@" "$r"
		else
			one samba "$@" "$r"; one ours "$@" "$r"
		fi
	done
	log "done $*"
}

# Lay the file out once, unmeasured, and hard-link it into every share: both
# servers then read the very same page-cache pages (later runs find the
# pattern and reuse it; writes rewrite it in place). Separate files made the
# READ cells depend on which file got physically contiguous pages: a file
# laid out right after a large free gets scattered ones (1 % of pages
# followed by the next frame, against 70-95 % otherwise), and receiving
# 1 MiB READs of it costs the client up to 15 % more CPU, whichever server
# sends it (measured; docs in bench/README.md).
log "laying out the $SIZE file"
RT=1s WU=0s one ours plain read 1m 1 0
for d in "$WORK/oursenc" "$WORK/samba/share" "$WORK/samba/shareenc"; do
	ln -f "$WORK/ours/smbctl-bench.dat" "$d/smbctl-bench.dat"
done
for s in ours samba; do
	for m in plain encrypt; do
		RT=1s WU=0s one "$s" "$m" read 1m 1 0 # every share sees the pattern
	done
done
: >"$RUNS_FILE"

log "loopback TCP reference"
bin/smbctl bench --tcp-loopback --conns 1 --runtime 3s -o json >"$WORK/tcp1.json"
bin/smbctl bench --tcp-loopback --conns 4 --runtime 3s -o json >"$WORK/tcp4.json"

for bs in $BSS; do
	for rw in $RWS; do
		for c in $CONNS; do
			pair plain "$rw" "$bs" "$c"
		done
	done
done
if [ "$EXTRA" = 1 ]; then
	for c in 1 4; do
		pair sign read 1m "$c"
		pair encrypt read 1m "$c"
	done
fi

# --- report -----------------------------------------------------------------------
cat >"$OUT/meta.json" <<META
{"date":"$(date -u +%Y-%m-%dT%H:%M:%SZ)","commit":"$VERSION","kernel":"$(uname -r)",
 "cpus":$(nproc),"cpu_model":"$(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo | tr -d '"')",
 "filesystem":"$FSNOTE","samba":"$SAMBA_VERSION","runs":$RUNS,"runtime":"$RUNTIME","warmup":"$WARMUP",
 "size":"$SIZE","iodepth":$IODEPTH,"client":"$CLIENT","pin":"$PINNOTE","metrics":$METRICS,"ours_restarts":$OURS_RESTARTS,
 "ours_note":"$(tr -d '"\\' <<<"$OURS_NOTE")",
 "tcp1":$(cat "$WORK/tcp1.json" | tr -d '\n'),"tcp4":$(cat "$WORK/tcp4.json" | tr -d '\n')}
META
$GO run ./bench/report -runs "$RUNS_FILE" -meta "$OUT/meta.json" -out "$OUT/latest"

if ! command -v gnuplot >/dev/null && command -v apt-get >/dev/null; then
	log "installing gnuplot-nox for the plot"
	apt-get install -y -qq gnuplot-nox >/dev/null 2>&1 || true
fi
if command -v gnuplot >/dev/null; then
	gnuplot "$OUT/latest.gp" && log "plot: $OUT/latest.png"
else
	log "gnuplot not available: no plot (apt-get install gnuplot-nox)"
	printf '\n_No plot: gnuplot is not installed (apt-get install gnuplot-nox)._\n' >>"$OUT/latest.md"
fi
cat "$OUT/latest.md"
