package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Source is what a node holds now, asked at scrape time so that the
// engine keeps no gauges of its own: the server's sessions, channels,
// tree connects and opens, and the live counters of its opens and
// sessions for the top-N tables.
type Source interface {
	// Held fills h.
	Held(h *Held)
	// EachFile calls fn for every live open, with its file's key
	// (share\path) and counters; EachClient for every live session,
	// with its client's key (user@address).
	EachFile(fn func(key string, c *IOCount))
	EachClient(fn func(key string, c *IOCount))
}

// Held is what a node holds at one moment.
type Held struct {
	Sessions     map[Kind]int
	Channels     map[Kind]int
	Trees        map[string]int // by share
	Opens        int
	DurableOpens int // durable opens, connected or waiting for a reconnect
}

// Kind classifies a session or channel: dialect, signing and encryption
// (cipher), each from a small fixed set.
type Kind struct {
	Dialect    uint16
	Signing    string // "required", "optional", "none"
	Encryption string // "none" or the cipher: "aes-128-ccm" …
}

// SetSource sets what the scrapes and snapshots ask for held state.
func (n *Node) SetSource(s Source) {
	if n == nil {
		return
	}
	n.srcMu.Lock()
	n.src = s
	n.srcMu.Unlock()
}

// SetLocks sets how the scrapes count the byte-range locks held and the
// blocking lock requests waiting in the node's lock table.
func (n *Node) SetLocks(held, blocked func() int64) {
	if n == nil {
		return
	}
	n.srcMu.Lock()
	n.locksHeld, n.locksBlocked = held, blocked
	n.srcMu.Unlock()
}

func (n *Node) source() (Source, func() int64, func() int64) {
	n.srcMu.Lock()
	defer n.srcMu.Unlock()
	return n.src, n.locksHeld, n.locksBlocked
}

var (
	descSessions = prometheus.NewDesc("smbcluster_sessions", "Sessions established on the node, by dialect, signing and encryption.", []string{"dialect", "signing", "encryption"}, nil)
	descChannels = prometheus.NewDesc("smbcluster_channels", "Connections bound to sessions (channels), by dialect, signing and encryption.", []string{"dialect", "signing", "encryption"}, nil)
	descTrees    = prometheus.NewDesc("smbcluster_tree_connects", "Tree connects, by share.", []string{"share"}, nil)
	descOpens    = prometheus.NewDesc("smbcluster_open_files", "Opens of files, directories and pipes the node holds.", nil, nil)
	descDurable  = prometheus.NewDesc("smbcluster_durable_opens", "Durable opens, connected or waiting for their client to reconnect.", nil, nil)
	descHeld     = prometheus.NewDesc("smbcluster_locks_held", "Byte-range locks held in the node's lock table (the files whose shards it owns).", nil, nil)
	descBlocked  = prometheus.NewDesc("smbcluster_locks_blocked", "Blocking byte-range lock requests waiting in the node's lock table.", nil, nil)
)

// stateCollector turns the Source's Held into gauges at scrape time.
type stateCollector struct{ n *Node }

func (s stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSessions, descChannels, descTrees, descOpens, descDurable, descHeld, descBlocked} {
		ch <- d
	}
}

func (s stateCollector) Collect(ch chan<- prometheus.Metric) {
	src, held, blocked := s.n.source()
	if held != nil {
		ch <- prometheus.MustNewConstMetric(descHeld, prometheus.GaugeValue, float64(held()))
		ch <- prometheus.MustNewConstMetric(descBlocked, prometheus.GaugeValue, float64(blocked()))
	}
	if src == nil {
		return
	}
	var h Held
	src.Held(&h)
	for k, v := range h.Sessions {
		ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(v), dialectName(k.Dialect), k.Signing, k.Encryption)
	}
	for k, v := range h.Channels {
		ch <- prometheus.MustNewConstMetric(descChannels, prometheus.GaugeValue, float64(v), dialectName(k.Dialect), k.Signing, k.Encryption)
	}
	for share, v := range h.Trees {
		ch <- prometheus.MustNewConstMetric(descTrees, prometheus.GaugeValue, float64(v), share)
	}
	ch <- prometheus.MustNewConstMetric(descOpens, prometheus.GaugeValue, float64(h.Opens))
	ch <- prometheus.MustNewConstMetric(descDurable, prometheus.GaugeValue, float64(h.DurableOpens))
}
