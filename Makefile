# smbcluster build, test and CI entry points. `make test` is what CI runs
# (through .ci/run); `make test-short` is the quick local loop.

GO            ?= go
TEST_TIMEOUT  ?= 45m
FUZZTIME      ?= 1m
FUZZSMOKE     ?= 20000x
BENCHTIME     ?= 1s
DEMO_ADDR     ?= 127.0.0.1:4450

# The end-to-end tests use the binary `make build` just made.
TESTENV := SMBNODE_BIN=$(CURDIR)/bin/smbnode

.PHONY: all build test test-short fuzz fuzz-smoke lint vet run bench clean proto proto-check

all: build

build:
	mkdir -p bin
	$(GO) build -o bin/smbnode ./node
	if [ -f coordinator/main.go ]; then $(GO) build -o bin/smbcoord ./coordinator; fi
	if [ -f cli/main.go ]; then $(GO) build -o bin/smbctl ./cli; fi

vet:
	$(GO) vet ./...

# Full suite: unit tests, end-to-end tests with real clients (against
# bin/smbnode via SMBNODE_BIN), smbtorture allowlist, then a fuzz smoke.
test: build lint proto-check
	$(TESTENV) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...
	$(MAKE) fuzz-smoke

# Skips the slow parts: 100 MiB transfers, 10,000-entry listings, smbtorture.
test-short: build vet
	$(TESTENV) $(GO) test -short -timeout 10m ./...

# Regenerate the committed gRPC/protobuf code (pinned generators, see
# proto/gen.sh); proto-check fails if the committed code is stale.
proto:
	GO=$(GO) proto/gen.sh proto

proto-check:
	GO=$(GO) proto/gen.sh -check

fuzz-smoke:
	GO=$(GO) scripts/fuzz.sh $(FUZZSMOKE)

fuzz:
	GO=$(GO) scripts/fuzz.sh $(FUZZTIME)

lint: vet
	@unformatted=$$(find . -name '*.go' ! -name '*.pb.go' ! -path './.git/*' -print0 | xargs -0 gofmt -l); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi

# A local cluster on loopback in one process: embedded etcd (run/etcd),
# the coordinator (127.0.0.1:7445, development mode), three nodes on
# 127.0.0.1-3 (port 445 as root, else 4450), a demo share (run/shares/demo)
# and user demo/demo. Only the user who ran it may administer it (token in
# run/admin-token, found by their smbctl). Ctrl-C stops it. See deploy/localcluster.
run: build
	$(GO) build -o bin/localcluster ./deploy/localcluster
	bin/localcluster --dir $(CURDIR)/run

# smbctl bench against our node and a private Samba on loopback, paired
# runs; results in bench/results/latest.md (see bench/README.md).
bench:
	GO=$(GO) bench/run.sh

.PHONY: bench-quick
bench-quick:
	GO=$(GO) BENCH_RUNS=1 BENCH_RUNTIME=2s BENCH_WARMUP=500ms bench/run.sh

# Open/close workloads, writes, the lease-break probe and smbtorture's
# contention benchmarks against a 3-node local cluster, clients on one
# node and then spread over all three; results in
# bench/results/cluster-latest.md (see bench/README.md). NODES="3 8 16"
# runs them once per cluster size, and cluster-scaling-latest.md gives
# spread against one node by size.
.PHONY: bench-cluster
bench-cluster:
	GO=$(GO) $(if $(NODES),BENCH_NODES="$(NODES)") bench/cluster.sh

# One multichannel client's 1 MiB READ and WRITE throughput with its
# channels on one node against three, each node behind a rate-limited
# link (a private network namespace, tc); needs root. Results in
# bench/results/scaleout-latest.md (see bench/README.md).
.PHONY: bench-scaleout
bench-scaleout:
	GO=$(GO) bench/scaleout.sh
# Failover time as a client sees it: kill -9 of a node while a client
# writes through its public address, until a client reads the file back
# through that address from the node that took it over; median and worst
# of FAILOVER_RUNS runs and bytes lost (integration/failoverbench_test.go),
# in bench/results/failover-latest.txt. BED=glusterfs (or cephfs, local)
# runs it on the multi-host bed: each node a host of its own with its own
# mount, the address moved by the address hook (failover-BED-latest.txt).
FAILOVER_RUNS ?= 10
FAILOVER_OUT = bench/results/failover$(if $(BED),-$(BED))-latest.txt
.PHONY: bench-failover
bench-failover: build
	mkdir -p bench/results
	$(TESTENV) SMBCLUSTER_BENCH_FAILOVER=$(FAILOVER_RUNS) SMBCLUSTER_BENCH_FAILOVER_BED=$(BED) $(GO) test ./integration -run '^TestFailoverBench$$' -count=1 -v -timeout 20m \
		> $(FAILOVER_OUT) 2>&1; s=$$?; grep -E 'run [0-9]+:|failover \(|FAIL|^ok' $(FAILOVER_OUT); exit $$s

# On the GlusterFS bed (each node its own host and FUSE mount): one
# client's 1 MiB READ and WRITE against the three nodes and against smbd,
# one per host over the same mounts and through libgfapi (integration
# TestBedBenchIO), and bench-cluster's open/close cells with every
# connection on one node and spread over three (TestBedBenchCluster);
# BED_RUNS paired runs; the tables are in bench/results/bed-latest.txt.
BED_RUNS ?= 3
.PHONY: bench-bed
bench-bed: build
	mkdir -p bench/results
	$(TESTENV) SMBCLUSTER_BENCH_BED=$(BED_RUNS) $(GO) test ./integration -run '^TestBedBench(IO|Cluster)$$' -count=1 -v -timeout 40m \
		> bench/results/bed-latest.txt 2>&1; s=$$?; grep -E '^\s*\||MiB/s|FAIL|^ok' bench/results/bed-latest.txt; exit $$s

# The robustness suite (integration/robustness, issue 23): random
# concurrent SMB traffic from six clients on a three-node bed while a
# nemesis injects faults, the history checked (porcupine for registers,
# invariants for share modes, locked counters, answers within a bound).
# ROBUST_SEED reproduces the fault schedule and the operations' choices
# (empty: seed 1 and a random one, as in make test); ROBUST_DURATION is
# the run's length. The history and logs of a failed run are kept (the
# directory is in the output); ROBUST_OUT names a directory that gets
# them whatever the verdict. It
# fails on the known issues too (integration/robustness/known.go), which
# make test's short run only logs.
ROBUST_DURATION ?= 10m
ROBUST_SEED     ?=
# ROBUST_KINDS=cut-etcd,kill injects only those fault kinds;
# ROBUST_BACKEND=glusterfs (or cephfs) puts the share on that storage.
ROBUST_KINDS    ?=
ROBUST_BACKEND  ?=
ROBUST_OUT      ?=
.PHONY: robustness
robustness: build
	$(TESTENV) SMBCLUSTER_ROBUST_STRICT=on SMBCLUSTER_ROBUST_DURATION=$(ROBUST_DURATION) SMBCLUSTER_ROBUST_SEED=$(ROBUST_SEED) SMBCLUSTER_ROBUST_KINDS=$(ROBUST_KINDS) SMBCLUSTER_ROBUST_BACKEND=$(ROBUST_BACKEND) SMBCLUSTER_ROBUST_OUT=$(ROBUST_OUT) \
		$(GO) test ./integration/robustness -run '^TestRobustness$$' -count=1 -v -timeout 4h

clean:
	rm -rf bin run
