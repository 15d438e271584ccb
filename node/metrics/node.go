package metrics

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// LatencyBuckets are the upper bounds, in seconds, of the request,
// break and lock wait histograms: 50 µs (a cached 4 KiB READ on
// loopback) to 35 s (the break acknowledgment timeout).
var LatencyBuckets = []float64{
	0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
	0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 35,
}

// maxStatuses bounds the NTSTATUS labels of one command; past it a
// status is counted as "other".
const maxStatuses = 32

// IOPath is how a READ's or WRITE's bytes moved (the ARCHITECTURE's
// "Data path").
type IOPath uint8

const (
	PathBuffered IOPath = iota // read into or written from a buffer
	PathZeroCopy               // READ: header, then sendfile(2) from the page cache
	PathSpliced                // WRITE: splice(2) from the socket through a pipe into the file
	PathSigned                 // the message was signed
	PathSealed                 // the message was encrypted
	numPaths
)

var pathNames = [numPaths]string{"buffered", "zerocopy", "spliced", "signed", "sealed"}

func (p IOPath) String() string { return pathNames[p] }

// Node is one node's instruments, registered in its own registry (a
// process may run several nodes: deploy/localcluster).
type Node struct {
	reg *prometheus.Registry

	requests *prometheus.CounterVec
	cmds     [smb2.NumCommands]command

	shareDur   *prometheus.HistogramVec
	shareBytes *prometheus.CounterVec
	sharesMu   sync.Mutex
	shares     map[string]*Share

	sessionsTotal prometheus.Counter
	authFailures  *prometheus.CounterVec
	credits       prometheus.Counter
	outstanding   atomic.Int64

	breaksSent    [2]prometheus.Counter // oplock, lease
	breaksAcked   [2]prometheus.Counter
	breaksExpired [2]prometheus.Counter
	breakDur      [2]prometheus.Observer

	lockWait prometheus.Histogram

	handoffBytes [2]prometheus.Counter // read, write

	etcdDur  *prometheus.HistogramVec
	etcdErr  *prometheus.CounterVec
	peerDur  *prometheus.HistogramVec
	peerErr  *prometheus.CounterVec
	shardMov *prometheus.CounterVec
	fences   *prometheus.CounterVec
	storage  *prometheus.GaugeVec

	// The bounded top-N tables and what still counts into them.
	files, clients          *TopN
	srcMu                   sync.Mutex
	src                     Source
	locksHeld, locksBlocked func() int64
}

// command is one SMB2 command's pre-resolved children.
type command struct {
	name     string
	ok       prometheus.Counter // STATUS_SUCCESS
	dur      prometheus.Observer
	mu       sync.Mutex
	statuses atomic.Pointer[[]statusCounter] // copy on write, under mu
}

type statusCounter struct {
	status uint32
	c      prometheus.Counter
}

// NewNode returns the instruments of node name (a label on nothing: the
// scraper knows its target), with Go runtime and process collectors.
func NewNode() *Node {
	n := &Node{reg: prometheus.NewRegistry(), shares: map[string]*Share{}, files: NewTopN(topCapacity), clients: NewTopN(topCapacity)}
	f := factory{n.reg}
	n.requests = f.counterVec("smbcluster_smb_requests_total", "SMB2 requests answered, by command and NTSTATUS.", "command", "status")
	dur := f.histogramVec("smbcluster_smb_request_duration_seconds", "Time to serve a request, from its dispatch to its answer (async requests: to the final answer), by command.", "command")
	for i := range n.cmds {
		c := &n.cmds[i]
		c.name = smb2.Command(i).String()
		c.ok = n.requests.WithLabelValues(c.name, smb2.StatusSuccess.String())
		c.dur = dur.WithLabelValues(c.name)
		c.statuses.Store(&[]statusCounter{})
	}
	n.shareDur = f.histogramVec("smbcluster_share_request_duration_seconds", "Time to answer a request on a tree connect of the share.", "share")
	n.shareBytes = f.counterVec("smbcluster_share_bytes_total", "Bytes of READ and WRITE data, by share, direction and data path (zerocopy: sendfile; spliced: splice into the file; buffered; signed; sealed).", "share", "op", "path")
	n.sessionsTotal = f.counter("smbcluster_sessions_established_total", "Sessions whose authentication completed (channel bindings excluded).")
	n.authFailures = f.counterVec("smbcluster_auth_failures_total", "SESSION_SETUPs that failed authentication, by NTSTATUS.", "status")
	n.credits = f.counter("smbcluster_credits_granted_total", "Credits granted to clients.")
	f.gaugeFunc("smbcluster_requests_outstanding", "Requests read and not yet answered.", func() float64 { return float64(n.outstanding.Load()) })
	sent := f.counterVec("smbcluster_breaks_sent_total", "Oplock and lease break notifications sent to clients of this node, by kind.", "kind")
	acked := f.counterVec("smbcluster_breaks_acknowledged_total", "Break acknowledgments from clients of this node, by kind.", "kind")
	expired := f.counterVec("smbcluster_breaks_timed_out_total", "Breaks whose acknowledgment did not come in time (35 s), counted at the node owning the file, by kind.", "kind")
	bdur := f.histogramVec("smbcluster_break_duration_seconds", "Time from a break's start to its acknowledgment or timeout, at the node owning the file, by kind.", "kind")
	for i, k := range []string{"oplock", "lease"} {
		n.breaksSent[i] = sent.WithLabelValues(k)
		n.breaksAcked[i] = acked.WithLabelValues(k)
		n.breaksExpired[i] = expired.WithLabelValues(k)
		n.breakDur[i] = bdur.WithLabelValues(k)
	}
	hb := f.counterVec("smbcluster_handoff_bytes_total", "Bytes of READ and WRITE data this node moved between its clients and its own descriptors for channels handed to another node, the session's home (which counts them in smbcluster_share_bytes_total), by direction.", "op")
	n.handoffBytes = [2]prometheus.Counter{hb.WithLabelValues("read"), hb.WithLabelValues("write")}
	n.lockWait = f.histogram("smbcluster_lock_wait_seconds", "Time blocking byte-range lock requests waited for their range, granted or not (the file's owner node).")
	n.etcdDur = f.histogramVec("smbcluster_etcd_request_duration_seconds", "etcd calls of the node, by method.", "method")
	n.etcdErr = f.counterVec("smbcluster_etcd_request_errors_total", "etcd calls that failed, by method.", "method")
	n.peerDur = f.histogramVec("smbcluster_peer_rpc_duration_seconds", "Node-to-node calls this node made, by method (streams: until they end).", "method")
	n.peerErr = f.counterVec("smbcluster_peer_rpc_errors_total", "Node-to-node calls that failed, by method.", "method")
	n.shardMov = f.counterVec("smbcluster_shard_ownership_changes_total", "Shards this node took or gave up, by direction (taken, released, lost).", "direction")
	n.fences = f.counterVec("smbcluster_fencing_events_total", "Ends of this node's incarnation, by reason.", "reason")
	n.storage = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "smbcluster_share_storage_state",
		Help: "How this node serves each cluster share after checking its storage through its own mount: 1 for the share's current state (serving, checking, refused, unchecked), 0 for the others."}, []string{"share", "state"})
	f.reg.MustRegister(n.storage)
	n.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	n.reg.MustRegister(stateCollector{n})
	return n
}

// Registry is where the node's collectors are registered (/metrics).
func (n *Node) Registry() *prometheus.Registry { return n.reg }

// Request records one answered request: its command, NTSTATUS and how
// long it took.
func (n *Node) Request(cmd smb2.Command, status smb2.Status, d time.Duration) {
	if n == nil || int(cmd) >= len(n.cmds) {
		return
	}
	c := &n.cmds[cmd]
	c.dur.Observe(d.Seconds())
	if status == smb2.StatusSuccess {
		c.ok.Inc()
		return
	}
	c.counter(n, uint32(status)).Inc()
}

// counter returns the counter of status, making it on first use.
func (c *command) counter(n *Node, status uint32) prometheus.Counter {
	for _, s := range *c.statuses.Load() {
		if s.status == status {
			return s.c
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := *c.statuses.Load()
	for _, s := range old {
		if s.status == status {
			return s.c
		}
	}
	if len(old) >= maxStatuses {
		return n.requests.WithLabelValues(c.name, "other") // rare: a lookup, no growth
	}
	sc := statusCounter{status, n.requests.WithLabelValues(c.name, smb2.Status(status).String())}
	grown := append(old[:len(old):len(old)], sc)
	c.statuses.Store(&grown)
	return sc.c
}

// Started and Finished count the requests being served.
func (n *Node) Started() {
	if n != nil {
		n.outstanding.Add(1)
	}
}

func (n *Node) Finished() {
	if n != nil {
		n.outstanding.Add(-1)
	}
}

// Credits records credits granted.
func (n *Node) Credits(granted uint16) {
	if n != nil && granted > 0 {
		n.credits.Add(float64(granted))
	}
}

// SessionEstablished records a completed authentication; AuthFailed a
// failed one.
func (n *Node) SessionEstablished() {
	if n != nil {
		n.sessionsTotal.Inc()
	}
}

func (n *Node) AuthFailed(status smb2.Status) {
	if n != nil {
		n.authFailures.WithLabelValues(status.String()).Inc()
	}
}

// BreakSent and BreakAcked count break notifications and their
// acknowledgments on this node's connections.
func (n *Node) BreakSent(lease bool) {
	if n != nil {
		n.breaksSent[b2i(lease)].Inc()
	}
}

func (n *Node) BreakAcked(lease bool) {
	if n != nil {
		n.breaksAcked[b2i(lease)].Inc()
	}
}

// BreakEnded records a break that ended at the file's owner after d,
// acknowledged or timed out.
func (n *Node) BreakEnded(lease bool, d time.Duration, timedOut bool) {
	if n == nil {
		return
	}
	n.breakDur[b2i(lease)].Observe(d.Seconds())
	if timedOut {
		n.breaksExpired[b2i(lease)].Inc()
	}
}

// HandoffMoved records n bytes of a READ (or WRITE) this node sent (or
// wrote) for a channel handed to another node.
func (n *Node) HandoffMoved(write bool, bytes int) {
	if n != nil && bytes > 0 {
		n.handoffBytes[b2i(write)].Add(float64(bytes))
	}
}

// LockWaited records a blocking lock's wait.
func (n *Node) LockWaited(d time.Duration) {
	if n != nil {
		n.lockWait.Observe(d.Seconds())
	}
}

// Etcd and Peer record one call: its method, duration and failure.
func (n *Node) Etcd(method string, d time.Duration, err error) {
	if n != nil {
		observeCall(n.etcdDur, n.etcdErr, method, d, err)
	}
}

func (n *Node) Peer(method string, d time.Duration, err error) {
	if n != nil {
		observeCall(n.peerDur, n.peerErr, method, d, err)
	}
}

func observeCall(dur *prometheus.HistogramVec, errs *prometheus.CounterVec, method string, d time.Duration, err error) {
	dur.WithLabelValues(method).Observe(d.Seconds())
	if err != nil {
		errs.WithLabelValues(method).Inc()
	}
}

// ShardMoved records a shard taken, released or lost.
func (n *Node) ShardMoved(direction string) {
	if n != nil {
		n.shardMov.WithLabelValues(direction).Inc()
	}
}

// StorageStates are the states ShareStorage knows (node/storecheck).
var StorageStates = []string{"serving", "checking", "refused", "unchecked"}

// ShareStorage records how the node serves share after its storage
// check: state among StorageStates.
func (n *Node) ShareStorage(share, state string) {
	if n == nil {
		return
	}
	for _, s := range StorageStates {
		n.storage.WithLabelValues(share, s).Set(float64(b2i(s == state)))
	}
}

// Fenced records the end of an incarnation.
func (n *Node) Fenced(reason string) {
	if n != nil {
		n.fences.WithLabelValues(reason).Inc()
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Share is one share's pre-resolved children, looked up once per tree
// connect.
type Share struct {
	name  string
	dur   prometheus.Observer
	bytes [2][numPaths]prometheus.Counter // read, write
}

// Share returns the instruments of share name.
func (n *Node) Share(name string) *Share {
	if n == nil {
		return nil
	}
	n.sharesMu.Lock()
	defer n.sharesMu.Unlock()
	if s := n.shares[name]; s != nil {
		return s
	}
	s := &Share{name: name, dur: n.shareDur.WithLabelValues(name)}
	for op, opName := range []string{"read", "write"} {
		for p := range numPaths {
			// No zero-copy WRITE, no spliced READ: those count as buffered.
			q := p
			if op == 0 && p == PathSpliced || op == 1 && p == PathZeroCopy {
				q = PathBuffered
			}
			s.bytes[op][p] = n.shareBytes.WithLabelValues(name, opName, pathNames[q])
		}
	}
	n.shares[name] = s
	return s
}

// Request records a request's time on the share.
func (s *Share) Request(d time.Duration) {
	if s != nil {
		s.dur.Observe(d.Seconds())
	}
}

// Read and Written record data moved by path.
func (s *Share) Read(p IOPath, n int) {
	if s != nil && n > 0 {
		s.bytes[0][p].Add(float64(n))
	}
}

func (s *Share) Written(p IOPath, n int) {
	if s != nil && n > 0 {
		s.bytes[1][p].Add(float64(n))
	}
}

// factory makes collectors registered in reg.
type factory struct{ reg *prometheus.Registry }

func (f factory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	f.reg.MustRegister(c)
	return c
}

func (f factory) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	f.reg.MustRegister(c)
	return c
}

func (f factory) histogram(name, help string) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: LatencyBuckets})
	f.reg.MustRegister(h)
	return h
}

func (f factory) histogramVec(name, help string, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: LatencyBuckets}, labels)
	f.reg.MustRegister(h)
	return h
}

func (f factory) gaugeFunc(name, help string, fn func() float64) {
	f.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, fn))
}

// dialectName prints a dialect as 2.0.2 … 3.1.1.
func dialectName(d uint16) string {
	switch d {
	case 0x0202:
		return "2.0.2"
	case 0x0210:
		return "2.1"
	case 0x0300:
		return "3.0"
	case 0x0302:
		return "3.0.2"
	case 0x0311:
		return "3.1.1"
	}
	return "0x" + strconv.FormatUint(uint64(d), 16)
}

// CountPeerCalls registers the node-to-node router's own counters: the
// RPCs it sent to other nodes (calls to owners and deliveries) and the
// operations its local tables served without a call.
func (n *Node) CountPeerCalls(sent, local func() uint64) {
	if n == nil {
		return
	}
	n.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "smbcluster_peer_rpcs_sent_total", Help: "RPCs this node sent to other nodes: calls to owners and deliveries (breaks, lock notices, watches, changes)."}, func() float64 { return float64(sent()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "smbcluster_peer_local_ops_total", Help: "Per-file state operations served by this node's own tables (the file's shard is its own)."}, func() float64 { return float64(local()) }),
	)
}

// CountBroadcasts registers the mesh's count of the calls its fan-outs
// made (node/mesh Broadcast: one per node asked).
func (n *Node) CountBroadcasts(asked func() uint64) {
	if n == nil {
		return
	}
	n.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "smbcluster_peer_broadcast_calls_total", Help: "Calls this node made asking every other node at once (one per node asked): lease breaks, channel binds, reconnects, directory renames, durable reconnects."}, func() float64 { return float64(asked()) }))
}

// CountDelegations registers the router's admission delegation counters
// (node/peer deleg.go): opens this node admitted under a delegation it
// holds, delegations it granted and recalled as an owner, and
// delegations it returned as a holder.
func (n *Node) CountDelegations(local, granted, recalled, returned func() uint64) {
	if n == nil {
		return
	}
	count := func(event string, f func() uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "smbcluster_peer_delegations_total",
			Help:        "Admission delegations: opens admitted under one this node holds (local), delegations granted and recalled as the files' owner, returned as holder.",
			ConstLabels: prometheus.Labels{"event": event}}, func() float64 { return float64(f()) })
	}
	n.reg.MustRegister(count("local", local), count("granted", granted), count("recalled", recalled), count("returned", returned))
}
