#!/usr/bin/env bash
# bench/cluster.sh — `make bench-cluster`: the open/close workloads and the
# lease-break probe of `smbctl bench` against a 3-node local cluster
# (deploy/localcluster: embedded etcd, coordinator and nodes in one
# process, in a temp dir, on free ports), every client on node 1 and then
# spread over the nodes, in one run. Writes bench/results/cluster-latest.md
# (and cluster-cells.json, the raw records). Then 4 KiB and 64 KiB
# writes to one file another node owns, all connections on node 1 and
# spread, beside a file node 1 owns; and, when smbtorture is installed,
# smbtorture's smb2.bench.oplock1 and path-contention-shared through a
# forwarder that hands each connection to the next node (the control: the
# same forwarder, every connection to node 1). See bench/README.md.
#
# BENCH_NODES="3 8 16" runs the whole set once per cluster size, one
# after the other, and writes bench/results/cluster-scaling-latest.md:
# each workload's spread rate as a share of its one-node rate, by size
# (cluster-N-latest.md for each size but 3).
#
# Settings (environment):
#   BENCH_NODES=3                     cluster sizes, one run each
#   BENCH_TORTURE=auto                on, off, or auto (on when smbtorture
#                                     is installed)
#   BENCH_TORTURE_SECS=5              seconds per smbtorture run
#   BENCH_TORTURE_PAIRS=3             one-node/spread pairs per smbtorture
#                                     test (each cell their median)
#   BENCH_RUNTIME=3s BENCH_WARMUP=1s  per open/close cell
#   BENCH_CONNS=4 BENCH_FILES=100     connections; files per connection
#   BENCH_BREAKS=100                  lease-break attempts per probe
#   BENCH_SETTLE=2                    seconds to wait after a cell before
#                                     counting etcd writes (the nodes
#                                     publish every 1 s)
#   BENCH_OUT=bench/results
#   BENCH_PEER_RPC_VARS               comma-separated /debug/vars URLs whose
#                                     smbcluster_peer_rpcs counters sum to
#                                     the peer RPCs (see below)
# Peer RPCs: the nodes publish an expvar integer `smbcluster_peer_rpcs`
# (every call and delivery a node sends) on /debug/vars at localcluster's
# `--debug-addr`; this script passes a free address and reads it before
# and after each cell (or give the URLs in BENCH_PEER_RPC_VARS). Files
# are picked by their owner with it; without it the hot file is one file
# of unknown owner and the write cells are left out.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
GO=${GO:-go}
RUNTIME=${BENCH_RUNTIME:-3s}
WARMUP=${BENCH_WARMUP:-1s}
CONNS=${BENCH_CONNS:-4}
FILES=${BENCH_FILES:-100}
BREAKS=${BENCH_BREAKS:-100}
SETTLE=${BENCH_SETTLE:-2}
OUT=${BENCH_OUT:-$ROOT/bench/results}
USER_PEER_VARS=${BENCH_PEER_RPC_VARS:-}

log() { printf '%s bench-cluster: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "$*"; exit 1; }

WORK=$(mktemp -d /tmp/smbbench-cluster.XXXXXX)
CLUSTER_PID=""
cleanup() {
	local rc=$?
	set +e
	if [ -n "$CLUSTER_PID" ]; then
		kill "$CLUSTER_PID" 2>/dev/null
		wait "$CLUSTER_PID" 2>/dev/null
	fi
	[ -n "${BENCH_KEEP:-}" ] || rm -rf "$WORK"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$OUT"

# --- build ------------------------------------------------------------------
log "building into $WORK"
VERSION=$(git describe --always --dirty 2>/dev/null || echo dev)
mkdir -p bin
$GO build -ldflags "-X github.com/smbcluster/smbcluster/cli/command.Version=$VERSION" -o bin/smbctl ./cli
# Private copies: a name other than localcluster/smbnode keeps other
# people's cleanups by process name away from the benchmarked cluster.
$GO build -o "$WORK/bench-cluster-nodes" ./deploy/localcluster
$GO build -o "$WORK/clusterstat" ./bench/clusterstat
STAT=$WORK/clusterstat

NODES_LIST=${BENCH_NODES:-3}
TORTURE=${BENCH_TORTURE:-auto}
TORTURE_SECS=${BENCH_TORTURE_SECS:-5}
TORTURE_PAIRS=${BENCH_TORTURE_PAIRS:-3}
if [ "$TORTURE" = auto ]; then
	if command -v smbtorture >/dev/null; then TORTURE=on; else TORTURE=off; fi
fi

# run_size N: the whole set against an N-node cluster; its cells and
# report are $WORK/N/.
run_size() {
NODES=$1
RUN=$WORK/$NODES
mkdir -p "$RUN"
PEER_VARS=$USER_PEER_VARS
# --- cluster ----------------------------------------------------------------
PORT=$("$STAT" freeport -nodes "$NODES")
COORD=$("$STAT" freeport -nodes "$NODES")
args=(--dir "$RUN/cluster" --port "$PORT" --coordinator "127.0.0.1:$COORD" --nodes "$NODES")
PEER_NOTE="the nodes have no peer RPC yet and export no counter of them (the hook: an expvar \`smbcluster_peer_rpcs\` read from \`/debug/vars\`, see bench/cluster.sh)"
# (The help into a variable: grep -q would close the pipe early, and
# pipefail turn the writer's SIGPIPE into a failed test.)
nodes_help=$("$WORK/bench-cluster-nodes" -h 2>&1 || true)
if [ -z "$PEER_VARS" ] && grep -q -- '-debug-addr' <<<"$nodes_help"; then
	DEBUG_PORT=$("$STAT" freeport -nodes "$NODES")
	args+=(--debug-addr "127.0.0.1:$DEBUG_PORT")
	PEER_VARS="http://127.0.0.1:$DEBUG_PORT/debug/vars"
fi
log "starting a $NODES-node cluster: SMB port $PORT on 127.0.0.1-$NODES, coordinator 127.0.0.1:$COORD"
"$WORK/bench-cluster-nodes" "${args[@]}" >"$RUN/cluster.log" 2>&1 &
CLUSTER_PID=$!
for _ in $(seq 600); do
	grep -q 'local cluster ready' "$RUN/cluster.log" && break
	kill -0 "$CLUSTER_PID" 2>/dev/null || die "the cluster exited: $(tail -c 1000 "$RUN/cluster.log")"
	sleep 0.1
done
ETCD=$(sed -n 's/.*local cluster ready: etcd \([^,]*\),.*/\1/p' "$RUN/cluster.log" | head -1)
[ -n "$ETCD" ] || die "the cluster did not report ready: $(tail -c 1000 "$RUN/cluster.log")"
log "ready; etcd $ETCD"

ONE=127.0.0.1:$PORT
SPREAD=$(for n in $(seq "$NODES"); do printf '127.0.0.%d:%s,' "$n" "$PORT"; done)
SPREAD=${SPREAD%,}
CROSS=127.0.0.1:$PORT,127.0.0.2:$PORT
export SMBCTL_PASSWORD=demo
bench() { bin/smbctl bench --share demo --user demo --no-progress -o json "$@"; }

# Every node must serve the share (it reaches them through etcd).
for n in $(seq "$NODES"); do
	for i in $(seq 100); do
		bench --server "127.0.0.$n:$PORT" --rw leasebreak --breaks 1 >/dev/null 2>"$RUN/err" && break
		[ "$i" = 100 ] && die "node $n does not serve the demo share: $(cat "$RUN/err")"
		sleep 0.2
	done
done

peer_rpcs() {
	[ -n "$PEER_VARS" ] || { echo null; return; }
	"$STAT" counter -name smbcluster_peer_rpcs ${PEER_VARS//,/ } 2>/dev/null || echo null
}

CELLS=$RUN/cells.json
: >"$CELLS"
# cell NAME PLACE ARGS...: one smbctl bench run, with the etcd writes and
# peer RPCs it caused, appended to the cells file.
cell() {
	local name=$1 place=$2 rev0 peer0 peer1 del0 del1 ret0 ret1 res rc=0 etcd peer=null del=null
	shift 2
	rev0=$("$STAT" rev -etcd "$ETCD")
	peer0=$(peer_rpcs)
	del0=$(delegated) ret0=$(returns)
	res=$(bench "$@" 2>"$RUN/err") || rc=$?
	sleep "$SETTLE"
	etcd=$("$STAT" writes -etcd "$ETCD" -from "$rev0")
	peer1=$(peer_rpcs)
	del1=$(delegated) ret1=$(returns)
	if [ "$peer0" != null ] && [ "$peer1" != null ]; then peer=$((peer1 - peer0)); fi
	if [ "$del0" != null ] && [ "$del1" != null ]; then del=$((del1 - del0)); fi
	[ -n "$res" ] || res=null
	if [ "$rc" != 0 ]; then log "$name $place failed (exit $rc): $(head -c 400 "$RUN/err")"; fi
	printf '{"cell":"%s","place":"%s","exit":%s,"result":%s,"etcd":%s,"peer_rpcs":%s,"delegated":%s,"returns":%s}\n' \
		"$name" "$place" "$rc" "$(tr -d '\n' <<<"$res")" "$etcd" "$peer" "$del" "$((ret1 - ret0))" >>"$CELLS"
	log "done $name $place"
}

delegated() {
	[ -n "$PEER_VARS" ] || { echo null; return; }
	"$STAT" counter -name smbcluster_peer_delegated_opens ${PEER_VARS//,/ } 2>/dev/null || echo null
}
# returns: the peer RPCs that gave an idle delegation back, seconds after
# the opens that earned it (node/peer deleg.go).
returns() {
	[ -n "$PEER_VARS" ] || { echo 0; return; }
	"$STAT" counter -name smbcluster_peer_returns ${PEER_VARS//,/ } 2>/dev/null || echo 0
}
# owner LIMIT ARGS...: "one" when node 1 owns the file a bench with ARGS
# opens — a second run through node 1, the file laid out, makes fewer
# than LIMIT peer RPCs (the directory's owner may be another node) —
# "other" when another node does — node 1 admitted LIMIT opens or more
# under an admission delegation (node/peer deleg.go; only a remote
# file's are: the few of the bench's look at its directory, delegated
# too, do not count), or they made LIMIT peer RPCs or more — nothing
# when the counter is missing.
owner() {
	local p0 p1 g0 g1 r0 r1 limit=$1
	shift
	[ -n "$PEER_VARS" ] || return 0
	g0=$(delegated)
	bench --server "$ONE" "$@" >/dev/null 2>&1 || return 0
	p0=$(peer_rpcs) r0=$(returns)
	bench --server "$ONE" "$@" >/dev/null 2>&1 || return 0
	p1=$(peer_rpcs) r1=$(returns)
	g1=$(delegated)
	if [ "$p0" = null ] || [ "$p1" = null ]; then return 0; fi
	if [ "$g0" != null ] && [ "$g1" != null ] && [ $((g1 - g0)) -ge "$limit" ]; then echo other; return; fi
	if [ $((p1 - p0 - (r1 - r0))) -lt "$limit" ]; then echo one; else echo other; fi
}
# pick PREFIX LIMIT ARGS...: sets PICK_ONE and PICK_OTHER to names
# PREFIXi.dat of files node 1 owns and another node owns (see owner; the
# files are kept for the cells).
pick() {
	local prefix=$1 limit=$2 i o
	shift 2
	PICK_ONE="" PICK_OTHER=""
	for i in $(seq 16); do
		[ -n "$PICK_ONE" ] && [ -n "$PICK_OTHER" ] && break
		o=$(owner "$limit" "$@" --keep --file "$prefix$i.dat")
		case $o in
		one) [ -n "$PICK_ONE" ] || PICK_ONE=$prefix$i.dat ;;
		other) [ -n "$PICK_OTHER" ] || PICK_OTHER=$prefix$i.dat ;;
		esac
	done
}

# A node takes free shards at once and gives idle ones to better-ranked
# nodes as they join: let the shard map settle (every shard owned, no
# change for 3 s) before files are picked by their owner.
log "waiting for the shard map to settle"
last="" same=0
for _ in $(seq 120); do
	now=$("$STAT" shards -etcd "$ETCD")
	if [ "$now" = "$last" ] && [ "${now%% *}" = 64 ]; then same=$((same + 1)); else same=0; fi
	[ "$same" -ge 6 ] && break
	last=$now
	sleep 0.5
done

open_args=(--rw open --conns "$CONNS" --iodepth 1 --files "$FILES" --runtime "$RUNTIME" --warmup "$WARMUP")
# The hot file's owner decides what the one-node clients pay: none of
# their opens crosses nodes when node 1 owns it, all do otherwise. Both
# placements are measured, on files picked by their owner.
# 300 ms of opens of a remote file make thousands of calls; the open of
# the directory a few.
pick hot 50 --rw open --hot-file --conns 1 --iodepth 1 --runtime 300ms --warmup 0s
hot_one=$PICK_ONE hot_other=$PICK_OTHER
log "hot files: owned by node 1: ${hot_one:-none found}; by another node: ${hot_other:-none found}"
# Each workload on one node and then spread, back to back, so that the
# ratio compares runs under the same load of the (shared) machine.
for wl in files files-read hot-own hot-other; do
	extra=()
	case $wl in
	files-read) extra=(--open-read) ;;
	hot-own)
		[ -n "$hot_one" ] || continue
		extra=(--hot-file --keep --file "$hot_one")
		;;
	hot-other)
		[ -n "$hot_other" ] || continue
		extra=(--hot-file --keep --file "$hot_other")
		;;
	esac
	cell "$wl" one --server "$ONE" "${open_args[@]}" "${extra[@]}"
	cell "$wl" spread --server "$SPREAD" "${open_args[@]}" "${extra[@]}"
done
if [ -z "$hot_one$hot_other" ]; then # no counter to tell owners by
	cell hot one --server "$ONE" "${open_args[@]}" --hot-file
	cell hot spread --server "$SPREAD" "${open_args[@]}" --hot-file
fi

# Writes to one file, every connection at iodepth 16: to a file another
# node owns through node 1 and spread, beside a file node 1 owns.
write_args=(--rw write --conns "$CONNS" --iodepth 16 --size 64m --runtime "$RUNTIME" --warmup "$WARMUP" --keep)
# One open of a remote file: its Admit and Drop (and a read-caching
# break); of a local one none, or one to the share root's owner.
pick wfile 2 --rw write --bs 4k --conns 1 --iodepth 1 --size 64m --runtime 200ms --warmup 0s
log "write files: owned by node 1: ${PICK_ONE:-none found}; by another node: ${PICK_OTHER:-none found}"
for bs in 4k 64k; do
	if [ -n "$PICK_ONE" ]; then
		cell "write-$bs-own" one --server "$ONE" "${write_args[@]}" --bs "$bs" --file "$PICK_ONE"
	fi
	if [ -n "$PICK_OTHER" ]; then
		cell "write-$bs" one --server "$ONE" "${write_args[@]}" --bs "$bs" --file "$PICK_OTHER"
		cell "write-$bs" spread --server "$SPREAD" "${write_args[@]}" --bs "$bs" --file "$PICK_OTHER"
	fi
done
cell leasebreak one --server "$ONE" --rw leasebreak --breaks "$BREAKS"
cell leasebreak cross --server "$CROSS" --rw leasebreak --breaks "$BREAKS"

if [ "$TORTURE" = on ]; then
	torture_cells
fi

kill "$CLUSTER_PID" 2>/dev/null
wait "$CLUSTER_PID" 2>/dev/null || true
CLUSTER_PID=""

# --- report -----------------------------------------------------------------
cat >"$RUN/meta.json" <<META
{"Date":"$(date -u +%Y-%m-%dT%H:%M:%SZ)","Commit":"$VERSION","CPUs":$(nproc),
 "CPUModel":"$(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo | tr -d '"')",
 "Runtime":"$RUNTIME","Warmup":"$WARMUP","Conns":$CONNS,"Files":$FILES,"Nodes":$NODES,"Breaks":$BREAKS,
 "PeerRPCSource":"$(if [ -n "$PEER_VARS" ]; then echo "peer RPCs: smbcluster_peer_rpcs from $PEER_VARS"; else echo "$PEER_NOTE"; fi)"}
META
name=cluster-latest cells=cluster-cells.json
if [ "$NODES" != 3 ]; then name=cluster-$NODES-latest cells=cluster-$NODES-cells.json; fi
cp "$CELLS" "$OUT/$cells"
"$STAT" report -cells "$CELLS" -meta "$RUN/meta.json" -out "$OUT/$name"
cat "$OUT/$name.md"
}

# torture_cells: smbtorture's contention benchmarks, 4 connections at
# qdepth 1, through a forwarder: to node 1 alone, then round-robin over
# the nodes, back to back, BENCH_TORTURE_PAIRS times (3); each place's
# cell is the median of its runs (a run's rate varies by half between
# runs on this machine, the control's more than the spread's).
torture_cells() {
	local t place i rate rc med
	for t in oplock1 path-contention-shared; do
		local -A rates=() fails=()
		for i in $(seq "$TORTURE_PAIRS"); do
			for place in one spread; do
				rc=0
				rate=$(torture_run "$t" "$place" "$i") || rc=$?
				if [ "$rc" = 0 ]; then rates[$place]+="$rate "; else fails[$place]=$rc; fi
			done
		done
		for place in one spread; do
			med=$(tr ' ' '\n' <<<"${rates[$place]:-}" | grep . | sort -g | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]}')
			rc=0
			[ -n "$med" ] || { rc=${fails[$place]:-1}; med=0; }
			printf '{"cell":"torture-%s","place":"%s","exit":%s,"result":{"ops_s":%s,"total_ops":%s,"runs":"%s"}}\n' \
				"$t" "$place" "$rc" "$med" "$(awk -v r="$med" -v s="$TORTURE_SECS" 'BEGIN{printf "%d", r*s}')" "${rates[$place]:-}" >>"$CELLS"
			log "torture-$t $place: median $med ops/s of ${rates[$place]:-none}"
		done
		unset rates fails
	done
}

# torture_run TEST PLACE I: one smbtorture run of TEST through a
# forwarder (PLACE one: to node 1; spread: round-robin); prints its rate.
torture_run() {
	local t=$1 place=$2 i=$3 to=$ONE fwd_pid listen out rate rc=0
	[ "$place" = spread ] && to=$SPREAD
	"$STAT" forward -listen 127.0.0.1:0 -to "$to" >"$RUN/fwd.out" 2>"$RUN/fwd.err" &
	fwd_pid=$!
	listen=""
	for _ in $(seq 100); do
		listen=$(sed -n 's/^listening //p' "$RUN/fwd.out")
		[ -n "$listen" ] && break
		sleep 0.05
	done
	out=$(smbtorture "//${listen%:*}/demo" -p "${listen##*:}" -U demo%demo \
		--option=torture:timelimit="$TORTURE_SECS" --option=torture:nprocs="$CONNS" \
		--option=torture:qdepth=1 --option=torture:looplimit=-1 "smb2.bench.$t" 2>&1) || rc=$?
	kill "$fwd_pid" 2>/dev/null
	wait "$fwd_pid" 2>/dev/null || true
	printf '%s\n' "$out" >"$RUN/torture-$t-$place-$i.log"
	rate=$(torture_rate <<<"$out")
	if [ "$rc" != 0 ] || [ -z "$rate" ]; then
		log "smbtorture $t $place failed (exit $rc): $(tail -c 400 <<<"$out")"
		return $((rc == 0 ? 1 : rc))
	fi
	echo "$rate"
}

# torture_rate: the operations per second an smbtorture bench run
# reports: oplock1's last running "N ops/second" (its average so far), or
# path-contention-shared's opens per second averaged over its seconds.
torture_rate() {
	local out r
	out=$(tr '\r' '\n')
	r=$(grep -o '[0-9.]* ops/second' <<<"$out" | tail -1 | cut -d' ' -f1)
	if [ -z "$r" ]; then
		r=$(grep -o 'open\[num/s=[0-9]*' <<<"$out" | cut -d= -f2 |
			awk '{s += $1; n++} END {if (n) printf "%.0f", s / n}')
	fi
	echo "$r"
}

scaling=()
for n in $NODES_LIST; do
	run_size "$n"
	scaling+=("$n:$WORK/$n/cells.json:$WORK/$n/meta.json")
done
if [ "${#scaling[@]}" -gt 1 ]; then
	"$STAT" scaling -runs "$(IFS=,; echo "${scaling[*]}")" -out "$OUT/cluster-scaling-latest"
	cat "$OUT/cluster-scaling-latest.md"
fi
