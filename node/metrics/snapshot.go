package metrics

import (
	"math"
	"slices"

	dto "github.com/prometheus/client_model/go"
)

// Snapshot is a node's cumulative counters at one moment, for its stats
// endpoint: smbctl top makes rates and percentiles from two of them.
type Snapshot struct {
	Total   Traffic
	Shares  map[string]*Traffic
	Files   []Entry // the hottest files, share\path
	Clients []Entry // the busiest clients, user@address
}

// Traffic is requests, data and a latency histogram.
type Traffic struct {
	Requests, BytesRead, BytesWritten uint64
	// Bounds are the histogram's upper bounds (LatencyBuckets), Counts
	// the cumulative count of requests at or under each.
	Bounds []float64
	Counts []uint64
}

// Snapshot returns the node's counters now, with the top files and
// clients, n of each.
func (n *Node) Snapshot(top int) (*Snapshot, error) {
	fams, err := n.reg.Gather()
	if err != nil {
		return nil, err
	}
	s := &Snapshot{Shares: map[string]*Traffic{}}
	share := func(name string) *Traffic {
		t := s.Shares[name]
		if t == nil {
			t = &Traffic{}
			s.Shares[name] = t
		}
		return t
	}
	for _, f := range fams {
		switch f.GetName() {
		case "smbcluster_smb_request_duration_seconds":
			for _, m := range f.Metric {
				s.Total.addHistogram(m.Histogram)
			}
		case "smbcluster_share_request_duration_seconds":
			for _, m := range f.Metric {
				share(label(m, "share")).addHistogram(m.Histogram)
			}
		case "smbcluster_share_bytes_total":
			for _, m := range f.Metric {
				v := uint64(m.Counter.GetValue())
				t := share(label(m, "share"))
				if label(m, "op") == "read" {
					t.BytesRead += v
					s.Total.BytesRead += v
				} else {
					t.BytesWritten += v
					s.Total.BytesWritten += v
				}
			}
		}
	}
	src, _, _ := n.source()
	var files, clients func(func(string, *IOCount))
	if src != nil {
		files, clients = src.EachFile, src.EachClient
	}
	s.Files = topEntries(n.files.merged(files), top)
	s.Clients = topEntries(n.clients.merged(clients), top)
	return s, nil
}

// addHistogram adds h's counts to t.
func (t *Traffic) addHistogram(h *dto.Histogram) {
	t.Requests += h.GetSampleCount()
	if t.Bounds == nil {
		for _, b := range h.Bucket {
			if !math.IsInf(b.GetUpperBound(), 1) {
				t.Bounds = append(t.Bounds, b.GetUpperBound())
			}
		}
		t.Counts = make([]uint64, len(t.Bounds))
	}
	for _, b := range h.Bucket {
		if i := slices.Index(t.Bounds, b.GetUpperBound()); i >= 0 {
			t.Counts[i] += b.GetCumulativeCount()
		}
	}
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
